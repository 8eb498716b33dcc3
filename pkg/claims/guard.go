package claims

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/canon"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Options configure a Guard.
type Options struct {
	// LeaseMargin is added to how long the call may run to make the
	// lease: until the handler's deadline (Execution.Deadline: the tool's
	// MaxDuration, or less when the request's deadline is nearer). A
	// claim whose handler can no longer be running lapses soon after.
	// Default 5s.
	LeaseMargin time.Duration
	// MaxLease caps a lease, and is the lease of a call whose handler has
	// no deadline. Default 15 minutes, Lambda's longest run.
	MaxLease time.Duration
	// Retention is how long a completed call is remembered, and replayed.
	// Default 24 hours.
	Retention time.Duration
	// MaxStored bounds a stored result after compression; a larger one is
	// recorded as completed but not kept. Default 350,000 bytes, inside
	// DynamoDB's 400 KB item limit.
	MaxStored int
	// Now is the clock. Default time.Now.
	Now func() time.Time
	// Changes, when set, records the change events a claimed call's
	// handler notifies (stateless.Call.NotifyResourceUpdated and its kin)
	// in the call's own transaction, with its enlisted writes and its
	// stored result, when the store is a Transactor: a listen stream then
	// hears of every change whose effect was committed, even if the
	// process died right after, and of none whose effect was not. Package
	// events' DynamoDB is one. Without it (or when the writes would
	// exceed MaxEnlisted) the server records them after the call.
	Changes ChangeRecorder
}

// ChangeRecorder turns change events into the DynamoDB writes that record
// them in an event log (package events' DynamoDB.TransactItems), for a
// claimed call's transaction.
type ChangeRecorder interface {
	TransactItems(events []stateless.Event) ([]types.TransactWriteItem, error)
}

