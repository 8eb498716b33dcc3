package jsonscan

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// maxFuzzString bounds the text FuzzStrings looks at. Both functions make
// one pass with no state that depends on length, so every byte sequence
// that matters fits well within it. Longer inputs only cost time: the
// coverage counters of the per-byte loops make a long input "new
// coverage" that no shorter one has, and the engine's minimizer then
// tries up to n²/2 shorter candidates of n bytes each, for up to
// -fuzzminimizetime, counting no executions meanwhile (0 execs/s).
const maxFuzzString = 128

// FuzzStrings: AppendUnquoted reads what encoding/json writes, and
// AppendString writes what encoding/json reads, for any text (up to
// maxFuzzString bytes).
func FuzzStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" backslash \\ slash /", "\b\f\n\r\t\x00\x1f", "héllo ☃ 𝄞", "line\u2028sep", "bad \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzString {
			return
		}
		q, _ := json.Marshal(s)
		if got := string(AppendUnquoted(nil, q)); got != string([]rune(s)) && utf8.ValidString(s) {
			t.Fatalf("AppendUnquoted(%s) = %q, want %q", q, got, s)
		}
		var back string
		enc := AppendString(nil, s)
		if err := json.Unmarshal(enc, &back); err != nil {
			t.Fatalf("AppendString(%q) = %s: %v", s, enc, err)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("AppendString(%q) came back as %q", s, back)
		}
	})
}

func TestAppendUnquotedEscapes(t *testing.T) {
	for in, want := range map[string]string{
		`"a\"b\\c\/d"`:         `a"b\c/d`,
		`"\u0041\u00e9\u2603"`: "Aé☃",
		`"\ud834\udd1e"`:       "𝄞",
		`"\ud834x"`:            "\ufffdx",
		`"\udd1e"`:             "\ufffd",
		`"\n\t"`:               "\n\t",
	} {
		if got := string(AppendUnquoted(nil, []byte(in))); got != want {
			t.Errorf("%s = %q, want %q", in, got, want)
		}
	}
}
