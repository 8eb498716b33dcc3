package stateless

import (
	"encoding/json"
	"reflect"
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

// The server's info and a tool result, written by hand, read back as
// encoding/json writes them.
func TestHandWrittenEncodingsAsEncodingJSON(t *testing.T) {
	size, prio := int64(7), 0.5
	for _, v := range []any{
		&Implementation{Name: "n", Version: "1"},
		&Implementation{Name: "n \"q\" <&> \u2028", Title: "t", Version: "1.0", Description: "d", WebsiteURL: "https://x/"},
		&Implementation{Name: "n", Version: "1", Icons: []Icon{{Src: "https://x/i.png"}}},
		&CallToolResult{Content: []Content{}},
		&CallToolResult{Content: []Content{Text(""), Image([]byte{1, 2}, "image/png"), ResourceLink("file:///a", "a", ""),
			{Type: "resource_link", URI: "u", Size: &size, Annotations: &Annotations{Priority: &prio}, Meta: Meta{"k": "<v>"}},
			Embedded(ResourceContents{URI: "u", Blob: []byte("b")})},
			StructuredContent: json.RawMessage(`{"a":[1,"x"]}`), IsError: true},
		&CallToolResult{Content: []Content{Text("x")}, StructuredContent: map[string]int{"n": 1}},
	} {
		var got []byte
		var err error
		switch v := v.(type) {
		case *Implementation:
			got, err = appendImplementation(nil, v)
		case *CallToolResult:
			got, err = appendCallToolResult(nil, v)
		}
		if err != nil {
			t.Fatal(err)
		}
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var g, w any
		if err := json.Unmarshal(got, &g); err != nil {
			t.Fatalf("%s: %v", got, err)
		}
		json.Unmarshal(want, &w)
		if !reflect.DeepEqual(g, w) {
			t.Errorf("wrote %s\nencoding/json writes %s", got, want)
		}
	}
	// No content is the empty array the schema requires, never null.
	if got, _ := appendCallToolResult(nil, &CallToolResult{}); string(got) != `{"content":[]}` {
		t.Errorf("no content: %s", got)
	}
}
