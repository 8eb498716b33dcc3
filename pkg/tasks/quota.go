package tasks

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
)

// ErrLiveTasks is wrapped in the error of creating a task whose caller
// already holds Options.LiveTasks live tasks: the call is refused
// RateLimited, retryably, and nothing is stored.
var ErrLiveTasks = errors.New("tasks: the caller holds its quota of live tasks")

// liveRetryAfter is the retry-after of a call refused for its live tasks:
// when a slot frees is not known (a task ends when its handler does), so
// the client is told to come back after a few poll intervals.
const liveRetryAfter = 5 * time.Second

// liveLimit is a Store whose live tasks are bounded per caller: each live
// task holds a slot, named by its id, charged to its caller's quota key
// (Record.Quota, else its principal). The slot is taken before the task is
// created and given back by the write that ends it; a task that expires
// without ending holds it until its expiry. Because a slot is a name, a
// write retried after a lost acknowledgement takes or gives nothing
// twice.
//
// The slots are a second record beside the task store, so a worker that
// dies between ending a task and giving its slot back would leave the
// slot held until the task expires. A caller at its quota therefore
// checks its oldest slot against the store before it is refused: a slot
// whose task has ended is given back, and the call goes on; so is one
// whose task is not there, once it was taken longer ago than a create
// takes (a task's slot is taken before its record is stored, so a slot
// just taken has no task yet). That costs one read of the slots and one
// of a task, and only at the quota.
type liveLimit struct {
	Store
	slots ratelimit.Slots
	max   int
	// ttl is the tasks' TTL: a slot lapses at its task's expiry, so it was
	// taken ttl before its lapse.
	ttl time.Duration
	now func() time.Time
}

// createBound is how long after its slot was taken a task's record is
// surely stored or surely never will be: a create is one write within
// its call's request.
const createBound = 2 * time.Minute

func quotaKey(rec *Record) string {
	if rec.Quota != "" {
		return rec.Quota
	}
	return rec.Principal
}

// Create implements Store: a live task takes its caller's slot first.
func (l *liveLimit) Create(ctx context.Context, rec *Record) error {
	if rec.Status.Terminal() {
		return l.Store.Create(ctx, rec)
	}
	key := quotaKey(rec)
	if err := l.take(ctx, key, rec); err != nil {
		return err
	}
	err := l.Store.Create(ctx, rec)
	switch {
	case err == nil:
	case errors.Is(err, ErrExists):
		// The id is a keyed call's, taken by its first try: the slot is
		// that task's while it lives.
		if found, lerr := l.Store.Load(ctx, rec.ID); lerr == nil && found.Status.Terminal() {
			_ = l.slots.Give(ctx, key, rec.ID)
		}
	default:
		// Nothing was stored (or a lost acknowledgement hides a task that
		// was: it is checked against the store when the quota is next met).
		_ = l.slots.Give(context.WithoutCancel(ctx), key, rec.ID)
	}
	return err
}

// take holds rec's slot, reclaiming a stale one at the quota.
func (l *liveLimit) take(ctx context.Context, key string, rec *Record) error {
	err := l.slots.Take(ctx, key, rec.ID, rec.ExpiresAt, l.max)
	if !errors.Is(err, ratelimit.ErrFull) {
		if err != nil {
			return fmt.Errorf("tasks: counting the caller's live tasks: %w", err)
		}
		return nil
	}
	if reclaimed, rerr := l.reclaimOldest(ctx, key); rerr != nil || !reclaimed {
		return fmt.Errorf("%w (%d)", ErrLiveTasks, l.max)
	}
	if err := l.slots.Take(ctx, key, rec.ID, rec.ExpiresAt, l.max); err != nil {
		if errors.Is(err, ratelimit.ErrFull) {
			return fmt.Errorf("%w (%d)", ErrLiveTasks, l.max)
		}
		return fmt.Errorf("tasks: counting the caller's live tasks: %w", err)
	}
	return nil
}

// reclaimOldest gives back key's oldest slot if its task has ended or is
// gone, and reports whether it did.
func (l *liveLimit) reclaimOldest(ctx context.Context, key string) (bool, error) {
	held, err := l.slots.Held(ctx, key)
	if err != nil {
		return false, err
	}
	oldest, first := "", time.Time{}
	for id, until := range held {
		if oldest == "" || until.Before(first) || until.Equal(first) && id < oldest {
			oldest, first = id, until
		}
	}
	if oldest == "" {
		return false, nil
	}
	taken := first.Add(-l.ttl)
	switch rec, err := l.Store.Load(ctx, oldest); {
	case errors.Is(err, ErrNoTask) && taken.Add(createBound).Before(l.now()), err == nil && rec.Status.Terminal():
		return true, l.slots.Give(ctx, key, oldest)
	case err != nil && !errors.Is(err, ErrNoTask):
		return false, err
	}
	return false, nil
}

// Replace implements Store: the write that ends a task gives its slot
// back. It is given back whatever the write's error but a conflict (the
// record is another writer's now, and that writer decides): a write whose
// acknowledgement was lost has landed or will be retried, and giving a
// slot back twice gives it once.
func (l *liveLimit) Replace(ctx context.Context, rec *Record, prev int64) error {
	err := l.Store.Replace(ctx, rec, prev)
	if rec.Status.Terminal() && !errors.Is(err, ErrConflict) {
		// A slot that could not be given back is reclaimed at the quota.
		_ = l.slots.Give(context.WithoutCancel(ctx), quotaKey(rec), rec.ID)
	}
	return err
}
