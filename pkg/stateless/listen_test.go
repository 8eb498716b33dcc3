package stateless_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/wire"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
	"github.com/serverless-mcp/mcp-lambda/pkg/uritemplate"
)

// sharedLog is an EventLog two servers in one test share, as two
// instances share a table: what one appends the other reads.
type sharedLog struct {
	mu       sync.Mutex
	events   []stateless.Event
	fail     bool // Read fails while set
	reads    int
	catalogs map[string]string
}

func (l *sharedLog) Append(_ context.Context, evs []stateless.Event) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, evs...)
	return nil
}

func (l *sharedLog) Read(_ context.Context, topic string, since time.Time, limit int) ([]stateless.Event, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reads++
	if l.fail {
		return nil, errDown
	}
	var out []stateless.Event
	for _, e := range l.events {
		if e.Topic == topic && !e.At.Before(since) && len(out) < limit {
			out = append(out, e)
		}
	}
	return out, nil
}

// setFail makes Read fail, or not.
func (l *sharedLog) setFail(fail bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail = fail
}

func (l *sharedLog) RecordCatalog(_ context.Context, digests map[string]string) ([]string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.catalogs == nil {
		l.catalogs = map[string]string{}
	}
	var changed []string
	for name, d := range digests {
		if old, ok := l.catalogs[name]; ok && old != d {
			changed = append(changed, name)
		}
		l.catalogs[name] = d
	}
	return changed, nil
}

var errDown = mcperr.New(mcperr.KindDependencyFailure)

// newListenServer is a server with a tool that notifies what its
// arguments name, a fixed resource, a template whose handler reads only
// "note://mine", a hidden resource and a prompt.
func newListenServer(t *testing.T, log stateless.EventLog, lo stateless.ListenOptions) *stateless.Server {
	t.Helper()
	s := stateless.NewServer(stateless.Implementation{Name: "listen", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, URITemplates: uritemplate.Engine{}, Events: log, Listen: lo})
	type args struct {
		Change string `json:"change"`
		URI    string `json:"uri,omitempty"`
	}
	stateless.AddTool(s, &stateless.Tool{Name: "change"}, func(ctx context.Context, req *stateless.ToolRequest, a args) (*stateless.CallToolResult, any, error) {
		switch a.Change {
		case "tools":
			req.NotifyToolsListChanged()
		case "prompts":
			req.NotifyPromptsListChanged()
		case "resources":
			req.NotifyResourcesListChanged()
		case "resource":
			req.NotifyResourceUpdated(a.URI)
		}
		return text("ok"), nil, nil
	})
	read := func(_ context.Context, r *stateless.ResourceRequest) (*stateless.ReadResourceResult, error) {
		if r.URI == "note://other" {
			return nil, mcperr.NewUnknownResource(r.URI)
		}
		return &stateless.ReadResourceResult{Contents: []stateless.ResourceContents{{URI: r.URI, Text: "x"}}}, nil
	}
	s.AddResource(&stateless.Resource{URI: "file://fixed", Name: "fixed"}, read)
	s.AddResource(&stateless.Resource{URI: "file://hidden", Name: "hidden", Visible: func(context.Context, string) bool { return false }}, read)
	s.AddResourceTemplate(&stateless.ResourceTemplate{URITemplate: "note://{id}", Name: "note"}, read)
	s.AddPrompt(&stateless.Prompt{Name: "p"}, func(context.Context, *stateless.PromptRequest) (*stateless.GetPromptResult, error) {
		return &stateless.GetPromptResult{}, nil
	})
	return s
}

const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func listen(ctx context.Context, t *testing.T, url, id, notifications string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":` + id + `,"method":"subscriptions/listen","params":{"notifications":` + notifications + `,` + modernMeta + `}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders("subscriptions/listen", "")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

func change(t *testing.T, url, args, key string) {
	t.Helper()
	k := ""
	if key != "" {
		k = `,"idempotencyKey":"` + key + `"`
	}
	body := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"change","arguments":` + args + k + `,` + modernMeta + `}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = wire.ModernHeaders("tools/call", "change")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("tools/call: %d", resp.StatusCode)
	}
}

func subscriptionID(m map[string]any) any {
	var meta map[string]any
	if p, ok := m["params"].(map[string]any); ok {
		meta, _ = p["_meta"].(map[string]any)
	} else if r, ok := m["result"].(map[string]any); ok {
		meta, _ = r["_meta"].(map[string]any)
	}
	return meta["io.modelcontextprotocol/subscriptionId"]
}

