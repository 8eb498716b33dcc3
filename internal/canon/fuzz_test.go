package canon

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"
)

// violated fails t for a broken property, named by id.
func violated(t *testing.T, id, format string, args ...any) {
	t.Helper()
	t.Errorf(id+": "+format, args...)
}

// maxFuzzInput bounds the inputs FuzzCanon looks at. Larger ones (deep
// and wide values near encoding/json's nesting limit) are checked by
// TestCanonLarge instead. As fuzz inputs they cost up to a second each,
// and the engine minimizes every input that brings new coverage: up to
// n²/2 shorter candidates for n bytes, run one by one, for up to
// -fuzzminimizetime, counting no executions meanwhile (0 execs/s).
const maxFuzzInput = 256

// FuzzCanon checks Append and Digest on arbitrary bytes: no panic; JSON in,
// canonical JSON out; the form is idempotent; and two encodings of one
// value (as encoding/json reads it) have one digest.
func FuzzCanon(f *testing.F) {
	for _, s := range []string{
		``, `null`, ` null `, `{}`, `[]`, `0`, `-0`, `-0.0`, `1.0`, `1e2`, `1E+2`, `0.1`, `1e-7`, `5e-324`,
		`1.7976931348623157e308`, `9007199254740992`, `9007199254740993`, `-9007199254740993`,
		`1e400`, `-1E+400`, `1e-400`, `0.30000000000000004`, `1234567.5`,
		`"\u0041\u00e9<>&\/"`, `"\ud83d\ude00"`, `"\ud800"`, "\"\xff\xfe\"", `"\u2028\u2029"`, `"\u0000\u001f"`,
		`{"b":1,"a":[true,null,"x"]}`, ` { "b" : 1 , "a" : 2 } `, `{"a":1,"a":2}`, `{"a":1,"A":2}`,
		`{"\uffff":2,"😀":1,"é":3,"\u00e9":4}`, `{"":{"":{"":[]}}}`,
		`{"to":"bob","amount":10}`, `{"amount":10.0,"to":"\u0062ob"}`,
		`{"a":1} x`, `{`, `nope`, `tru`, `"unterminated`, `{"a" 1}`, `01`, `1.`, `.5`, `+1`,
		`NaN`, `Infinity`, "\xef\xbb\xbf{}", "\t\r\n {} \n",
		strings.Repeat("[", 100) + strings.Repeat("]", 100),
		strings.Repeat(`{"a":`, 40) + "1" + strings.Repeat("}", 40),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > maxFuzzInput {
			return
		}
		checkCanon(t, src)
	})
}

// TestCanonLarge checks FuzzCanon's properties on inputs past
// maxFuzzInput: nesting at encoding/json's limit of 10000 on either side,
// a deep object, and a wide object of duplicate keys.
func TestCanonLarge(t *testing.T) {
	for name, src := range map[string]string{
		"deep-array-9999":  strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
		"deep-array-10001": strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		"deep-object-5000": strings.Repeat(`{"a":`, 5000) + "null" + strings.Repeat("}", 5000),
		"wide-object-1000": "{" + strings.Repeat(`"k":1,`, 999) + `"k":1}`,
	} {
		t.Run(name, func(t *testing.T) { checkCanon(t, []byte(src)) })
	}
}

// checkCanon is FuzzCanon's body.
func checkCanon(t *testing.T, src []byte) {
	t.Helper()
	out, err := Append(nil, src)
	valid := json.Valid(src)
	blank := len(bytes.Trim(src, " \t\r\n")) == 0
	if err != nil {
		if valid {
			t.Fatalf("refused valid JSON %q: %v", src, err)
		}
		if Digest(src) != sha256.Sum256(append([]byte("\x00raw\x00"), src...)) {
			t.Fatal("Digest of non-JSON is not the prefixed raw digest")
		}
		return
	}
	if !valid && !blank {
		violated(t, "canon/json-only", "accepted invalid JSON %q as %s", src, out)
	}
	if !json.Valid(out) {
		t.Fatalf("output %q of %q is not JSON", out, src)
	}
	again, err := Append(nil, out)
	if err != nil || !bytes.Equal(again, out) {
		t.Fatalf("not idempotent: %q -> %q -> %q (%v)", src, out, again, err)
	}
	if Digest(src) != sha256.Sum256(out) {
		t.Fatal("Digest is not the SHA-256 of Append")
	}
	if prefixed, _ := Append([]byte("x"), src); !bytes.Equal(prefixed, append([]byte("x"), out...)) {
		t.Fatalf("Append does not append to dst")
	}
	// Other encodings of the same value: indented, and re-encoded by
	// encoding/json (sorted keys, HTML escapes, shortest floats).
	var ind bytes.Buffer
	indent := "\t"
	if len(src) > 4096 {
		indent = "" // deep input indented grows quadratically
	}
	if json.Indent(&ind, src, "", indent) == nil {
		if Digest(ind.Bytes()) != Digest(src) {
			t.Errorf("indentation changed the digest of %q", src)
		}
	}
	var v any
	if json.Unmarshal(src, &v) != nil {
		return
	}
	re, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if Digest(re) != Digest(src) {
		c, _ := Append(nil, re)
		violated(t, "canon/same-value", "%q and %q are the same value but canonicalise to %s and %s", src, re, out, c)
	}
}
