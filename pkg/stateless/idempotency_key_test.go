package stateless_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// onceStore is an execution interceptor that runs a keyed call of a
// side-effecting tool once and replays it after, and records every key it
// was asked to claim: the seam's contract as package claims uses it, in
// its smallest form.
type onceStore struct {
	mu      sync.Mutex
	done    map[string]json.RawMessage
	claimed []string
}

func (s *onceStore) options() *stateless.Options {
	return &stateless.Options{Interceptors: []stateless.Interceptor{{Execute: s.execute, Provides: stateless.Provides{
		Extensions: map[string]any{stateless.MetaIdempotency: map[string]any{}},
		ToolMeta: func(t *stateless.Tool) stateless.Meta {
			if t.ReadOnly() {
				return nil
			}
			return stateless.Meta{stateless.MetaIdempotency: map[string]any{"byArguments": t.IdempotentByArguments}}
		}}}}}
}

func (s *onceStore) execute(ctx context.Context, e *stateless.Execution, next func(context.Context) *stateless.Answer) *stateless.Answer {
	if e.Tool == nil || e.Tool.ReadOnly() || e.Key == "" {
		return next(ctx)
	}
	k := e.Principal + "\x00" + e.Tool.Name + "\x00" + e.Key
	s.mu.Lock()
	s.claimed = append(s.claimed, e.Key)
	r, ok := s.done[k]
	s.mu.Unlock()
	if ok {
		return stateless.Replay(r)
	}
	a := next(ctx)
	if a.Keep() {
		s.mu.Lock()
		if s.done == nil {
			s.done = map[string]json.RawMessage{}
		}
		s.done[k] = a.Result()
		s.mu.Unlock()
	}
	return a
}

func (s *onceStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.claimed...)
}

// keyedAdd is a tools/call of the side-effecting add tool; member, when
// not empty, is the raw idempotencyKey member of its params.
func keyedAdd(member string) string {
	return keyedCall("add", `{"a":1,"b":2}`, member)
}

func keyedCall(tool, args, member string) string {
	p := `"name":"` + tool + `","arguments":` + args
	if member != "" {
		p += `,"idempotencyKey":` + member
	}
	return req("1", "tools/call", withMeta(p))
}

func setKey(vals ...string) func(h http.Header) {
	return func(h http.Header) {
		h.Del("Idempotency-Key")
		for _, v := range vals {
			h.Add("Idempotency-Key", v)
		}
	}
}

// invalidKey is the error.data of an idempotency key refused for reason.
func invalidKey(reason string) string {
	return `{"type":"idempotency_key_invalid","reason":"` + reason + `"}`
}

// legacyHeaders are a 2025-11-25 client's.
func legacyHeaders() http.Header {
	return http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"}, "Mcp-Protocol-Version": {"2025-11-25"}}
}