// TestListenAcknowledgesHonouredSubset: the first frame acknowledges what
// the server honours — the lists it has, the resources the caller can
// read now — with the listen's id; an absent, a hidden and an unreadable
// resource are left out alike.
func TestListenAcknowledgesHonouredSubset(t *testing.T) {
	s := newListenServer(t, nil, stateless.ListenOptions{})
	hs := httptest.NewServer(s)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	resp := listen(ctx, t, hs.URL, `"L-1"`, `{"toolsListChanged":true,"promptsListChanged":true,"resourceSubscriptions":["file://fixed","note://mine","note://other","file://hidden","file://absent","note://mine"]}`)
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	ack := wire.Next(wire.Frames(resp.Body), 2*time.Second)
	if ack["method"] != "notifications/subscriptions/acknowledged" || subscriptionID(ack) != "L-1" {
		t.Fatalf("first frame %v", ack)
	}
	n, _ := json.Marshal(ack["params"].(map[string]any)["notifications"])
	if want := `{"promptsListChanged":true,"resourceSubscriptions":["file://fixed","note://mine"],"toolsListChanged":true}`; string(n) != want {
		t.Fatalf("acknowledged %s, want %s", n, want)
	}
}

// TestListenDeliversOnlyWhatWasAsked: a change made through one request
// reaches, at once, the listen streams that asked for its type, with
// their own id; a stream that asked for prompts gets no tools change.
func TestListenDeliversOnlyWhatWasAsked(t *testing.T) {
	s := newListenServer(t, nil, stateless.ListenOptions{})
	hs := httptest.NewServer(s)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	tools := wire.Frames(listen(ctx, t, hs.URL, "7", `{"toolsListChanged":true}`).Body)
	prompts := wire.Frames(listen(ctx, t, hs.URL, "8", `{"promptsListChanged":true,"resourceSubscriptions":["note://mine"]}`).Body)
	for _, ch := range []<-chan map[string]any{tools, prompts} {
		if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("first frame %v", m)
		}
	}
	change(t, hs.URL, `{"change":"tools"}`, "")
	m := wire.Next(tools, time.Second)
	if m["method"] != "notifications/tools/list_changed" || subscriptionID(m) != float64(7) {
		t.Fatalf("tools stream got %v", m)
	}
	change(t, hs.URL, `{"change":"resource","uri":"note://mine"}`, "")
	change(t, hs.URL, `{"change":"resource","uri":"note://else"}`, "")
	m = wire.Next(prompts, time.Second)
	if m["method"] != "notifications/resources/updated" || subscriptionID(m) != float64(8) || m["params"].(map[string]any)["uri"] != "note://mine" {
		t.Fatalf("prompts stream got %v", m)
	}
	if m := wire.Next(prompts, 300*time.Millisecond); m != nil {
		t.Fatalf("prompts stream got an unrequested %v", m)
	}
	if m := wire.Next(tools, 300*time.Millisecond); m != nil {
		t.Fatalf("tools stream got an unrequested %v", m)
	}
}

// TestListenAcrossInstances: two servers share one log; a change made on
// one reaches a listen stream on the other by its next poll, once even
// when the keyed call that made it runs twice, and a fault of the log
// delays it rather than losing it.
func TestListenAcrossInstances(t *testing.T) {
	log := &sharedLog{}
	lo := stateless.ListenOptions{Poll: 50 * time.Millisecond, LookBack: 200 * time.Millisecond}
	a, b := httptest.NewServer(newListenServer(t, log, lo)), httptest.NewServer(newListenServer(t, log, lo))
	defer a.Close()
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := wire.Frames(listen(ctx, t, a.URL, "1", `{"resourceSubscriptions":["note://mine"],"resourcesListChanged":true}`).Body)
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %v", m)
	}
	change(t, b.URL, `{"change":"resource","uri":"note://mine"}`, "k-1")
	change(t, b.URL, `{"change":"resource","uri":"note://mine"}`, "k-1") // the same call again
	m := wire.Next(ch, 2*time.Second)
	if m["method"] != "notifications/resources/updated" {
		t.Fatalf("got %v", m)
	}
	if m := wire.Next(ch, 500*time.Millisecond); m != nil {
		t.Fatalf("a duplicate: %v", m)
	}
	changeWhileDown(t, log, b.URL, ch, 400*time.Millisecond)
}

// changeWhileDown changes the resource list through the server at url
// while log cannot be read: the stream ch hears nothing of it within
// quiet, then the change once the log is back.
func changeWhileDown(t *testing.T, log *sharedLog, url string, ch <-chan map[string]any, quiet time.Duration) {
	t.Helper()
	log.setFail(true)
	change(t, url, `{"change":"resources"}`, "")
	if m := wire.Next(ch, quiet); m != nil {
		t.Fatalf("delivered while the log is down: %v", m)
	}
	log.setFail(false)
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/resources/list_changed" {
		t.Fatalf("after the log came back: %v", m)
	}
}

