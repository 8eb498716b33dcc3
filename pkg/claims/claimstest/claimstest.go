// Package claimstest is the contract every claims.Store must meet. One
// suite runs against the in-memory store and against DynamoDB (Local in
// tests), so that both have exactly the same semantics.
package claimstest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

// Run runs the contract against stores made by newStore; each test gets a
// fresh store (or one whose keys do not collide with other tests'). A
// store that is a claims.Committer meets Commit's contract too.
func Run(t *testing.T, newStore func(t *testing.T) claims.Store) {
	t0 := time.Unix(1_900_000_000, 0)
	ctx := context.Background()
	var seq atomic.Int64
	key := func() string { return fmt.Sprintf("claim#contract-%d-%d", time.Now().UnixNano(), seq.Add(1)) }
	claim := func(k, owner string, now time.Time) claims.Claim {
		return claims.Claim{Key: k, Owner: owner, Fingerprint: "fp-" + k, LeaseUntil: now.Add(30 * time.Second), ExpiresAt: now.Add(time.Hour)}
	}

	t.Run("first claim is taken, a second sees the holder", func(t *testing.T) {
		s, k := newStore(t), key()
		taken, holder, err := s.Claim(ctx, claim(k, "a", t0), t0)
		if err != nil || !taken || holder != nil {
			t.Fatalf("first: %v %v %v", taken, holder, err)
		}
		taken, holder, err = s.Claim(ctx, claim(k, "b", t0), t0.Add(time.Second))
		if err != nil || taken {
			t.Fatalf("second: %v %v", taken, err)
		}
		if holder.Owner != "a" || holder.Status != claims.StatusInProgress || holder.Fingerprint != "fp-"+k ||
			holder.LeaseUntil.UnixMilli() != t0.Add(30*time.Second).UnixMilli() {
			t.Errorf("holder %+v", holder)
		}
	})

	t.Run("completed claims replay their response", func(t *testing.T) {
		s, k := newStore(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		if err := s.Complete(ctx, k, "a", []byte(`{"ok":true}`), false, t0.Add(2*time.Hour)); err != nil {
			t.Fatal(err)
		}
		// Long after the lease: a completed record still holds the key.
		_, holder, err := s.Claim(ctx, claim(k, "b", t0), t0.Add(time.Hour))
		if err != nil || holder == nil || holder.Status != claims.StatusCompleted || string(holder.Response) != `{"ok":true}` || holder.Oversize {
			t.Fatalf("holder %+v %v", holder, err)
		}
	})

	t.Run("oversize completion keeps no response", func(t *testing.T) {
		s, k := newStore(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		if err := s.Complete(ctx, k, "a", nil, true, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, holder, err := s.Claim(ctx, claim(k, "b", t0), t0)
		if err != nil || holder == nil || !holder.Oversize || holder.Response != nil || holder.Status != claims.StatusCompleted {
			t.Fatalf("holder %+v %v", holder, err)
		}
	})

	t.Run("a claim retried by its owner is taken", func(t *testing.T) {
		s, k := newStore(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		mustTake(t, s, claim(k, "a", t0), t0)
		if taken, holder, err := s.Claim(ctx, claim(k, "b", t0), t0); taken || err != nil || holder.Owner != "a" {
			t.Errorf("another caller: taken %v, holder %+v, %v", taken, holder, err)
		}
		if err := s.Complete(ctx, k, "a", []byte(`{}`), false, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if taken, _, err := s.Claim(ctx, claim(k, "a", t0), t0); taken || err != nil {
			t.Errorf("the owner after completing: taken %v, %v", taken, err)
		}
	})

	t.Run("only the owner completes or releases", func(t *testing.T) {
		s, k := newStore(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		if err := s.Complete(ctx, k, "b", []byte(`{}`), false, t0.Add(time.Hour)); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("complete by another: %v", err)
		}
		if err := s.Release(ctx, k, "b"); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("release by another: %v", err)
		}
		if err := s.Release(ctx, k, "a"); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, k, "a"); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("second release: %v", err)
		}
		mustTake(t, s, claim(k, "c", t0), t0)
		if err := s.Complete(ctx, k, "c", []byte(`{}`), false, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		if err := s.Release(ctx, k, "c"); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("release after completion: %v", err)
		}
		// A completion retried by its owner (its first answer was lost)
		// succeeds, and the stored result is the completed call's.
		if err := s.Complete(ctx, k, "c", []byte(`{}`), false, t0.Add(time.Hour)); err != nil {
			t.Errorf("completion retried by its owner: %v", err)
		}
		if err := s.Complete(ctx, k, "b", []byte(`{}`), false, t0.Add(time.Hour)); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("completion by another after completion: %v", err)
		}
		_, holder, err := s.Claim(ctx, claim(k, "d", t0), t0)
		if err != nil || holder == nil || holder.Status != claims.StatusCompleted || string(holder.Response) != `{}` || holder.Owner != "c" {
			t.Errorf("after the retried completion: %+v %v", holder, err)
		}
	})

	t.Run("a lapsed lease is taken over and the late owner is fenced", func(t *testing.T) {
		s, k := newStore(t), key()
		c := claim(k, "a", t0)
		c.LeaseUntil = t0.Add(time.Second)
		mustTake(t, s, c, t0)
		// Exactly at the lease end the claim is free.
		taken, _, err := s.Claim(ctx, claim(k, "b", t0), t0.Add(time.Second))
		if err != nil || !taken {
			t.Fatalf("takeover: %v %v", taken, err)
		}
		if err := s.Complete(ctx, k, "a", []byte(`{"stale":true}`), false, t0.Add(time.Hour)); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("late completion: %v", err)
		}
		if err := s.Release(ctx, k, "a"); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("late release: %v", err)
		}
		if err := s.Complete(ctx, k, "b", []byte(`{"fresh":true}`), false, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
		_, holder, _ := s.Claim(ctx, claim(k, "c", t0), t0.Add(2*time.Second))
		if holder == nil || string(holder.Response) != `{"fresh":true}` {
			t.Errorf("holder %+v", holder)
		}
	})

	t.Run("an expired record no longer holds the key", func(t *testing.T) {
		s, k := newStore(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		if err := s.Complete(ctx, k, "a", []byte(`{}`), false, t0.Add(10*time.Second)); err != nil {
			t.Fatal(err)
		}
		taken, _, err := s.Claim(ctx, claim(k, "b", t0), t0.Add(10*time.Second))
		if err != nil || !taken {
			t.Fatalf("after expiry: %v %v", taken, err)
		}
	})

	t.Run("concurrent claims: exactly one is taken", func(t *testing.T) {
		s, k := newStore(t), key()
		const n = 16
		var wg sync.WaitGroup
		var won atomic.Int32
		errs := make(chan error, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				taken, holder, err := s.Claim(ctx, claim(k, fmt.Sprint("owner-", i), t0), t0)
				if err != nil {
					errs <- err
					return
				}
				if taken {
					won.Add(1)
				} else if holder == nil {
					errs <- errors.New("not taken and no holder")
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if won.Load() != 1 {
			t.Errorf("%d claims taken", won.Load())
		}
	})

	commitContract(t, newStore, t0, key, claim)

	t.Run("a cancelled request fails closed", func(t *testing.T) {
		s, k := newStore(t), key()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.Claim(cctx, claim(k, "a", t0), t0); !errors.Is(err, claims.ErrUnavailable) {
			t.Errorf("claim: %v", err)
		}
		if err := s.Complete(cctx, k, "a", nil, false, t0); !errors.Is(err, claims.ErrUnavailable) {
			t.Errorf("complete: %v", err)
		}
		if err := s.Release(cctx, k, "a"); !errors.Is(err, claims.ErrUnavailable) {
			t.Errorf("release: %v", err)
		}
	})
}

// commitContract is the contract of a Committer's Commit, with no writes
// (the writes' all-or-nothing is its store's own test: they are DynamoDB
// items for one, changes in memory for the other): the claim's rule, the
// holder returned, a retry of a commit that was made.
func commitContract(t *testing.T, newStore func(t *testing.T) claims.Store, t0 time.Time, key func() string,
	claim func(k, owner string, now time.Time) claims.Claim) {
	ctx := context.Background()
	committer := func(t *testing.T) claims.Committer {
		c, ok := newStore(t).(claims.Committer)
		if !ok {
			t.Skip("not a Committer")
		}
		return c
	}
	held := func(t *testing.T, err error) *claims.Record {
		t.Helper()
		var h *claims.HeldError
		if !errors.As(err, &h) {
			t.Fatalf("want a *claims.HeldError, got %v", err)
		}
		return h.Holder
	}

	t.Run("commit takes a free key completed, and replays it", func(t *testing.T) {
		s, k := committer(t), key()
		if err := s.Commit(ctx, "tok-a", claim(k, "a", t0), []byte(`{"n":1}`), false, nil, t0); err != nil {
			t.Fatal(err)
		}
		// A retry of the same commit, its answer lost: made already.
		if err := s.Commit(ctx, "tok-a", claim(k, "a", t0), []byte(`{"n":1}`), false, nil, t0); err != nil {
			t.Fatalf("the retry: %v", err)
		}
		h := held(t, s.Commit(ctx, "tok-b", claim(k, "b", t0), []byte(`{"n":2}`), false, nil, t0.Add(time.Minute)))
		if h.Owner != "a" || h.Status != claims.StatusCompleted || string(h.Response) != `{"n":1}` || h.Fingerprint != "fp-"+k || h.Oversize {
			t.Errorf("holder %+v", h)
		}
		// A claim sees the same record.
		if taken, h, err := s.Claim(ctx, claim(k, "c", t0), t0.Add(time.Minute)); taken || err != nil || h.Owner != "a" || string(h.Response) != `{"n":1}` {
			t.Errorf("a claim after the commit: taken %v, holder %+v, %v", taken, h, err)
		}
	})

	t.Run("commit is refused by a live claim, takes a lapsed or expired one", func(t *testing.T) {
		s, k := committer(t), key()
		mustTake(t, s, claim(k, "a", t0), t0)
		if h := held(t, s.Commit(ctx, "tok-b", claim(k, "b", t0), []byte(`{}`), false, nil, t0.Add(time.Second))); h.Status != claims.StatusInProgress || h.Owner != "a" ||
			h.LeaseUntil.UnixMilli() != t0.Add(30*time.Second).UnixMilli() {
			t.Errorf("holder %+v", h)
		}
		// The lease lapsed: the key is free.
		late := t0.Add(31 * time.Second)
		if err := s.Commit(ctx, "tok-b", claim(k, "b", late), []byte(`{"b":1}`), false, nil, late); err != nil {
			t.Fatalf("after the lease: %v", err)
		}
		if err := s.Complete(ctx, k, "a", []byte(`{"a":1}`), false, t0.Add(time.Hour)); !errors.Is(err, claims.ErrNotOwner) {
			t.Errorf("the late owner's completion: %v", err)
		}
		// Expired: free again, though the table's TTL has not deleted it.
		expired := t0.Add(2 * time.Hour)
		if err := s.Commit(ctx, "tok-c", claim(k, "c", expired), []byte(`{"c":1}`), false, nil, expired); err != nil {
			t.Fatalf("after the expiry: %v", err)
		}
		if _, h, _ := s.Claim(ctx, claim(k, "d", expired), expired); h == nil || h.Owner != "c" {
			t.Errorf("holder %+v", h)
		}
	})

	t.Run("an oversize commit keeps no response", func(t *testing.T) {
		s, k := committer(t), key()
		if err := s.Commit(ctx, "tok-a", claim(k, "a", t0), nil, true, nil, t0); err != nil {
			t.Fatal(err)
		}
		if h := held(t, s.Commit(ctx, "tok-b", claim(k, "b", t0), nil, false, nil, t0)); !h.Oversize || h.Response != nil || h.Status != claims.StatusCompleted {
			t.Errorf("holder %+v", h)
		}
	})

	t.Run("concurrent commits: exactly one is made, the others see it", func(t *testing.T) {
		s, k := committer(t), key()
		var made atomic.Int32
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for i := range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				owner := fmt.Sprint("racer-", i)
				err := s.Commit(ctx, "tok-"+owner, claim(k, owner, t0), []byte(`{"by":"`+owner+`"}`), false, nil, t0)
				var h *claims.HeldError
				switch {
				case err == nil:
					made.Add(1)
				case errors.As(err, &h) && h.Holder.Status == claims.StatusCompleted && string(h.Holder.Response) == `{"by":"`+h.Holder.Owner+`"}`:
				case errors.Is(err, claims.ErrUnavailable):
					// A transaction conflict: the caller retries.
				default:
					errs <- err
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if made.Load() != 1 {
			t.Errorf("%d commits made", made.Load())
		}
	})

	t.Run("a cancelled commit fails closed", func(t *testing.T) {
		s, k := committer(t), key()
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Commit(cctx, "tok", claim(k, "a", t0), nil, false, nil, t0); !errors.Is(err, claims.ErrUnavailable) {
			t.Errorf("commit: %v", err)
		}
	})
}

func mustTake(t *testing.T, s claims.Store, c claims.Claim, now time.Time) {
	t.Helper()
	taken, holder, err := s.Claim(context.Background(), c, now)
	if err != nil || !taken {
		t.Fatalf("claim %s: taken=%v holder=%+v err=%v", c.Key, taken, holder, err)
	}
}
