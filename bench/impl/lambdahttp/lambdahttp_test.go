package lambdahttp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"testing"
)

// TestInvoke checks that the adapter hands the handler what API Gateway
// sent — method, path and query, canonical headers, cookies, host, a
// base64 body decoded — and encodes what it answers, binary bodies in
// base64.
func TestInvoke(t *testing.T) {
	var got *http.Request
	var gotBody []byte
	a := New(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r
		gotBody, _ = io.ReadAll(r.Body)
		http.SetCookie(w, &http.Cookie{Name: "c", Value: "1"})
		w.Header().Set("X-Test", "yes")
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte{0xff, 0x00})
	}))
	ev := `{"version":"2.0","rawPath":"/mcp","rawQueryString":"a=1","cookies":["x=1","y=2"],` +
		`"headers":{"content-type":"application/json","host":"h.example","mcp-method":"tools/list"},` +
		`"requestContext":{"domainName":"d.example","http":{"method":"POST","sourceIp":"192.0.2.1"}},` +
		`"isBase64Encoded":true,"body":"` + base64.StdEncoding.EncodeToString([]byte(`{"a":1}`)) + `"}`
	out, err := a.Invoke(context.Background(), []byte(ev))
	if err != nil {
		t.Fatal(err)
	}
	if got.Method != "POST" || got.URL.Path != "/mcp" || got.URL.RawQuery != "a=1" || got.Host != "h.example" ||
		got.Header.Get("Mcp-Method") != "tools/list" || got.Header.Get("Cookie") != "x=1; y=2" || string(gotBody) != `{"a":1}` {
		t.Errorf("request: %+v body %q", got, gotBody)
	}
	var resp Response
	if err := json.Unmarshal(out, &resp); err != nil {
		t.Fatal(err)
	}
	body, _ := base64.StdEncoding.DecodeString(resp.Body)
	if resp.StatusCode != http.StatusTeapot || resp.Headers["X-Test"] != "yes" || len(resp.Cookies) != 1 ||
		!resp.IsBase64Encoded || string(body) != "\xff\x00" {
		t.Errorf("response: %s", out)
	}
	if _, err := a.Invoke(context.Background(), []byte(`{"Records":[]}`)); !errors.Is(err, ErrNotV2) {
		t.Errorf("a non-HTTP event: %v", err)
	}
}
