package claims_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims/claimstest"
)

func TestMemoryContract(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) claims.Store { return claims.NewMemory() })
}

// TestMemoryContractSmall: the contract holds in a store far smaller than
// the default.
func TestMemoryContractSmall(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) claims.Store { return claims.NewMemoryWith(claims.MemoryOptions{MaxRecords: 4}) })
}

var t0 = time.Unix(1_900_000_000, 0)

func claimAt(k, owner string, now time.Time, lease, expiry time.Duration) claims.Claim {
	return claims.Claim{Key: k, Owner: owner, Fingerprint: "fp-" + k, LeaseUntil: now.Add(lease), ExpiresAt: now.Add(expiry)}
}

// TestMemoryCap: a full store refuses new keys, fail closed, and never
// gives up a live record to make room; lapsed leases and expired records
// make room.
func TestMemoryCap(t *testing.T) {
	ctx := context.Background()
	m := claims.NewMemoryWith(claims.MemoryOptions{MaxRecords: 100})
	for i := range 100 {
		k := fmt.Sprint("k", i)
		lease := time.Minute
		if i%2 == 1 {
			lease = 10 * time.Minute
		}
		if taken, _, err := m.Claim(ctx, claimAt(k, "a", t0, lease, time.Hour), t0); err != nil || !taken {
			t.Fatalf("claim %d: %v %v", i, taken, err)
		}
		if i%4 == 0 {
			if err := m.Complete(ctx, k, "a", []byte(`{"n":`+fmt.Sprint(i)+`}`), false, t0.Add(time.Hour)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Full of live records: a new key is refused, as an unreachable store
	// would refuse it, and each old key is still held.
	refused := func(now time.Time) {
		t.Helper()
		taken, holder, err := m.Claim(ctx, claimAt(fmt.Sprint("new-", now.Unix()), "b", now, time.Minute, time.Hour), now)
		if taken || holder != nil || !errors.Is(err, claims.ErrUnavailable) || !errors.Is(err, claims.ErrFull) {
			t.Fatalf("at %v: a claim on a full store: taken=%v holder=%v err=%v", now.Sub(t0), taken, holder, err)
		}
	}
	refused(t0)
	refused(t0.Add(30 * time.Second))
	for i := range 100 {
		k := fmt.Sprint("k", i)
		taken, holder, err := m.Claim(ctx, claimAt(k, "b", t0, time.Minute, time.Hour), t0.Add(30*time.Second))
		if err != nil || taken || holder == nil || holder.Owner != "a" {
			t.Fatalf("%s was given up: taken=%v holder=%+v err=%v", k, taken, holder, err)
		}
		if i%4 == 0 && (holder.Status != claims.StatusCompleted || string(holder.Response) != `{"n":`+fmt.Sprint(i)+`}`) {
			t.Errorf("%s: %+v", k, holder)
		}
	}
	// After a minute the even keys' leases have lapsed (those not
	// completed): the store drops them to make room, and only them.
	now := t0.Add(time.Minute)
	for i := range 25 {
		if taken, _, err := m.Claim(ctx, claimAt(fmt.Sprint("new", i), "b", now, time.Minute, time.Hour), now); err != nil || !taken {
			t.Fatalf("new%d after the leases lapsed: %v %v", i, taken, err)
		}
	}
	refused(now)
	for i := 0; i < 100; i += 4 {
		_, holder, _ := m.Claim(ctx, claimAt(fmt.Sprint("k", i), "b", now, time.Minute, time.Hour), now)
		if holder == nil || holder.Status != claims.StatusCompleted {
			t.Errorf("completed k%d was dropped: %+v", i, holder)
		}
	}
	// A late owner of a dropped claim is fenced, as after a takeover.
	if err := m.Complete(ctx, "k2", "a", []byte(`{}`), false, now.Add(time.Hour)); !errors.Is(err, claims.ErrNotOwner) {
		t.Errorf("completing a dropped claim: %v", err)
	}
	// After the hour everything has expired.
	now = t0.Add(2 * time.Hour)
	for i := range 100 {
		if taken, _, err := m.Claim(ctx, claimAt(fmt.Sprint("later", i), "c", now, time.Minute, time.Hour), now); err != nil || !taken {
			t.Fatalf("later%d: %v %v", i, taken, err)
		}
	}
	refused(now)
}

// TestMemoryResponseBudget: results beyond the byte budget are not kept,
// but their keys stay spent.
func TestMemoryResponseBudget(t *testing.T) {
	ctx := context.Background()
	m := claims.NewMemoryWith(claims.MemoryOptions{MaxResponseBytes: 1000})
	body := []byte(`"` + string(make([]byte, 398)) + `"`)
	for i := range 3 {
		k := fmt.Sprint("k", i)
		if taken, _, err := m.Claim(ctx, claimAt(k, "a", t0, time.Minute, time.Hour), t0); err != nil || !taken {
			t.Fatal(taken, err)
		}
		if err := m.Complete(ctx, k, "a", body, false, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	for i, wantKept := range []bool{true, true, false} {
		_, holder, err := m.Claim(ctx, claimAt(fmt.Sprint("k", i), "b", t0, time.Minute, time.Hour), t0)
		if err != nil || holder == nil || holder.Status != claims.StatusCompleted || holder.Oversize == wantKept || (len(holder.Response) == len(body)) != wantKept {
			t.Errorf("k%d: %+v %v, want kept %v", i, holder, err, wantKept)
		}
	}
	// Expired results give their bytes back.
	later := t0.Add(2 * time.Hour)
	if taken, _, err := m.Claim(ctx, claimAt("k0", "c", later, time.Minute, time.Hour), later); err != nil || !taken {
		t.Fatal(taken, err)
	}
	if err := m.Complete(ctx, "k0", "c", body, false, later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, holder, _ := m.Claim(ctx, claimAt("k0", "d", later, time.Minute, time.Hour), later); holder == nil || holder.Oversize {
		t.Errorf("after the budget was freed: %+v", holder)
	}
}

// BenchmarkMemoryChurn: keyed calls (claim, complete) with a short
// retention, as a busy local endpoint makes them.
func BenchmarkMemoryChurn(b *testing.B) {
	ctx := context.Background()
	m := claims.NewMemory()
	now := t0
	i := 0
	for b.Loop() {
		i++
		now = now.Add(time.Millisecond)
		k := fmt.Sprint("k", i)
		if taken, _, err := m.Claim(ctx, claimAt(k, "a", now, time.Second, 2*time.Second), now); err != nil || !taken {
			b.Fatal(taken, err)
		}
		if err := m.Complete(ctx, k, "a", []byte(`{"ok":true}`), false, now.Add(2*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}
