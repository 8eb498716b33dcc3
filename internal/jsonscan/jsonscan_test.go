package jsonscan

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"
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

// TestUniqueNames: a name twice is found at any depth, inside arrays too,
// and with escapes resolved; the same name in different objects is not a
// repeat.
func TestUniqueNames(t *testing.T) {
	for in, want := range map[string]bool{
		`{}`: true, `1`: true, `[]`: true, `"a"`: true,
		`{"a":1,"b":{"a":2},"c":[{"a":3},{"a":4}]}`: true,
		`{"a":1,"a":2}`:                        false,
		`{"a":1,"\u0061":2}`:                   false,
		` { "x" : [ 1 , { "b":1, "b":2 } ] } `: false,
		`[{"a":{"b":[[{"c":1,"c":1}]]}}]`:      false,
		`{"a\"b":1,"a\u0022b":2}`:              false,
		many(64, ""):                           true,
		many(64, `,"m0":1`):                    false,
		many(64, `,"m63":1`):                   false,
		many(200, `,"m150":1`):                 false,
		many(200, `,"m\u0031":1`):              false,
		many(200, `,"x":{"a":1,"a":1}`):        false,
		many(200, `,"x":1`):                    true,
	} {
		if got := UniqueNames([]byte(in)); got != want {
			t.Errorf("UniqueNames(%s) = %v, want %v", in, got, want)
		}
	}
}

// FuzzValid holds Valid, with UniqueNames, to the strict decoder's
// verdict (jsontext with its defaults) on any input.
func FuzzValid(f *testing.F) {
	for _, s := range []string{`{}`, `[1,2.5e-3,-0,"a\u00e9\ud83d\ude00",true,false,null]`, ` {"a":{"b":[]}} `,
		`01`, `1.`, `-`, `1e`, `"\ud800"`, `"\udc00\ud800"`, "\"\xff\"", "\"\x01\"", `{"a":1,"a":2}`, `[1,]`, `{"a"}`,
		`tru`, `nul`, `{"a":1}x`, `"\x"`, `[[[[[]]]]]`, "\t\n\r 1 "} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 4*maxFuzzString { // as FuzzStrings: longer adds nothing but time
			return
		}
		got := Valid(b) && UniqueNames(b)
		if want := jsontext.Value(b).IsValid(); got != want {
			t.Fatalf("Valid(%q) && UniqueNames = %v, jsontext %v", b, got, want)
		}
	})
}

// many is an object of n members "m0"… then more.
func many(n int, more string) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"m%d":%d`, i, i)
	}
	return b.String() + more + "}"
}
