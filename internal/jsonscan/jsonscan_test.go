package jsonscan

import (
	"encoding/json"
	"strings"
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

// FuzzQuoted: for any JSON string literal (the fuzzed text between
// quotes, when encoding/json accepts it), ScanString finds its end and
// whether it has escapes, and AppendUnquoted reads it as encoding/json
// does, escapes, surrogate pairs and invalid UTF-8 included.
func FuzzQuoted(f *testing.F) {
	for _, s := range []string{``, `plain`, `a\"b\\c\/d`, `\\`, `\\\"`, `\u0041\u00e9`, `\ud834\udd1e`, `\ud834\ud834\udd1e`, `\udd1e\ud834`, `\ud834x`, "bad \xff \\n \xe2\x82", `\b\f\n\r\t`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > maxFuzzString {
			return
		}
		q := []byte(`"` + s + `"`)
		var want string
		if json.Unmarshal(q, &want) != nil {
			return
		}
		end, escaped := ScanString(append(q, `,"x"`...), 0)
		if end != len(q) || escaped != strings.Contains(s, `\`) {
			t.Fatalf("ScanString(%s) = %d, %v; want %d, %v", q, end, escaped, len(q), !escaped)
		}
		if got := string(AppendUnquoted(nil, q)); got != want {
			t.Fatalf("AppendUnquoted(%s) = %q, encoding/json reads %q", q, got, want)
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
