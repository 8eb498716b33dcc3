package stateless

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

func TestAppendStringRoundTrips(t *testing.T) {
	for _, s := range []string{"", "plain", `quote " backslash \ slash /`, "<b>&amp;</b>", "tab\tnl\ncr\r\x00\x1f\x7f",
		"héllo ☃ 𝄞", "line\u2028sep\u2029", "bad \xff utf8", "\xed\xa0\x80"} {
		got := appendString(nil, s)
		if !json.Valid(got) {
			t.Fatalf("%q encodes to invalid JSON %s", s, got)
		}
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatal(err)
		}
		want := s
		if !utf8.ValidString(s) {
			want = string([]rune(s)) // invalid bytes become U+FFFD, as encoding/json does
		}
		if back != want {
			t.Errorf("%q came back as %q", s, back)
		}
	}
}

// maxFuzzString bounds the strings FuzzAppendString looks at.
// appendString makes one pass with no state that depends on length, so
// every byte sequence that matters fits well within it. Longer inputs
// only cost time: the coverage counters of the per-byte loops (in
// appendString and in json.Unmarshal) make a long input "new coverage"
// that no shorter one has, and the engine's minimizer then tries up to
// n²/2 shorter candidates of n bytes each, for up to -fuzzminimizetime,
// counting no executions meanwhile (the 0 execs/s status lines).
const maxFuzzString = 128

func FuzzAppendString(f *testing.F) {
	f.Add("héllo <b>\"\\\n\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzString {
			return
		}
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q: %v (%s)", s, err, got)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("%q came back as %q", s, back)
		}
	})
}
