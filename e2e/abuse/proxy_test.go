package abuse

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// fakeDynamoDB answers as DynamoDB does what the proxy reads: an
// UpdateItem of a counter with its count, a conditional PutItem of a
// slots item with a failed condition when the body says so.
func fakeDynamoDB(t *testing.T) *httptest.Server {
	var n atomic.Int64
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		switch {
		case strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".UpdateItem"):
			w.Write([]byte(`{"Attributes":{"n":{"N":"` + string(rune('0'+n.Add(1))) + `"}}}`))
		case bytes.Contains(body, []byte("lost")):
			w.WriteHeader(http.StatusBadRequest)
			w.Write([]byte(`{"__type":"com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException"}`))
		default:
			w.Write([]byte(`{}`))
		}
	}))
}

func post(t *testing.T, addr, op string, body any) int {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/", bytes.NewReader(b))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func s(v string) map[string]string { return map[string]string{"S": v} }

// TestProxy: every request is recorded with its listener, the tag its
// listener gave, its operation, the partition keys of an item, a
// transaction and a batch, a counter's answered count and DynamoDB's
// status; a delay holds back what it matches while it is on.
func TestProxy(t *testing.T) {
	up := fakeDynamoDB(t)
	defer up.Close()
	var slow atomic.Bool
	p := NewProxy(up.URL, Delay{Listener: "i*", Op: "Query", Contains: "notes#slow", When: slow.Load, For: 150 * time.Millisecond})
	defer p.Close()
	tag := "abuse-0000001"
	i0, err := p.Listen("i0", func() string { return tag })
	if err != nil {
		t.Fatal(err)
	}
	loc, err := p.Listen("local", nil)
	if err != nil {
		t.Fatal(err)
	}
	post(t, i0, "UpdateItem", map[string]any{"Key": map[string]any{"pk": s("rate#abc#100"), "sk": s("rate")}})
	if st := post(t, i0, "PutItem", map[string]any{"Item": map[string]any{"pk": s("slots#tasks#abc"), "lost": s("x")}}); st != http.StatusBadRequest {
		t.Errorf("a failed condition answered %d", st)
	}
	tag = workerTag + "t1"
	post(t, i0, "TransactWriteItems", map[string]any{"TransactItems": []any{
		map[string]any{"Put": map[string]any{"Item": map[string]any{"pk": s("notes#1")}}},
		map[string]any{"Update": map[string]any{"Key": map[string]any{"pk": s("claim#2")}}},
	}})
	post(t, loc, "BatchWriteItem", map[string]any{"RequestItems": map[string]any{"t": []any{
		map[string]any{"DeleteRequest": map[string]any{"Key": map[string]any{"pk": s("task#3")}}},
	}}})

	start := time.Now()
	post(t, i0, "Query", map[string]any{"ExpressionAttributeValues": map[string]any{":pk": s("notes#slow")}})
	post(t, loc, "Query", map[string]any{"ExpressionAttributeValues": map[string]any{":pk": s("notes#slow")}})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("a delay that is off held the reads for %s", d)
	}
	slow.Store(true)
	start = time.Now()
	post(t, i0, "Query", map[string]any{"ExpressionAttributeValues": map[string]any{":pk": s("notes#fast")}})
	post(t, loc, "Query", map[string]any{"ExpressionAttributeValues": map[string]any{":pk": s("notes#slow")}})
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("reads the delay does not match were held for %s", d)
	}
	start = time.Now()
	post(t, i0, "Query", map[string]any{"ExpressionAttributeValues": map[string]any{":pk": s("notes#slow")}})
	if d := time.Since(start); d < 150*time.Millisecond {
		t.Errorf("a matching read was held for %s only", d)
	}

	ops := p.Ops()
	if len(ops) != 9 {
		t.Fatalf("%d ops recorded: %+v", len(ops), ops)
	}
	want := []struct {
		listener, tag, name string
		kinds               []string
		count               int64
		applied, write      bool
	}{
		{"i0", "abuse-0000001", "UpdateItem", []string{"rate"}, 1, true, true},
		{"i0", "abuse-0000001", "PutItem", []string{"slots"}, -1, false, true},
		{"i0", "worker:t1", "TransactWriteItems", []string{"claim", "notes"}, -1, true, true},
		{"local", "", "BatchWriteItem", []string{"task"}, -1, true, true},
		{"i0", "worker:t1", "Query", nil, -1, true, false},
	}
	for i, w := range want {
		o := ops[i]
		if o.Listener != w.listener || o.Tag != w.tag || o.Name != w.name || !slices.Equal(o.Kinds(), w.kinds) || o.Count != w.count ||
			o.Applied() != w.applied || o.Write() != w.write {
			t.Errorf("op %d: %+v (kinds %v); want %+v", i, o, o.Kinds(), w)
		}
	}
}

// TestListens: a listener pattern is a name, or a prefix ending in '*'.
func TestListens(t *testing.T) {
	for _, c := range []struct {
		pattern, name string
		want          bool
	}{{"i*", "i12", true}, {"i*", "local", false}, {"local", "local", true}, {"local", "local2", false}, {"*", "x", true}} {
		if got := Listens(c.pattern, c.name); got != c.want {
			t.Errorf("Listens(%q, %q) = %v", c.pattern, c.name, got)
		}
	}
}

// TestWithSourceIP: the front puts the connection's address where API
// Gateway does, leaving the rest of the event as it was.
func TestWithSourceIP(t *testing.T) {
	in := []byte(`{"version":"2.0","headers":{"x-forwarded-for":"10.0.0.1, 127.0.0.66"},"requestContext":{"http":{"method":"POST","sourceIp":"127.0.0.1"}}}`)
	out, err := withSourceIP(in, "127.0.0.66")
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Headers        map[string]string `json:"headers"`
		RequestContext struct {
			HTTP struct{ Method, SourceIP string } `json:"http"`
		} `json:"requestContext"`
	}
	if err := json.Unmarshal(out, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.RequestContext.HTTP.SourceIP != "127.0.0.66" || ev.RequestContext.HTTP.Method != "POST" || ev.Headers["x-forwarded-for"] != "10.0.0.1, 127.0.0.66" {
		t.Errorf("the event became %s", out)
	}
	if _, err := withSourceIP([]byte(`{"requestContext":{}}`), "127.0.0.2"); err == nil {
		t.Error("an event without requestContext.http was taken")
	}
}
