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
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/canon"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Options configure a Guard.
type Options struct {
	// LeaseMargin is added to how long the call may run to make the
	// lease: IdempotentCall.Lease (the tool's MaxDuration, or less when
	// the request's deadline is nearer), or else the request's deadline. A
	// claim whose handler can no longer be running lapses soon after.
	// Default 5s.
	LeaseMargin time.Duration
	// MaxLease caps a lease, and is the lease of a call that states no
	// Lease and whose request has no deadline. Default 15 minutes,
	// Lambda's longest run.
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

// Guard implements stateless.Idempotency over a Store.
type Guard struct {
	store Store
	opts  Options
}

// New returns a Guard that keeps its claims in store.
func New(store Store, opts *Options) *Guard { return &Guard{store: store, opts: opts.withDefaults()} }

var _ stateless.Idempotency = (*Guard)(nil)

// Begin implements stateless.Idempotency.
func (g *Guard) Begin(ctx context.Context, c *stateless.IdempotentCall) (json.RawMessage, stateless.Ticket, *mcperr.Error) {
	args, err := canon.Append(nil, c.Arguments)
	if err != nil {
		return nil, nil, mcperr.Wrap(mcperr.MalformedParams, err)
	}
	key := c.Key
	if key == "" {
		// Deduplicated by arguments: the arguments are the key.
		d := sha256.Sum256(args)
		key = "args:" + hex.EncodeToString(d[:])
	}
	now := g.opts.Now()
	claim := Claim{
		Key:         ClaimKey(c.Principal, c.Tool, key),
		Owner:       newOwner(),
		Fingerprint: fingerprint(c.Tool, args),
		LeaseUntil:  g.lease(ctx, now, c.Lease),
		ExpiresAt:   now.Add(g.opts.Retention),
	}
	taken, holder, err := g.store.Claim(ctx, claim, now)
	switch {
	case err != nil:
		return nil, nil, mcperr.NewRetryable(mcperr.StoreUnavailable, time.Second, err)
	case taken:
		return nil, &ticket{g: g, key: claim.Key, owner: claim.Owner}, nil
	case holder.Fingerprint != claim.Fingerprint:
		return nil, nil, mcperr.New(mcperr.IdempotencyConflict)
	case holder.Status == Completed && holder.Oversize:
		return nil, nil, mcperr.New(mcperr.ReplayUnavailable)
	case holder.Status == Completed:
		res, err := inflate(holder.Response)
		if err != nil {
			return nil, nil, mcperr.Wrap(mcperr.Internal, fmt.Errorf("stored result of claim %s: %w", claim.Key, err))
		}
		return res, nil, nil
	}
	after := holder.LeaseUntil.Sub(now)
	if after < 100*time.Millisecond {
		after = 100 * time.Millisecond
	}
	return nil, nil, mcperr.NewRetryable(mcperr.DuplicateInFlight, after, nil)
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
		if l := d.Add(g.opts.LeaseMargin); l.Before(limit) {
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

// ticket finishes one claim.
type ticket struct {
	g          *Guard
	key, owner string
}

// compressAbove is the size from which a stored result is compressed.
const compressAbove = 1024

func (t *ticket) Complete(ctx context.Context, result []byte) error {
	stored, oversize, err := t.g.deflate(result)
	if err != nil {
		return err
	}
	return t.g.store.Complete(ctx, t.key, t.owner, stored, oversize, t.g.opts.Now().Add(t.g.opts.Retention))
}

func (t *ticket) Release(ctx context.Context) error {
	return t.g.store.Release(ctx, t.key, t.owner)
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

var _ stateless.Redeemer = (*Guard)(nil)

// Redeem implements stateless.Redeemer with the claims of the Store: a
// redemption is a claim on "redeem#"+id, in progress under a lease (the
// request's deadline plus LeaseMargin, capped by MaxLease) while its call
// runs, then completed (kept until until) or released. A live claim on
// the id, in progress or completed, refuses it (nil).
func (g *Guard) Redeem(ctx context.Context, id string, until time.Time) (stateless.Redemption, error) {
	now := g.opts.Now()
	lease := now.Add(g.opts.MaxLease)
	if d, ok := ctx.Deadline(); ok {
		if l := d.Add(g.opts.LeaseMargin); l.Before(lease) {
			lease = l
		}
	}
	if lease.After(until) {
		lease = until
	}
	c := Claim{Key: "redeem#" + id, Owner: newOwner(), Fingerprint: "redeem", LeaseUntil: lease, ExpiresAt: until}
	taken, _, err := g.store.Claim(ctx, c, now)
	if err != nil || !taken {
		return nil, err
	}
	return &redemption{store: g.store, key: c.Key, owner: c.Owner, until: until}, nil
}

// redemption settles one redemption claim.
type redemption struct {
	store      Store
	key, owner string
	until      time.Time
}

func (r *redemption) Complete(ctx context.Context) error {
	return r.store.Complete(ctx, r.key, r.owner, nil, false, r.until)
}

func (r *redemption) Release(ctx context.Context) error {
	return r.store.Release(ctx, r.key, r.owner)
}
