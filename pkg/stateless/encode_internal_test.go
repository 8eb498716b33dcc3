package stateless

import (
	"encoding/json"
	"strings"
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

func FuzzAppendString(f *testing.F) {
	f.Add("héllo <b>\"\\\n\x00\xff")
	f.Fuzz(func(t *testing.T, s string) {
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

func FuzzEqualFold(f *testing.F) {
	for _, s := range [][2]string{{"kelvin", "\u212aelvin"}, {"Name", "nAME"}, {"s", "\u017f"}, {"ß", "SS"}, {"a", "ab"}, {"\xff", "\xfe"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if got, want := equalFold(a, []byte(b)), strings.EqualFold(a, b); got != want {
			t.Fatalf("equalFold(%q, %q) = %v, strings.EqualFold says %v", a, b, got, want)
		}
	})
}
