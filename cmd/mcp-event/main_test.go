package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// TestEventShapes: each door's event carries the request as that door
// delivers it, the caller's principal only when asked for.
func TestEventShapes(t *testing.T) {
	for _, door := range []string{"http-api", "rest", "function-url"} {
		r := request{Door: door, Method: "tools/call", Name: "count_add", Args: `{"n":2}`, Key: "k1", Caps: "{}"}
		if door != "function-url" {
			r.Principal = "alice"
		}
		var b bytes.Buffer
		if err := write(&b, &r); err != nil {
			t.Fatalf("%s: %v", door, err)
		}
		var ev struct {
			Headers        map[string]string `json:"headers"`
			Body           string            `json:"body"`
			RequestContext map[string]any    `json:"requestContext"`
		}
		if err := json.Unmarshal(b.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		name := "mcp-name"
		if door == "rest" {
			name = "Mcp-Name"
		}
		if ev.Headers[name] != "count_add" || !strings.Contains(ev.Body, `"idempotencyKey":"k1"`) || !strings.Contains(ev.Body, `"arguments":{"n":2}`) {
			t.Errorf("%s: %s", door, b.String())
		}
		if _, has := ev.RequestContext["authorizer"]; has != (r.Principal != "") {
			t.Errorf("%s: authorizer %v", door, ev.RequestContext["authorizer"])
		}
	}
}

// TestEventRefusals: what cannot make a valid event is refused, saying
// why.
func TestEventRefusals(t *testing.T) {
	for _, c := range []struct {
		r    request
		want string
	}{
		{request{Door: "http-api", Method: "tools/call", Caps: "{}"}, "needs -tool"},
		{request{Door: "gopher", Method: "tools/list", Caps: "{}"}, "-door"},
		{request{Door: "rest", Method: "tools/call", Name: "x", Args: "[1]", Caps: "{}"}, "-args"},
		{request{Door: "rest", Method: "tools/list", Key: "k", Caps: "{}"}, "-key"},
		{request{Door: "rest", Method: "tools/list", Caps: "nope"}, "-caps"},
		{request{Door: "function-url", Method: "tools/list", Caps: "{}", Principal: "p"}, "no authorizer"},
		{request{Door: "rest", Method: "resources/read", Caps: "{}"}, "-uri"},
	} {
		if err := write(&bytes.Buffer{}, &c.r); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", c.r, err, c.want)
		}
	}
	var b bytes.Buffer
	if err := write(&b, &request{Door: "http-api", Method: "resources/read", URI: "notes://note/é", Caps: "{}"}); err != nil || !strings.Contains(b.String(), `"mcp-name": "=?base64?`) {
		t.Errorf("a URI beyond ASCII: %v %s", err, b.String())
	}
}
