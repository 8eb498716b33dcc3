package jsonscan

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzStrings: AppendUnquoted reads what encoding/json writes, and
// AppendString writes what encoding/json reads, for any text.
func FuzzStrings(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" backslash \\ slash /", "\b\f\n\r\t\x00\x1f", "héllo ☃ 𝄞", "line\u2028sep", "bad \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
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