// TestListenBridgesStreams: a client that listens again soon after a
// change (its last stream ended or was cut just before) still gets it: a
// stream reaches LookBack before its acknowledgement. A change older than
// that is not sent.
func TestListenBridgesStreams(t *testing.T) {
	log := &sharedLog{}
	lo := stateless.ListenOptions{Poll: 50 * time.Millisecond, LookBack: 400 * time.Millisecond}
	a, b := httptest.NewServer(newListenServer(t, log, lo)), httptest.NewServer(newListenServer(t, log, lo))
	defer a.Close()
	defer b.Close()
	change(t, b.URL, `{"change":"tools"}`, "")
	time.Sleep(600 * time.Millisecond) // past the look-back
	change(t, b.URL, `{"change":"resource","uri":"note://mine"}`, "")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := wire.Frames(listen(ctx, t, a.URL, "2", `{"resourceSubscriptions":["note://mine"],"toolsListChanged":true}`).Body)
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %v", m)
	}
	if m := wire.Next(ch, time.Second); m["method"] != "notifications/resources/updated" {
		t.Fatalf("the change made just before the stream: %v", m)
	}
	if m := wire.Next(ch, 300*time.Millisecond); m != nil {
		t.Fatalf("a change older than the look-back, or a duplicate: %v", m)
	}
}

// TestListenEndsWithResult: at its MaxDuration a stream ends with the
// complete result carrying the subscription's id.
func TestListenEndsWithResult(t *testing.T) {
	s := newListenServer(t, nil, stateless.ListenOptions{MaxDuration: 300 * time.Millisecond})
	hs := httptest.NewServer(s)
	defer hs.Close()
	ch := wire.Frames(listen(context.Background(), t, hs.URL, `"end"`, `{"toolsListChanged":true}`).Body)
	wire.Next(ch, time.Second)
	m := wire.Next(ch, 2*time.Second)
	r, _ := m["result"].(map[string]any)
	if m["id"] != "end" || r["resultType"] != "complete" || subscriptionID(m) != "end" {
		t.Fatalf("last frame %v", m)
	}
	if _, open := <-ch; open {
		t.Fatal("the stream went on after its result")
	}
}

// TestListenEndReadsTheLog: a stream reads the log once more as it ends,
// so that a change recorded since its last read goes out with it; while
// the log cannot be read it stays open, trying again each Poll, and ends
// once a read succeeded, with what that read found.
func TestListenEndReadsTheLog(t *testing.T) {
	log := &sharedLog{}
	lo := stateless.ListenOptions{MaxDuration: 600 * time.Millisecond, Poll: 400 * time.Millisecond, LookBack: 200 * time.Millisecond}
	a, b := httptest.NewServer(newListenServer(t, log, lo)), httptest.NewServer(newListenServer(t, log, lo))
	defer a.Close()
	defer b.Close()
	ch := wire.Frames(listen(context.Background(), t, a.URL, "3", `{"toolsListChanged":true,"resourcesListChanged":true}`).Body)
	opened := time.Now()
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %v", m)
	}
	// After the poll at 400 ms, before the end at 600 ms.
	time.Sleep(time.Until(opened.Add(450 * time.Millisecond)))
	change(t, b.URL, `{"change":"tools"}`, "")
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("the change made after the last poll: %v", m)
	}
	if m := wire.Next(ch, 2*time.Second); m["result"] == nil {
		t.Fatalf("then %v, want the result", m)
	}

	ch = wire.Frames(listen(context.Background(), t, a.URL, "4", `{"resourcesListChanged":true}`).Body)
	opened = time.Now()
	wire.Next(ch, 2*time.Second)
	time.Sleep(time.Until(opened.Add(450 * time.Millisecond)))
	// Past its end (600 ms) while the log is down, then the change.
	changeWhileDown(t, log, b.URL, ch, 450*time.Millisecond)
	if m := wire.Next(ch, 2*time.Second); m["result"] == nil {
		t.Fatalf("then %v, want the result", m)
	}
}

