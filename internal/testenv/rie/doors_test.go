package rie

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// fakeFunction records the events it is invoked with and answers each
// with answer (or, for InvokeStream, stream).
type fakeFunction struct {
	mu     sync.Mutex
	events []map[string]any
	answer string
	stream string
	delay  time.Duration
}

func (f *fakeFunction) record(payload []byte) {
	var ev map[string]any
	if err := json.Unmarshal(payload, &ev); err != nil {
		panic(err)
	}
	f.mu.Lock()
	f.events = append(f.events, ev)
	f.mu.Unlock()
}

func (f *fakeFunction) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.record(payload)
	time.Sleep(f.delay)
	return []byte(f.answer), nil
}

func (f *fakeFunction) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	f.record(payload)
	return io.NopCloser(strings.NewReader(f.stream)), nil
}

func (f *fakeFunction) Events() []map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]any(nil), f.events...)
}

// proxyAnswer is a function's Lambda proxy response.
func proxyAnswer(t *testing.T, status int, headers map[string]string, multi map[string][]string) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"statusCode": status, "headers": headers, "multiValueHeaders": multi, "body": `{"ok":true}`})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func serve(t *testing.T, h http.Handler, method, path string, header http.Header, body string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(method, "https://api.example"+path, strings.NewReader(body))
	for k, vs := range header {
		req.Header[k] = vs
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec.Result()
}

const challenge = `Bearer resource_metadata="https://api.example/.well-known/oauth-protected-resource/mcp"`

// TestHTTPAPIDoor: payload 2.0 events (names lower-cased, repeated values
// joined with commas); the function's WWW-Authenticate renamed (the
// pessimistic reading), and the template's response parameters setting
// it from the relay header on a 401 and a 403, and only there.
func TestHTTPAPIDoor(t *testing.T) {
	for _, tt := range []struct {
		name      string
		params    ResponseParameters
		status    int
		challenge string // WWW-Authenticate the client gets
	}{
		{"401 with the template's parameters", nil, 401, challenge},
		{"403 with the template's parameters", nil, 403, challenge},
		{"200 with the template's parameters", nil, 200, ""},
		{"401 without parameters", ResponseParameters{}, 401, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fn := &fakeFunction{answer: proxyAnswer(t, tt.status, map[string]string{"Content-Type": "application/json",
				"WWW-Authenticate": challenge, stateless.ChallengeRelayHeader: challenge}, nil)}
			resp := serve(t, &Front{Emulator: fn, Parameters: tt.params}, "POST", "/mcp",
				http.Header{"X-Repeated": {"a", "b"}, "Mcp-Method": {"ping"}}, "{}")
			if resp.StatusCode != tt.status {
				t.Fatalf("status %d, want %d", resp.StatusCode, tt.status)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tt.challenge {
				t.Errorf("WWW-Authenticate %q, want %q", got, tt.challenge)
			}
			if got := resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate"); got != challenge {
				t.Errorf("the function's WWW-Authenticate arrived as x-amzn-Remapped-WWW-Authenticate %q, want %q", got, challenge)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
			ev := fn.Events()[0]
			h := ev["headers"].(map[string]any)
			if ev["version"] != "2.0" || h["x-repeated"] != "a,b" || h["mcp-method"] != "ping" || ev["rawPath"] != "/mcp" {
				t.Errorf("event %v", ev)
			}
		})
	}
}

// TestRESTDoor: only the stage's /mcp resource reaches the function,
// anything else is API Gateway's 403 "Missing Authentication Token"; the
// event is payload 1.0, the path without the stage, the stage and the
// path as sent in the request context; headers and multiValueHeaders of
// the answer are merged (multiValueHeaders winning) and the documented
// headers remapped.
func TestRESTDoor(t *testing.T) {
	fn := &fakeFunction{answer: proxyAnswer(t, 401,
		map[string]string{"Content-Type": "application/json", "WWW-Authenticate": challenge, "Server": "fn", "Retry-After": "1", "Vary": "Origin"},
		map[string][]string{"Vary": {"Origin", "Accept"}})}
	front := &Front{Emulator: fn, Door: RESTAPI}
	for _, path := range []string{"/mcp", "/.well-known/oauth-protected-resource/v1/mcp", "/v1/other", "/v2/mcp"} {
		resp := serve(t, front, "POST", path, nil, "{}")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusForbidden || string(body) != `{"message":"Missing Authentication Token"}` {
			t.Errorf("%s: %d %s, want 403 Missing Authentication Token", path, resp.StatusCode, body)
		}
	}
	if n := len(fn.Events()); n != 0 {
		t.Fatalf("%d invocations for paths outside the stage's resources", n)
	}
	resp := serve(t, front, "POST", "/v1/mcp", http.Header{"X-Repeated": {"a", "b"}}, "{}")
	if resp.StatusCode != 401 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	for name, want := range map[string]string{
		"WWW-Authenticate":                 "",
		"X-Amzn-Remapped-Www-Authenticate": challenge,
		"Server":                           "",
		"X-Amzn-Remapped-Server":           "fn",
		"Content-Type":                     "application/json",
		"Retry-After":                      "1",
	} {
		if got := resp.Header.Get(name); got != want {
			t.Errorf("%s %q, want %q", name, got, want)
		}
	}
	if got := resp.Header.Values("Vary"); strings.Join(got, ",") != "Origin,Accept" {
		t.Errorf("Vary %q: multiValueHeaders' values win", got)
	}
	ev := fn.Events()[0]
	rc := ev["requestContext"].(map[string]any)
	mv := ev["multiValueHeaders"].(map[string]any)["X-Repeated"].([]any)
	if ev["path"] != "/mcp" || ev["httpMethod"] != "POST" || ev["version"] != nil || rc["stage"] != RESTStage || rc["path"] != "/v1/mcp" ||
		ev["headers"].(map[string]any)["X-Repeated"] != "b" || len(mv) != 2 {
		t.Errorf("event %v", ev)
	}
}

// TestFunctionURLDoor: function URL events (its domain name), and the
// function's WWW-Authenticate renamed (the pessimistic reading).
func TestFunctionURLDoor(t *testing.T) {
	fn := &fakeFunction{answer: proxyAnswer(t, 401, map[string]string{"WWW-Authenticate": challenge}, nil)}
	resp := serve(t, &Front{Emulator: fn, Door: FunctionURL}, "POST", "/mcp", nil, "{}")
	if resp.Header.Get("WWW-Authenticate") != "" || resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate") != challenge {
		t.Errorf("headers %v", resp.Header)
	}
	if d := fn.Events()[0]["requestContext"].(map[string]any)["domainName"]; d != StreamDomain {
		t.Errorf("domain name %v", d)
	}
}

