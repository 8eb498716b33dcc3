// Package claims makes side-effecting MCP tool calls exactly-once across
// retries, across Lambda instances and across crashes, with idempotency
// claims held in a shared store by conditional writes.
//
// A client that retries a tools/call — a lost stream, a timeout, a double
// click — sends the same idempotency key (params.idempotencyKey, as
// proposed for MCP in SEP-3182, or an Idempotency-Key header), or calls a
// tool that declares its arguments to be its identity. The first call
// claims the key: one conditional write that succeeds only if no live
// claim or completed record holds it. It runs the tool and completes the
// claim with the result, conditional on still owning it. Every other call
// with the key gets, at once:
//
//   - the stored result, marked as a replay, once the first completed;
//   - a retryable "in progress" refusal, with a retry-after hint, while
//     the first one's lease is live;
//   - a conflict refusal, if its tool or arguments differ from the first;
//   - the claim, if the first one's lease lapsed without completing (its
//     caller crashed or timed out): the tool runs again.
//
// If the store cannot be reached, the call fails closed: a retryable
// refusal, and the tool does not run. Read-only tools make no claims.
//
// A completion that fails to reach the store is retried with backoff in
// the time the invocation has left; completing is idempotent for the
// claim's owner, so a retry after a lost answer finds its own record.
//
// A tool whose side effect is a DynamoDB write closes the last gap by
// enlisting the write in its claim (Enlist): the write, the stored result
// and the claim's completion commit in one transaction, or not at all, so
// the key executes exactly once even if the process dies at any point.
// For other side effects one gap stays: a caller that dies after the
// effect but before completing (or cannot complete in time) leaves a
// claim whose lease lapses, and a retry after that runs the tool again. A
// tool closes it by making its effect conditional on something the effect
// itself changes (see docs/idempotency.md).
//
// A tool that has no effect but its enlisted writes says so
// (stateless.Tool.EnlistedEffectsOnly), and its keyed calls commit in one
// step: the handler runs first, with nothing claimed, and the claim, the
// writes and the stored result are then one conditional write (a
// Committer's Commit) — one DynamoDB request for a first call and one for
// a replay, whose failed condition returns the record it replays. A
// write's own condition that fails then is answered as the tool failure
// the write names (Write.OnConditionFailed), with nothing written, and a
// replay runs the handler but commits nothing and records nothing
// (OnCommit).
//
// Two stores keep the records. DynamoDB shares them between every
// instance and process; its table's TTL forgets expired records, and its
// partition key may stand alone or come with a sort key
// (NewDynamoDBWith). Memory keeps them in one process, for local runs: it
// forgets expired records itself and is bounded (by default 10,000
// records and 32 MiB of stored results); when full of live records it
// refuses new keys as an unreachable table would, rather than forget a
// live one and let its key run twice (see Memory).
package claims

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Status is the state of a claim record.
type Status string

// The statuses.
const (
	StatusInProgress Status = "in_progress"
	StatusCompleted  Status = "completed"
)

// Record is a claim as stored.
type Record struct {
	// Key identifies the claim: a digest of (principal, tool, key).
	Key    string
	Status Status
	// Owner is the token of the caller that holds the claim; only it may
	// complete or release it (fencing).
	Owner string
	// LeaseUntil is when an in-progress claim may be taken over.
	LeaseUntil time.Time
	// Fingerprint is a digest of the tool and its canonical arguments.
	Fingerprint string
	// Response is the stored result, once completed; nil if it was too
	// large to keep (Oversize).
	Response []byte
	Oversize bool
	// ExpiresAt is when the record is forgotten (the table's TTL).
	ExpiresAt time.Time
}

// live reports whether r still holds its key at now: a completed record
// until it expires, an in-progress one until its lease lapses. Expiry
// counts in whole seconds and leases in milliseconds, as DynamoDB stores
// them, so that every store agrees to the instant.
func (r *Record) live(now time.Time) bool {
	if now.Unix() >= r.ExpiresAt.Unix() {
		return false
	}
	return r.Status == StatusCompleted || now.UnixMilli() < r.LeaseUntil.UnixMilli()
}

// Claim is one attempt to take a key.
type Claim struct {
	Key         string
	Owner       string
	Fingerprint string
	LeaseUntil  time.Time
	ExpiresAt   time.Time
}

// Store keeps claim records. Both implementations — DynamoDB and memory —
// pass one contract test suite (claimstest).
type Store interface {
	// Claim takes c.Key for c.Owner, unless a live record holds it. It
	// reports whether the claim was taken; when it was not, the record
	// that holds the key. A claim in progress for c.Owner is taken: the
	// retry of a claim whose answer was lost.
	Claim(ctx context.Context, c Claim, now time.Time) (taken bool, holder *Record, err error)
	// Complete stores the response and marks the claim completed, if
	// owner still holds it; otherwise ErrNotOwner. Completing a claim the
	// owner completed already succeeds: it is the retry of a completion
	// whose answer was lost, and must not be mistaken for a takeover.
	Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error
	// Release deletes an in-progress claim, if owner still holds it;
	// otherwise ErrNotOwner.
	Release(ctx context.Context, key, owner string) error
}