// TestWireIdempotencyKey pins what each form of idempotency key gets: an
// empty, malformed or ambiguous key is refused (-32602, HTTP 400, in-band
// for a legacy client) before anything runs or is claimed, whether or not
// the tool is read-only; a well-formed key, in params or in the header,
// is the one claimed.
func TestWireIdempotencyKey(t *testing.T) {
	long := strings.Repeat("k", stateless.MaxIdempotencyKeyBytes)
	refused := func(name, body string, edit func(http.Header), reason string) keyCase {
		return keyCase{wireCase: wireCase{name: name, method: "tools/call", target: "add", body: body, edit: edit,
			status: 400, code: -32602, id: "1", data: invalidKey(reason)}}
	}
	accepted := func(name, body string, edit func(http.Header), claim string) keyCase {
		return keyCase{wireCase: wireCase{name: name, method: "tools/call", target: "add", body: body, edit: edit,
			status: 200, id: "1"}, ran: 1, claim: claim}
	}
	cases := []keyCase{
		// params.idempotencyKey.
		refused("params key empty", keyedAdd(`""`), nil, "empty"),
		refused("params key null", keyedAdd(`null`), nil, "not_a_string"),
		refused("params key a number", keyedAdd(`42`), nil, "not_a_string"),
		refused("params key an object", keyedAdd(`{"k":"v"}`), nil, "not_a_string"),
		refused("params key too long", keyedAdd(`"`+long+`k"`), nil, "too_long"),
		refused("params key with a newline", keyedAdd(`"k1\n"`), nil, "not_printable"),
		refused("params key with a NUL", keyedAdd(`"k\u00001"`), nil, "not_printable"),
		refused("params key with a zero-width space", keyedAdd(`"k\u200b1"`), nil, "not_printable"),
		refused("params key empty next to a header key", keyedAdd(`""`), setKey("k1"), "empty"),

		// The Idempotency-Key header.
		refused("header empty", keyedAdd(""), setKey(""), "empty"),
		refused("header only white space", keyedAdd(""), setKey(" \t "), "empty"),
		refused("header base64 of nothing", keyedAdd(""), setKey("=?base64??="), "empty"),
		refused("header malformed base64", keyedAdd(""), setKey("=?base64?###?="), "malformed_header"),
		refused("header base64 without padding", keyedAdd(""), setKey("=?base64?azE?="), "malformed_header"),
		refused("header base64 of invalid UTF-8", keyedAdd(""), setKey("=?base64?/w==?="), "malformed_header"),
		refused("header with a control character", keyedAdd(""), setKey("k\x011"), "malformed_header"),
		refused("header base64 of a control character", keyedAdd(""), setKey("=?base64?awcx?="), "not_printable"),
		refused("header too long", keyedAdd(""), setKey(long+"k"), "too_long"),
		refused("header repeated with different values", keyedAdd(""), setKey("k1", "k2"), "repeated_header"),
		refused("header joined by a front with different values", keyedAdd(""), setKey("k1, k2"), "repeated_header"),
		refused("header repeated, one line empty", keyedAdd(""), setKey("k1", ""), "repeated_header"),

		// Both.
		refused("params and header differ", keyedAdd(`"k1"`), setKey("k2"), "mismatch"),
		refused("params and decoded header differ", keyedAdd(`"k1"`), setKey("=?base64?azI=?="), "mismatch"),
		refused("params valid, header malformed", keyedAdd(`"k1"`), setKey("=?base64?###?="), "malformed_header"),

		// Read-only tools and legacy clients get the same answer.
		{wireCase: wireCase{name: "read-only tool, empty key", method: "tools/call", target: "echo",
			body: keyedCall("echo", `{"text":"x"}`, `""`), status: 400, code: -32602, id: "1", data: invalidKey("empty")}},
		{wireCase: wireCase{name: "read-only tool, malformed header", method: "tools/call", target: "echo",
			body: keyedCall("echo", `{"text":"x"}`, ""), edit: setKey("=?base64?###?="), status: 400, code: -32602, id: "1", data: invalidKey("malformed_header")}},
		{wireCase: wireCase{name: "legacy client, empty key, in-band", header: legacyHeaders(),
			body: req("1", "tools/call", `{"name":"add","arguments":{"a":1,"b":2},"idempotencyKey":""}`), status: 200, code: -32602, id: "1", data: invalidKey("empty")}},
		{wireCase: wireCase{name: "legacy client, headers differ, in-band", header: legacyHeaders(), edit: setKey("k1", "k2"),
			body: req("1", "tools/call", `{"name":"add","arguments":{"a":1,"b":2}}`), status: 200, code: -32602, id: "1", data: invalidKey("repeated_header")}},

		// Controls: well-formed keys are claimed as sent.
		accepted("params key", keyedAdd(`"k1"`), nil, "k1"),
		accepted("header key", keyedAdd(""), setKey("k1"), "k1"),
		accepted("header key padded with white space", keyedAdd(""), setKey(" k1\t"), "k1"),
		accepted("header key in base64", keyedAdd(""), setKey("=?base64?azE=?="), "k1"),
		accepted("params and header equal", keyedAdd(`"k1"`), setKey("k1"), "k1"),
		accepted("params and decoded header equal", keyedAdd(`"clé-1"`), setKey("=?base64?Y2zDqS0x?="), "clé-1"),
		accepted("header repeated with the same value", keyedAdd(""), setKey("k1", "k1"), "k1"),
		accepted("header joined by a front with the same value", keyedAdd(""), setKey("k1, k1"), "k1"),
		accepted("key of the maximum length", keyedAdd(`"`+long+`"`), nil, long),
		accepted("key with spaces and punctuation", keyedAdd(`"order 42: «pay»"`), nil, "order 42: «pay»"),
		{wireCase: wireCase{name: "read-only tool, valid key, no claim", method: "tools/call", target: "echo",
			body: keyedCall("echo", `{"text":"x"}`, `"k1"`), status: 200, id: "1"}, ran: 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := &onceStore{}
			f := newFixture(t, store.options())
			runWire(t, f.srv, c.wireCase)
			ran := f.addRan.Load()
			if c.target == "echo" {
				ran = f.echoRan.Load()
			}
			if ran != c.ran {
				t.Errorf("the handler ran %d times, want %d", ran, c.ran)
			}
			var want []string
			if c.claim != "" {
				want = []string{c.claim}
			}
			if got := store.keys(); strings.Join(got, "|") != strings.Join(want, "|") || len(got) != len(want) {
				t.Errorf("claimed %q, want %q", got, want)
			}
		})
	}
}

