// Package tasks serves the tasks extension (io.modelcontextprotocol/tasks)
// on a stateless server, through its seams (see Extension): a tools/call
// of a tool with a TaskSupport becomes a task when its client declares
// the extension, answered at once with the task's handle; tasks/get,
// tasks/update and tasks/cancel are the extension's own methods; a worker
// runs each task's handler. It keeps the tasks in a DynamoDB store shared
// by every instance or a memory store for local runs, and hands each to
// a worker: on Lambda an asynchronous invocation of the function itself
// (Lambda.Dispatch as Options.Dispatch), else a goroutine of this process.
//
// A task is one record, written whole and replaced only when its version
// is still the one its writer read: every transition (a worker taking the
// task, its outcome, an input round, a cancellation) is decided here and
// fenced by that check, so two workers never both
// run a task and a cancellation racing a completion ends in exactly one
// of them. Tasks expire at their TTL (DynamoDB's TTL attribute deletes
// them later; a read treats them as gone at once).
//
// Both stores keep a record at its raw size: raw JSON and binary members
// as they are, never escaped or re-encoded, so that the server's bounds
// on a record (MaxRecordBytes, on its StoredSize) are the
// bounds of what is stored. The memory store is bounded by count and by
// bytes, and fails closed (ErrFull) rather than drop a live task.
package tasks
