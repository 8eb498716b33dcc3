package claims

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestMemoryStaysBounded: 60,000 keyed calls through a Guard whose
// records expire after two seconds, one call a millisecond: about 2,000
// records are live at any time, and the map never holds many more than
// twice that. With the default 24-hour retention the same calls fill the
// store to its cap and no further: the excess is refused, fail closed.
func TestMemoryStaysBounded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		retention time.Duration
		maxLen    int
		refusals  int
	}{
		{"short retention", 2 * time.Second, 4 * 2_000, 0},
		{"default retention", 0, DefaultMaxRecords, 60_000 - DefaultMaxRecords},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory()
			now := time.Unix(1_900_000_000, 0)
			g := New(m, &Options{Retention: tc.retention, Now: func() time.Time { return now }})
			ctx := context.Background()
			longest, refused := 0, 0
			for i := range 60_000 {
				now = now.Add(time.Millisecond)
				k := ClaimKey("local", "notes_add", fmt.Sprint("key-", i))
				taken, _, err := m.Claim(ctx, Claim{Key: k, Owner: "o", Fingerprint: "f",
					LeaseUntil: g.lease(ctx, now, 0), ExpiresAt: now.Add(g.opts.Retention)}, now)
				switch {
				case errors.Is(err, ErrFull):
					refused++
					continue
				case err != nil || !taken:
					t.Fatalf("claim %d: %v %v", i, taken, err)
				}
				if err := m.Complete(ctx, k, "o", make([]byte, 1024), false, now.Add(g.opts.Retention)); err != nil {
					t.Fatal(err)
				}
				longest = max(longest, len(m.records))
			}
			if longest > tc.maxLen || refused != tc.refusals {
				t.Errorf("the map held up to %d records (want at most %d); %d claims refused (want %d)", longest, tc.maxLen, refused, tc.refusals)
			}
			if m.bytes > DefaultMaxResponseBytes {
				t.Errorf("%d bytes of responses kept", m.bytes)
			}
			t.Logf("at most %d records, %d at the end, %d bytes of responses, %d refused", longest, len(m.records), m.bytes, refused)
		})
	}
}