func (o *Options) withDefaults() Options {
	var c Options
	if o != nil {
		c = *o
	}
	if c.LeaseMargin <= 0 {
		c.LeaseMargin = 5 * time.Second
	}
	if c.MaxLease <= 0 {
		c.MaxLease = 15 * time.Minute
	}
	if c.Retention <= 0 {
		c.Retention = 24 * time.Hour
	}
	if c.MaxStored <= 0 {
		c.MaxStored = 350_000
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Guard makes idempotency claims and redeems single-use request state
// over a Store, as a stateless interceptor (Interceptor).
type Guard struct {
	store Store
	opts  Options
}

// New returns a Guard that keeps its claims in store.
func New(store Store, opts *Options) *Guard { return &Guard{store: store, opts: opts.withDefaults()} }

// call is a tools/call to claim.
type call struct {
	principal, tool string
	// key is the client's idempotency key, or "" when the tool is
	// deduplicated by its arguments.
	key  string
	args json.RawMessage
	// lease is how long the handler may run from now.
	lease time.Duration
}

// begin claims the call. It returns either a result stored by an earlier
// call with the same key, to replay; or a ticket to finish once the
// handler has answered; or a refusal (in progress, conflict, store
// unavailable), in which case the handler must not run.
func (g *Guard) begin(ctx context.Context, c *call) (json.RawMessage, *ticket, *mcperr.Error) {
	claim, refusal := g.claimFor(ctx, c)
	if refusal != nil {
		return nil, nil, refusal
	}
	now := g.opts.Now()
	taken, holder, err := g.store.Claim(ctx, claim, now)
	switch {
	case err != nil:
		return nil, nil, mcperr.NewRetryable(mcperr.KindStoreUnavailable, time.Second, err)
	case taken:
		return nil, &ticket{g: g, key: claim.Key, owner: claim.Owner}, nil
	}
	res, refusal := g.held(claim, holder, now)
	return res, nil, refusal
}

// claimFor is the claim a call makes: its key (a digest of the principal,
// the tool and the idempotency key, or of the arguments for a tool
// deduplicated by them), a new owner token, the fingerprint of the tool
// and its arguments, its lease and its record's expiry.
func (g *Guard) claimFor(ctx context.Context, c *call) (Claim, *mcperr.Error) {
	args, err := canon.Append(nil, c.args)
	if err != nil {
		return Claim{}, mcperr.Wrap(mcperr.KindMalformedParams, err)
	}
	key := c.key
	if key == "" {
		// Deduplicated by arguments: the arguments are the key.
		d := sha256.Sum256(args)
		key = "args:" + hex.EncodeToString(d[:])
	}
	now := g.opts.Now()
	return Claim{
		Key:         ClaimKey(c.principal, c.tool, key),
		Owner:       newOwner(),
		Fingerprint: fingerprint(c.tool, args),
		LeaseUntil:  g.lease(ctx, now, c.lease),
		ExpiresAt:   now.Add(g.opts.Retention),
	}, nil
}

// held is what a call whose claim found the key held at now is answered:
// the holder's stored result to replay, or a refusal (another request
// with the key, the result too large to have been kept, the holder still
// in progress, with its lease as the retry-after).
func (g *Guard) held(claim Claim, holder *Record, now time.Time) (json.RawMessage, *mcperr.Error) {
	switch {
	case holder.Fingerprint != claim.Fingerprint:
		return nil, mcperr.New(mcperr.KindIdempotencyConflict)
	case holder.Status == StatusCompleted && holder.Oversize:
		return nil, mcperr.New(mcperr.KindReplayUnavailable)
	case holder.Status == StatusCompleted:
		res, err := inflate(holder.Response)
		if err != nil {
			return nil, mcperr.Wrap(mcperr.KindInternal, fmt.Errorf("stored result of claim %s: %w", claim.Key, err))
		}
		return res, nil
	}
	after := holder.LeaseUntil.Sub(now)
	if after < 100*time.Millisecond {
		after = 100 * time.Millisecond
	}
	return nil, mcperr.NewRetryable(mcperr.KindDuplicateInFlight, after, nil)
}

// lease is how long the call may run (run, else until the request's
// deadline) plus the margin, capped by MaxLease.
func (g *Guard) lease(ctx context.Context, now time.Time, run time.Duration) time.Time {
	limit := now.Add(g.opts.MaxLease)
	if run > 0 {
		if l := now.Add(run + g.opts.LeaseMargin); l.Before(limit) {
			return l
		}
		return limit
	}
	if d, ok := ctx.Deadline(); ok {
		if l := now.Add(time.Until(d) + g.opts.LeaseMargin); l.Before(limit) {
			return l
		}
	}
	return limit
}

// ClaimKey is the stored key of a claim: a digest of the principal, the
// tool and the idempotency key, so that one caller's key can never
// collide with another's, and no key text is stored.
func ClaimKey(principal, tool, key string) string {
	h := sha256.New()
	for _, s := range [...]string{principal, tool, key} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	return "claim#" + hex.EncodeToString(h.Sum(nil))
}

func fingerprint(tool string, canonicalArgs []byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%d:%s", len(tool), tool)
	h.Write(canonicalArgs)
	return hex.EncodeToString(h.Sum(nil))
}

func newOwner() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// ticket finishes one claim, with the writes its tool enlisted.
type ticket struct {
	g          *Guard
	key, owner string
	// step is set for a call that commits in one step (onestep.go): its
	// handler runs before anything is claimed.
	step *step

	mu     sync.Mutex
	writes []Write     // enlisted by the tool (EnlistWrites)
	joined *redemption // a single-use state spent with the call
	after  []func()    // OnCommit's, run once the call's result is recorded
	sealed bool        // finishing began: nothing more joins
	// refused is why the call may not commit: a write it enlisted under
	// a reserved key (Reserved).
	refused error
}

// joinRedemption spends rd, a redemption of the same Guard, in the claim's
// transaction, when the store is a Transactor; it reports whether it will.
func (t *ticket) joinRedemption(rd *redemption) bool {
	if _, ok := t.g.store.(Transactor); !ok {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sealed {
		return false
	}
	t.joined = rd
	return true
}

// seal ends enlisting and returns what was enlisted.
func (t *ticket) seal() ([]Write, *redemption) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.sealed = true
	return t.writes, t.joined
}

// committed runs what the tool asked to run once its call's result is
// recorded (OnCommit), once.
func (t *ticket) committed() {
	t.mu.Lock()
	after := t.after
	t.after = nil
	t.mu.Unlock()
	for _, f := range after {
		f()
	}
}

// compressAbove is the size from which a stored result is compressed.
const compressAbove = 1024

// Complete records result, with the enlisted writes and a joined
// redemption in one transaction when there are any, retrying a store that
// fails with backoff until ctx's deadline (the caller sets it to the
// time the invocation has left). Its error wraps
// ErrNotCommitted when enlisted writes were not committed (the
// client must be told to retry), and ErrCompletionLost when the tool's
// effect happened but its result could not be recorded.
func (t *ticket) Complete(ctx context.Context, result []byte) error {
	enlisted, joined := t.seal()
	writes := make([]types.TransactWriteItem, len(enlisted))
	for i, w := range enlisted {
		writes[i] = *w.Item // a claim taken first takes DynamoDB writes only (ticket.takes)
	}
	c := Completion{Key: t.key, Owner: t.owner, ExpiresAt: t.g.opts.Now().Add(t.g.opts.Retention)}
	var err error
	c.Response, c.Oversize, err = t.g.deflate(result)
	if err == nil {
		tx, ok := t.g.store.(Transactor)
		switch {
		case ok && (len(writes) > 0 || joined != nil):
			cs := []Completion{c}
			if joined != nil {
				cs = append(cs, Completion{Key: joined.key, Owner: joined.owner, ExpiresAt: joined.until})
			}
			// The owner token is the transaction's idempotency token: a
			// retry after a lost answer is applied once. When the tool's
			// writes are in it, time is kept to release the claim should
			// it fail.
			pctx, cancel := ctx, context.CancelFunc(func() {})
			if dl, ok := ctx.Deadline(); ok && len(writes) > 0 {
				pctx, cancel = context.WithDeadline(ctx, dl.Add(-releaseReserve))
			}
			err = persist(pctx, func(ctx context.Context) error { return tx.CompleteWith(ctx, t.owner, cs, writes) })
			cancel()
		default:
			err = persist(ctx, func(ctx context.Context) error {
				return t.g.store.Complete(ctx, c.Key, c.Owner, c.Response, c.Oversize, c.ExpiresAt)
			})
		}
	}
	switch {
	case err == nil:
		return nil
	case len(writes) > 0:
		if !errors.Is(err, ErrNotOwner) {
			// Free the key for the client's retry now rather than at the
			// lease's end, with the time that is left. This is safe even
			// if an attempt was committed after all (the claim is then
			// completed, and a release refused) or is still on its way
			// (its fence no longer holds once the claim is gone).
			_ = t.g.store.Release(ctx, t.key, t.owner)
		}
		return fmt.Errorf("%w: claim %s: %w", ErrNotCommitted, t.key, err)
	}
	return fmt.Errorf("%w: claim %s: %w", ErrCompletionLost, t.key, err)
}

// Release gives the claim up, retried as Complete is. A release whose
// first attempt was applied but unanswered finds the claim gone on its
// retry: that is success.
func (t *ticket) Release(ctx context.Context) error {
	t.seal()
	attempts := 0
	err := persist(ctx, func(ctx context.Context) error {
		attempts++
		err := t.g.store.Release(ctx, t.key, t.owner)
		if attempts > 1 && errors.Is(err, ErrNotOwner) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("releasing claim %s: %w", t.key, err)
	}
	return nil
}

// persist runs write until it succeeds, fails for a reason a retry cannot
// change, or ctx has no time left for another attempt. Only failures to
// reach the store (ErrUnavailable) are retried, after a random wait that
// doubles from 20 ms up to 1 s; each attempt gets half of the time left
// (at least 250 ms), so that one slow answer leaves room for another
// attempt. Writes retried this way must be idempotent for their owner
// (Store.Complete, Transactor.CompleteWith with its token).
func persist(ctx context.Context, write func(context.Context) error) error {
	for attempt := 0; ; attempt++ {
		actx, cancel := ctx, context.CancelFunc(func() {})
		if dl, ok := ctx.Deadline(); ok {
			actx, cancel = context.WithTimeout(ctx, max(time.Until(dl)/2, minAttempt))
		}
		err := write(actx)
		cancel()
		if err == nil || !errors.Is(err, ErrUnavailable) || !pause(ctx, attempt, maxUndeadlinedAttempts) {
			return err
		}
	}
}

// pause waits backoff(attempt) before the next attempt of a retried write,
// and reports whether there is one: not when ctx ends first, when its
// deadline leaves no time for another attempt (minAttempt after the
// wait), or, without a deadline, after undeadlined attempts.
func pause(ctx context.Context, attempt, undeadlined int) bool {
	wait := backoff(attempt)
	dl, ok := ctx.Deadline()
	if !ok && attempt >= undeadlined || ok && time.Until(dl) < wait+minAttempt {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

const (
	// releaseReserve is the time a commit of enlisted writes leaves for
	// releasing the claim when it fails.
	releaseReserve = 300 * time.Millisecond
	// minAttempt is the least time an attempt of persist is given.
	minAttempt = 250 * time.Millisecond
	// maxUndeadlinedAttempts bounds persist when ctx has no deadline.
	maxUndeadlinedAttempts = 8
)

// backoff is the wait before the retry after attempt: random in the upper
// half of 20 ms doubled per attempt, at most 1 s.
func backoff(attempt int) time.Duration {
	d := min(20*time.Millisecond<<min(attempt, 10), time.Second)
	return d/2 + time.Duration(mrand.Int64N(int64(d/2)+1))
}

// deflate prepares a result for storing: as it is when small, gzipped when
// larger, not at all when even that is over MaxStored.
func (g *Guard) deflate(result []byte) ([]byte, bool, error) {
	if len(result) <= compressAbove {
		return result, false, nil
	}
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	if err != nil {
		return nil, false, err
	}
	if _, err := zw.Write(result); err != nil {
		return nil, false, err
	}
	if err := zw.Close(); err != nil {
		return nil, false, err
	}
	if b.Len() > g.opts.MaxStored {
		return nil, true, nil
	}
	return b.Bytes(), false, nil
}

// maxInflated bounds a stored result once inflated.
const maxInflated = 32 << 20

func inflate(stored []byte) (json.RawMessage, error) {
	if len(stored) >= 2 && stored[0] == 0x1f && stored[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(stored))
		if err != nil {
			return nil, err
		}
		b, err := io.ReadAll(io.LimitReader(zr, maxInflated+1))
		if err != nil {
			return nil, err
		}
		if len(b) > maxInflated {
			return nil, errors.New("stored result inflates beyond the bound")
		}
		stored = b
	}
	if !json.Valid(stored) {
		return nil, errors.New("stored result is not JSON")
	}
	return stored, nil
}

// redeem starts redeeming the single-use state id with the claims of the
// Store: a redemption is a claim on "redeem#"+id, in progress under a
// lease (ctx's deadline — the handler's — plus LeaseMargin, capped by
// MaxLease, as a call's claim) while its call runs, then completed (kept
// until until) or released. A completed claim on the id refuses it (nil);
// one in progress answers *redemptionHeld.
func (g *Guard) redeem(ctx context.Context, id string, until time.Time) (*redemption, error) {
	now := g.opts.Now()
	lease := now.Add(g.opts.MaxLease)
	if d, ok := ctx.Deadline(); ok {
		// Counted from now on the Guard's clock, as a claim's lease is.
		if l := now.Add(time.Until(d) + g.opts.LeaseMargin); l.Before(lease) {
			lease = l
		}
	}
	if lease.After(until) {
		lease = until
	}
	c := Claim{Key: "redeem#" + id, Owner: newOwner(), Fingerprint: "redeem", LeaseUntil: lease, ExpiresAt: until}
	taken, holder, err := g.store.Claim(ctx, c, now)
	switch {
	case err != nil:
		return nil, err
	case !taken && holder.Status == StatusInProgress:
		return nil, &redemptionHeld{retryAfter: holder.LeaseUntil.Sub(now)}
	case !taken:
		return nil, nil // spent
	}
	return &redemption{store: g.store, key: c.Key, owner: c.Owner, until: until}, nil
}

// redemption settles one redemption claim.
type redemption struct {
	store      Store
	key, owner string
	until      time.Time
}

// Complete spends the state, retried as a ticket's completion is.
func (r *redemption) Complete(ctx context.Context) error {
	return persist(ctx, func(ctx context.Context) error { return r.store.Complete(ctx, r.key, r.owner, nil, false, r.until) })
}

// Release gives the state back, retried as a ticket's release is.
func (r *redemption) Release(ctx context.Context) error {
	attempts := 0
	return persist(ctx, func(ctx context.Context) error {
		attempts++
		if err := r.store.Release(ctx, r.key, r.owner); err != nil && !(attempts > 1 && errors.Is(err, ErrNotOwner)) {
			return err
		}
		return nil
	})
}

// SpendOnce spends name once: it reports true the first time, and false
// for as long as the spent record is kept (until until), for a value
// that must be used once however many instances see it — the
// authorization proxy's codes (package auth's Spender). It is a claim on
// "once#"+name under a fresh owner whose lease lasts until until: one
// conditional write, so that of two instances spending one name at the
// same moment exactly one wins, and nobody takes the claim over before it
// is forgotten. An error is a store that could not say: the caller fails
// closed.
func (g *Guard) SpendOnce(ctx context.Context, name string, until time.Time) (bool, error) {
	now := g.opts.Now()
	c := Claim{Key: "once#" + name, Owner: newOwner(), Fingerprint: "once", LeaseUntil: until, ExpiresAt: until}
	taken, _, err := g.store.Claim(ctx, c, now)
	if err != nil {
		return false, fmt.Errorf("claims: spending a single-use name: %w", err)
	}
	return taken, nil
}
