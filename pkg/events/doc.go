// Package events keeps the event log of an endpoint's listen streams
// (subscriptions/listen): the [stateless.EventLog] through which an event
// published on one instance (a resource updated, a tool list changed, a
// task's status) reaches a listen stream held open on another. Lambda
// runs each request on whichever instance is free, so the instance that
// makes a change is rarely the one holding its listener's stream; the
// log is how they meet.
//
// [DynamoDB] keeps the log in a table shaped as template.yaml's claims
// table (string partition key "pk", string sort key "sk", TTL attribute
// "expires_at"), beside the claims, tasks and notes, with keys of its own:
//
//	pk          S  event#<first 22 characters of base64url(sha256(topic))>
//	               (of sha256(scope, NUL, topic) when the log has a Scope)
//	sk          S  <At in Unix nanoseconds, 20 digits>#<ID>
//	topic       S  the topic itself (the hash bounds the key; this guards against a collision)
//	scope       S  the log's Scope, only when set (guarded as the topic is)
//	id, method  S
//	owner       S  only when set
//	params      S  the params object, only when there are params
//	at          N  At in Unix nanoseconds
//	expires_at  N  epoch seconds: At plus the TTL, the table's TTL attribute
//
//	pk          S  catalog#<first 22 characters of base64url(sha256(scope))>
//	sk          S  "catalog"             one item per scope (RecordCatalog)
//	digest_<name> S  the digest of the catalog name recorded last; no expiry
//
// A Scope separates the endpoints that share a table (the deployed
// function and the conformance fixture share the claims table): neither
// reads the other's events or records over its catalogs.
//
// A topic is one partition, its events in the order of their At, so a
// read is one Query from a time on. The prefixes "event#" and "catalog#"
// of partition keys are this package's: nothing else may write under
// them.
//
// Reads are eventually consistent, at half the cost of strongly
// consistent ones: an event appended a moment ago may be missing from a
// read, and so may an event whose writer's clock lags the reader's. A
// listen stream therefore reads each time from a little before its last
// read (stateless.ListenOptions.LookBack), and suppresses by ID what it
// already sent. Delivery is at least once: an Append that failed part
// way, and is retried, records its events again, under the same keys
// when At and ID are the same and as further items otherwise, and the
// reader drops the duplicate.
//
// Events are kept for a TTL (default [DefaultTTL]) after their At. A log
// of notices that something changed needs no history beyond what an open
// stream may still read (a stream lasts at most 15 minutes); DynamoDB
// deletes expired items lazily, and reads leave out those not yet gone.
//
// Cost: an Append is one BatchWriteItem per 25 events (1 WCU per event of
// up to 1 KiB), a Read one Query (eventually consistent: 0.5 RCU per
// 4 KiB read, the items' sizes summed), a RecordCatalog one UpdateItem
// whatever the number of catalogs.
//
// [Memory] is the same log in one process: for tests, local mode, and
// several stateless.Servers in one process standing for the instances of
// a deploy. Both logs take the same events and answer the same reads (the
// contract test runs against both).
package events