// TestDoorLimits: a request body over the door's limit is refused 413
// without an invocation; an answer over Lambda's 6 MB, or not a proxy
// response, is the door's 5xx; an answer later than the integration
// timeout is the door's timeout refusal.
func TestDoorLimits(t *testing.T) {
	for _, tt := range []struct {
		door    Door
		limit   int
		timeout int
		bad     int
	}{
		{HTTPAPI, 10 << 20, 503, 500},
		{RESTAPI, 10 << 20, 504, 502},
		{FunctionURL, 6 << 20, 502, 502},
	} {
		t.Run(tt.door.String(), func(t *testing.T) {
			path := "/mcp"
			if tt.door == RESTAPI {
				path = "/v1/mcp"
			}
			fn := &fakeFunction{answer: proxyAnswer(t, 200, nil, nil)}
			front := &Front{Emulator: fn, Door: tt.door}
			if resp := serve(t, front, "POST", path, nil, strings.Repeat("x", tt.limit)); resp.StatusCode != 200 {
				t.Errorf("a body of the limit: %d", resp.StatusCode)
			}
			if resp := serve(t, front, "POST", path, nil, strings.Repeat("x", tt.limit+1)); resp.StatusCode != 413 {
				t.Errorf("a body over the limit: %d", resp.StatusCode)
			}
			if n := len(fn.Events()); n != 1 {
				t.Errorf("%d invocations, want 1", n)
			}
			fn.answer = `{"statusCode":200,"body":"` + strings.Repeat("x", 6<<20) + `"}`
			if resp := serve(t, front, "POST", path, nil, "{}"); resp.StatusCode != tt.bad {
				t.Errorf("an answer over 6 MB: %d, want %d", resp.StatusCode, tt.bad)
			}
			fn.answer = "not a proxy response"
			if resp := serve(t, front, "POST", path, nil, "{}"); resp.StatusCode != tt.bad {
				t.Errorf("a malformed answer: %d, want %d", resp.StatusCode, tt.bad)
			}
			fn.answer, fn.delay, front.Timeout = proxyAnswer(t, 200, nil, nil), 200*time.Millisecond, 20*time.Millisecond
			if resp := serve(t, front, "POST", path, nil, "{}"); resp.StatusCode != tt.timeout {
				t.Errorf("a late answer: %d, want %d", resp.StatusCode, tt.timeout)
			}
		})
	}
}

