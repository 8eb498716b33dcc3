package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestEncode(t *testing.T) {
	params := map[string]any{"name": "notes_export"}
	body, err := Encode(int64(7), "tools/call", params, Caps{Tasks: true})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":7,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/clientCapabilities":{"extensions":{"io.modelcontextprotocol/tasks":{}}},"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"notes_export"}}`
	if string(body) != want {
		t.Errorf("body\n got %s\nwant %s", body, want)
	}
	if _, ok := params["_meta"]; ok {
		t.Error("Encode changed the caller's params")
	}
	body, _ = Encode(1, "tools/call", nil, Caps{Elicitation: true})
	if !strings.Contains(string(body), `clientCapabilities":{"elicitation":{}}`) {
		t.Errorf("no elicitation capability: %s", body)
	}
}

func TestDecode(t *testing.T) {
	stream := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"n\":1}}\n\n" +
		"data:  {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,\"data\":{\"type\":\"x\"}}} \n\n"
	m, err := Decode("text/event-stream; charset=utf-8", []byte(stream))
	if err != nil || m.Error == nil || m.Error.Code != -32603 || m.Result != nil {
		t.Errorf("stream: %+v, %v; want the last response, an error", m, err)
	}
	m, err = Decode("application/json", []byte(`{"jsonrpc":"2.0","id":1,"result":{"n":1}}`))
	if err != nil || m.Result["n"] != 1.0 {
		t.Errorf("json: %+v, %v", m, err)
	}
	if _, err := Decode("text/event-stream", []byte("data: {\"method\":\"notifications/progress\"}\n")); err == nil {
		t.Error("a stream with no response decoded")
	}
	if _, err := Decode("text/html", []byte("<html>")); err == nil {
		t.Error("a page decoded")
	}
}

func TestReplyDescribe(t *testing.T) {
	for _, c := range []struct {
		r      Reply
		want   string
		failed bool
	}{
		{Reply{}, "", false},
		{Reply{Status: 200, RequestID: "chaos-0000001", Instance: "i2.g3"}, " http=200 req=chaos-0000001 on i2.g3", false},
		{Reply{Err: errors.New("reset")}, " err=reset", true},
		{Reply{Status: 502, Err: errors.New("bad"), Error: &RPCError{Code: 1}}, " http=502 err=bad", true},
		{Reply{Status: 200, Error: &RPCError{Code: -32602, Data: map[string]any{"type": "rate_limited"}}}, ` http=200 code=-32602 data={"type":"rate_limited"}`, true},
	} {
		var b strings.Builder
		if failed := c.r.Describe(&b); b.String() != c.want || failed != c.failed {
			t.Errorf("%+v: %q, %v; want %q, %v", c.r, b.String(), failed, c.want, c.failed)
		}
	}
}

func TestReadBody(t *testing.T) {
	w := httptest.NewRecorder()
	if _, ok := ReadBody(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(strings.Repeat("x", maxBody+1)))); ok || w.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body past the limit: ok=%v, %d", ok, w.Code)
	}
	w = httptest.NewRecorder()
	if b, ok := ReadBody(w, httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader("{}"))); !ok || string(b) != "{}" {
		t.Errorf("a small body: %q, %v", b, ok)
	}
}

func TestEvent(t *testing.T) {
	for _, stream := range []bool{false, true} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		payload, err := Event(r, []byte("{}"), "front-1", "alice", stream)
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			RequestContext struct {
				RequestID  string `json:"requestId"`
				DomainName string `json:"domainName"`
			} `json:"requestContext"`
		}
		if err := json.Unmarshal(payload, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.RequestContext.RequestID != "front-1" {
			t.Errorf("stream=%v: request id %q", stream, ev.RequestContext.RequestID)
		}
		if isURL := strings.Contains(ev.RequestContext.DomainName, "lambda-url"); isURL != stream {
			t.Errorf("stream=%v: domain %q", stream, ev.RequestContext.DomainName)
		}
	}
}

func TestServers(t *testing.T) {
	var s Servers
	addr, err := s.Listen(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "up") }))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get("http://" + addr)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	s.Close()
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	if resp, err := c.Get("http://" + addr); err == nil {
		resp.Body.Close()
		t.Error("a closed server answered")
	}
}

func ExamplePercentile() {
	lat := []time.Duration{1 * time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 4 * time.Millisecond}
	fmt.Println(Percentile(lat, 0.50), Percentile(lat, 0.99), Percentile(nil, 0.99))
	// Output: 2ms 4ms 0s
}