// TestListenRefusals: through a buffered door the method is unknown and
// discover advertises no listChanged; too many URIs, no notifications
// and a client that accepts no stream are refused precisely.
func TestListenRefusals(t *testing.T) {
	s := newListenServer(t, nil, stateless.ListenOptions{MaxResources: 2})
	body := func(n string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"subscriptions/listen","params":{` + n + modernMeta + `}}`
	}
	resp := wire.Call(t, s, http.MethodPost, wire.ModernHeaders("subscriptions/listen", ""), body(`"notifications":{"toolsListChanged":true},`))
	if resp.Status != 404 || !strings.Contains(string(resp.Body), `"code":-32601`) {
		t.Fatalf("buffered listen: %d %s", resp.Status, resp.Body)
	}
	disc := `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + modernMeta + `}}`
	resp = wire.Call(t, s, http.MethodPost, wire.ModernHeaders("server/discover", ""), disc)
	if strings.Contains(string(resp.Body), "listChanged") || strings.Contains(string(resp.Body), "subscribe") {
		t.Fatalf("buffered discover advertises listen: %s", resp.Body)
	}
	hs := httptest.NewServer(s)
	defer hs.Close()
	post := func(h http.Header, b string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL, strings.NewReader(b))
		req.Header = h
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var sb strings.Builder
		sc := bufio.NewScanner(r.Body)
		for sc.Scan() {
			sb.WriteString(sc.Text())
		}
		return r.StatusCode, sb.String()
	}
	if st, b := post(wire.ModernHeaders("server/discover", ""), disc); st != 200 || !strings.Contains(b, `"tools":{"listChanged":true}`) || !strings.Contains(b, `"subscribe":true`) {
		t.Fatalf("streaming discover: %d %s", st, b)
	}
	for _, c := range []struct {
		name, n string
		accept  string
		status  int
		code    string
	}{
		{"too many", `"notifications":{"resourceSubscriptions":["a","b","c"]},`, "", 400, "-32602"},
		{"no notifications", ``, "", 400, "-32602"},
		{"not a stream", `"notifications":{"toolsListChanged":true},`, "application/json", 406, ""},
		{"wrong type", `"notifications":{"toolsListChanged":"yes"},`, "", 400, "-32602"},
	} {
		h := wire.ModernHeaders("subscriptions/listen", "")
		if c.accept != "" {
			h.Set("Accept", c.accept)
		}
		st, b := post(h, body(c.n))
		if st != c.status || !strings.Contains(b, c.code) {
			t.Errorf("%s: %d %s", c.name, st, b)
		}
	}
}

// TestAnnounceCatalog: an instance started with the same catalog
// announces nothing; one started with another tool makes the listen
// streams of the first announce toolsListChanged, and nothing else.
func TestAnnounceCatalog(t *testing.T) {
	log := &sharedLog{}
	lo := stateless.ListenOptions{Poll: 50 * time.Millisecond}
	a := newListenServer(t, log, lo)
	if err := a.AnnounceCatalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(a)
	defer hs.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch := wire.Frames(listen(ctx, t, hs.URL, "1", `{"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}`).Body)
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/subscriptions/acknowledged" {
		t.Fatalf("first frame %v", m)
	}
	same := newListenServer(t, log, lo)
	if err := same.AnnounceCatalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := wire.Next(ch, 300*time.Millisecond); m != nil {
		t.Fatalf("the same catalog announced %v", m)
	}
	other := newListenServer(t, log, lo)
	stateless.AddTool(other, &stateless.Tool{Name: "extra"}, func(context.Context, *stateless.ToolRequest, struct{ N int }) (*stateless.CallToolResult, any, error) {
		return text("x"), nil, nil
	})
	if err := other.AnnounceCatalog(context.Background()); err != nil {
		t.Fatal(err)
	}
	if m := wire.Next(ch, 2*time.Second); m["method"] != "notifications/tools/list_changed" {
		t.Fatalf("another catalog: %v", m)
	}
	if m := wire.Next(ch, 300*time.Millisecond); m != nil {
		t.Fatalf("more than the tools changed: %v", m)
	}
	// A typed tool whose input type gains a field is another catalog.
	shared := &sharedLog{}
	announce := func(register func(s *stateless.Server)) int {
		s := stateless.NewServer(stateless.Implementation{Name: "v", Version: "1"}, &stateless.Options{Events: shared})
		register(s)
		if err := s.AnnounceCatalog(context.Background()); err != nil {
			t.Fatal(err)
		}
		shared.mu.Lock()
		defer shared.mu.Unlock()
		return len(shared.events)
	}
	type in struct{ A int }
	type inWider struct {
		A int
		B string `json:"b"`
	}
	noop := func(context.Context, *stateless.ToolRequest, in) (*stateless.CallToolResult, any, error) {
		return nil, nil, nil
	}
	if n := announce(func(s *stateless.Server) { stateless.AddTool(s, &stateless.Tool{Name: "t"}, noop) }); n != 0 {
		t.Fatalf("a first catalog published %d events", n)
	}
	if n := announce(func(s *stateless.Server) {
		stateless.AddTool(s, &stateless.Tool{Name: "t"}, func(context.Context, *stateless.ToolRequest, inWider) (*stateless.CallToolResult, any, error) {
			return nil, nil, nil
		})
	}); n != 1 {
		t.Fatalf("a wider input type published %d events, want 1", n)
	}
}