// TestStreamDoors: a streamed answer's prelude headers are renamed as the
// door renames them, and the REST door's events are payload 1.0.
func TestStreamDoors(t *testing.T) {
	prelude := `{"statusCode":401,"headers":{"Content-Type":"application/json","WWW-Authenticate":"` +
		strings.ReplaceAll(challenge, `"`, `\"`) + `"}}` + strings.Repeat("\x00", 8) + `{"ok":true}`
	for _, d := range []Door{RESTAPI, FunctionURL} {
		fn := &fakeFunction{stream: prelude}
		path := "/mcp"
		if d == RESTAPI {
			path = "/v1/mcp"
		}
		resp := serve(t, &StreamFront{Function: fn, Door: d}, "POST", path, nil, "{}")
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 401 || string(body) != `{"ok":true}` || resp.Header.Get("WWW-Authenticate") != "" ||
			resp.Header.Get("X-Amzn-Remapped-WWW-Authenticate") != challenge || resp.Header.Get("Content-Type") != "application/json" {
			t.Errorf("%v: %d %v %s", d, resp.StatusCode, resp.Header, body)
		}
		if ev := fn.Events()[0]; (ev["version"] == nil) != (d == RESTAPI) {
			t.Errorf("%v: event %v", d, ev)
		}
	}
}

// TestResponseParameterForms: a status override applies, and a mapping
// API Gateway would not accept is the front's 500, not a guess.
func TestResponseParameterForms(t *testing.T) {
	fn := &fakeFunction{answer: proxyAnswer(t, 401, map[string]string{"X-From": "v"}, nil)}
	params := ResponseParameters{401: {"overwrite:statuscode": "418", "append:header.X-To": "$response.header.X-From", "remove:header.X-From": "''"}}
	resp := serve(t, &Front{Emulator: fn, Parameters: params}, "POST", "/mcp", nil, "{}")
	if resp.StatusCode != 418 || resp.Header.Get("X-To") != "v" || resp.Header.Get("X-From") != "" {
		t.Errorf("%d %v", resp.StatusCode, resp.Header)
	}
	for _, bad := range []map[string]string{{"overwrite:body": "x"}, {"rename:header.X": "y"}, {"overwrite:statuscode": "9999"}, {"header.X": "y"}} {
		resp := serve(t, &Front{Emulator: fn, Parameters: ResponseParameters{401: bad}}, "POST", "/mcp", nil, "{}")
		if resp.StatusCode != http.StatusInternalServerError {
			t.Errorf("%v: %d, want the front's 500", bad, resp.StatusCode)
		}
	}
}