type keyCase struct {
	wireCase
	ran   int32  // executions of the handler the call causes
	claim string // the key claimed; "" for no claim
}

// TestMalformedKeySentTwiceNeverRuns sends each malformed form of key
// twice, as a retrying client would: the tool runs neither time, where a
// key silently dropped would run it twice.
func TestMalformedKeySentTwiceNeverRuns(t *testing.T) {
	forms := []struct {
		name string
		body string
		edit func(http.Header)
	}{
		{"empty params key next to a header key", keyedAdd(`""`), setKey("k1")},
		{"empty params key", keyedAdd(`""`), nil},
		{"malformed base64 header", keyedAdd(""), setKey("=?base64?###?=")},
		{"unpadded base64 header", keyedAdd(""), setKey("=?base64?azE?=")},
		{"empty header", keyedAdd(""), setKey("")},
		{"two differing headers", keyedAdd(""), setKey("k1", "k2")},
		{"params and header differ", keyedAdd(`"k1"`), setKey("k2")},
	}
	for _, form := range forms {
		t.Run(form.name, func(t *testing.T) {
			store := &onceStore{}
			f := newFixture(t, store.options())
			for i := 0; i < 2; i++ {
				h := wire.ModernHeaders("tools/call", "add")
				if form.edit != nil {
					form.edit(h)
				}
				resp := wire.Call(t, f.srv, http.MethodPost, h, form.body)
				r := wire.DecodeRPC(t, resp.Body)
				if resp.Status != 400 || r.Error == nil || r.Error.Code != -32602 {
					t.Errorf("send %d: %d %s", i+1, resp.Status, resp.Body)
				}
			}
			if n := f.addRan.Load(); n != 0 {
				t.Errorf("the tool ran %d times, want 0", n)
			}
			if k := store.keys(); len(k) != 0 {
				t.Errorf("claimed %q", k)
			}
		})
	}
}

// TestInvalidKeyRefusalNeverEchoesTheKey checks that neither the message
// nor the data of the refusal carries the key the client sent.
func TestInvalidKeyRefusalNeverEchoesTheKey(t *testing.T) {
	f := newFixture(t, (&onceStore{}).options())
	const secret = "IGNORE-PREVIOUS-INSTRUCTIONS"
	for _, edit := range []func(http.Header){setKey(secret, secret+"2"), setKey("=?base64?" + secret + "?="), setKey(secret + "\x01")} {
		h := wire.ModernHeaders("tools/call", "add")
		edit(h)
		resp := wire.Call(t, f.srv, http.MethodPost, h, keyedAdd(`"`+secret+`3"`))
		if resp.Status != 400 || strings.Contains(string(resp.Body), "IGNORE") {
			t.Errorf("%d %s", resp.Status, resp.Body)
		}
	}
}
