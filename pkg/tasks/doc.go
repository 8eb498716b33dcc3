// Package tasks keeps the tasks of the tasks extension
// (io.modelcontextprotocol/tasks) and hands them to workers: a DynamoDB
// store shared by every instance, a memory store for local runs, and a
// dispatcher that runs each task in an asynchronous invocation of the
// Lambda function itself.
//
// A task is one record, written whole and replaced only when its version
// is still the one its writer read: every transition (a worker taking the
// task, its outcome, an input round, a cancellation) is decided by
// package stateless and fenced by that check, so two workers never both
// run a task and a cancellation racing a completion ends in exactly one
// of them. Tasks expire at their TTL (DynamoDB's TTL attribute deletes
// them later; a read treats them as gone at once).
//
// Both stores keep a record at its raw size: raw JSON and binary members
// as they are, never escaped or re-encoded, so that the server's bounds
// on a record (stateless.MaxTaskRecordBytes, on its StoredSize) are the
// bounds of what is stored. The memory store is bounded by count and by
// bytes, and fails closed (ErrFull) rather than drop a live task.
package tasks