// Transactor is a Store that can complete claims together with other
// writes, all or nothing: DynamoDB, with TransactWriteItems. A Guard uses
// it for the writes a tool enlists in its call's completion (Enlist), and
// to spend a single-use request state in the same transaction.
type Transactor interface {
	Store
	// CompleteWith completes every claim of cs and makes writes, in one
	// transaction whose idempotency token is token (so that its retry
	// after a lost answer is applied once). It returns nil when all of it
	// was committed; ErrNotOwner when a claim is no longer its owner's;
	// an error wrapping ErrWritesRefused when a write's own condition
	// failed; otherwise an error wrapping ErrUnavailable, and then the
	// transaction may or may not have been committed: retry it with the
	// same token and the same items.
	CompleteWith(ctx context.Context, token string, cs []Completion, writes []types.TransactWriteItem) error
}

// Committer is a Store that can take a key and complete it at once, with
// the writes a tool enlisted, in one conditional write: DynamoDB, with
// one TransactWriteItems (one PutItem when nothing is enlisted), and
// Memory. A Guard commits this way the keyed calls of a tool that has no
// effect but its enlisted writes (stateless.Tool.EnlistedEffectsOnly):
// their handler runs before anything is claimed, so a first call costs
// one request and a replay one.
type Committer interface {
	Store
	// Commit records c.Key as completed by c.Owner with response (without
	// it, when oversize) and makes writes, all or nothing, if no live
	// record holds the key at now (the rule of Claim). It returns nil
	// when all of it is committed, by this call or by an earlier attempt
	// of it whose answer was lost (a record completed by c.Owner). When a
	// live record holds the key, nothing is written and the error is a
	// *HeldError with that record; when one of the writes does not meet
	// its condition, a *WriteRefusedError. Otherwise the error wraps
	// ErrUnavailable and the commit may or may not have happened: retry it
	// with the same token and the same arguments, now included (a retry
	// after a lost answer is then applied once).
	Commit(ctx context.Context, token string, c Claim, response []byte, oversize bool, writes []Write, now time.Time) error
}

// HeldError is Committer.Commit's error when a live record holds the key:
// nothing was written. Holder is that record: a completed call to replay,
// another call in progress, or (another fingerprint) a conflict.
type HeldError struct{ Holder *Record }

func (e *HeldError) Error() string {
	return fmt.Sprintf("claims: claim %s is held (%s)", e.Holder.Key, e.Holder.Status)
}

// WriteRefusedError is the error of a commit cancelled because one of the
// tool's enlisted writes did not meet its own condition: nothing was
// written. It wraps ErrWritesRefused, and Err.
type WriteRefusedError struct {
	// Index is the write's among the call's enlisted writes, in the order
	// they were enlisted.
	Index int
	// Err is what an in-memory write's Apply refused with; nil for a
	// DynamoDB write.
	Err error
}

func (e *WriteRefusedError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%v (write %d): %v", ErrWritesRefused, e.Index+1, e.Err)
	}
	return fmt.Sprintf("%v (write %d)", ErrWritesRefused, e.Index+1)
}

func (e *WriteRefusedError) Unwrap() []error {
	if e.Err != nil {
		return []error{ErrWritesRefused, e.Err}
	}
	return []error{ErrWritesRefused}
}

// Completion is one claim to complete in a transaction (Transactor).
type Completion struct {
	Key, Owner string
	Response   []byte
	Oversize   bool
	ExpiresAt  time.Time
}

// ErrWritesRefused is wrapped in the error of a transaction cancelled
// because one of the tool's enlisted writes did not meet its condition
// (the note book was full, the note was gone): nothing was written. The
// error is a *WriteRefusedError, which names the write.
var ErrWritesRefused = errors.New("claims: an enlisted write's condition failed")

// ErrNotCommitted is wrapped in a call's Outcome.Err when the call's
// side effect, enlisted in the claim's completion (Enlist), was not
// committed (or is not known to have been): the tool's result did not
// reach the client, who was told to retry instead. Retried with the same
// key, the call replays the result if the commit did happen after all,
// and runs again if it did not.
var ErrNotCommitted = errors.New("claims: the call's side effect was not committed")

// ErrCompletionLost is wrapped in a call's Outcome.Err when
// the tool ran but its result could not be recorded before the time left
// ran out: the claim stays in progress until its lease ends, and a retry
// after that runs the tool again. The error names the claim's key, a
// digest, never the client's key.
var ErrCompletionLost = errors.New("claims: completion lost")

// ErrNotOwner means the caller's claim lapsed and another caller took it
// over: it must not write the key's record.
var ErrNotOwner = errors.New("claims: the claim is held by another caller")

// ErrUnavailable wraps every failure to reach the store: unreachable,
// throttled past the retries, timed out. Callers fail closed.
var ErrUnavailable = errors.New("claims: store unavailable")

func errorsJoin(errs ...error) error { return errors.Join(errs...) }
