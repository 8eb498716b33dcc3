package stateless

import (
	"strings"
	"testing"
)

func TestTraceParent(t *testing.T) {
	const ok = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	tests := map[string]string{
		ok: ok,
		"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future": "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		ok + "-extra":       "", // version 00 has exactly four fields
		"ff" + ok[2:]:       "", // version ff is invalid
		strings.ToUpper(ok): "", // lower-case hex only
		"00-00000000000000000000000000000000-00f067aa0ba902b7-01": "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01": "",
		"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g": "",
		"00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01": "",
		ok[:54]: "",
		"":      "",
		"00-\"><script>alert(1)</script>-00f067aa0ba902b7-01": "",
	}
	for in, want := range tests {
		if got := traceParent(in); got != want {
			t.Errorf("traceParent(%q) = %q, want %q", in, got, want)
		}
	}
}

// FuzzTraceParent: whatever the peer sends, what is kept (and logged) is
// empty or a well-formed traceparent of 55 characters, which is kept as
// it is.
func FuzzTraceParent(f *testing.F) {
	f.Add("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	f.Add("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x")
	f.Add("ff-00000000000000000000000000000000-0000000000000000-00")
	f.Fuzz(func(t *testing.T, v string) {
		got := traceParent(v)
		if got == "" {
			return
		}
		if len(got) != 55 || !strings.HasPrefix(v, got) || !lowerHex(strings.ReplaceAll(got, "-", "")) || strings.Count(got, "-") != 3 {
			t.Fatalf("traceParent(%q) = %q", v, got)
		}
		if traceParent(got) != got {
			t.Fatalf("not idempotent on %q", got)
		}
	})
}
