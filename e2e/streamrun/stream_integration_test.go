//go:build integration

// Package streamrun tests the streaming front door on the Lambda path:
// the conformance fixture's bootstrap, invoked for a response stream
// (MCP_STREAM_EVENTS=function-url) through a loopback Runtime API that
// passes the response on as it is written, behind a front that speaks the
// streaming prelude.
package streamrun

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
)

var build struct {
	once sync.Once
	path string
	err  error
}

// bootstrap builds the fixture as the template builds it (for this
// machine's architecture), or is MCP_STREAMRUN_BOOTSTRAP when set: another
// build, an older commit's, say, held to the same contract.
func bootstrap(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCP_STREAMRUN_BOOTSTRAP"); p != "" {
		return p
	}
	build.once.Do(func() {
		dir, err := os.MkdirTemp("", "streamrun")
		if err != nil {
			build.err = err
			return
		}
		build.path = filepath.Join(dir, "bootstrap")
		root, err := repo.Root()
		if err != nil {
			build.err = err
			return
		}
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", build.path, "./functions/conformance")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = err
			build.path = string(out)
		}
	})
	if build.err != nil {
		t.Fatalf("building the fixture: %v %s", build.err, build.path)
	}
	return build.path
}

// door starts the fixture behind a front for d: a streaming one (the
// REST door, a function URL), or the buffered one (an HTTP API's event,
// answered whole). It returns the endpoint's URL at that door.
func door(t *testing.T, d rie.Door) string {
	t.Helper()
	rt, err := runtimeapi.Start(runtimeapi.Options{Bootstrap: bootstrap(t), Timeout: 60 * time.Second,
		Env: []string{"MCP_STREAM_EVENTS=rest,function-url", "MCP_REQUEST_TIMEOUT=28s"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: &rie.StreamFront{Function: rt, Door: d}, ReadHeaderTimeout: 10 * time.Second}
	go hs.Serve(ln)
	t.Cleanup(func() {
		hs.Close()
		rt.Stop()
		if t.Failed() {
			t.Logf("function output:\n%s", rt.Log())
		}
	})
	if d == rie.RESTAPI {
		return "http://" + ln.Addr().String() + "/" + rie.RESTStage + "/mcp"
	}
	return "http://" + ln.Addr().String() + "/mcp"
}

type arrival struct {
	at  time.Duration
	msg map[string]any
}

// ticks calls the fixture's ticks tool and returns each event with the
// time it arrived.
func ticks(t *testing.T, url string, count, intervalMs int) (http.Header, []arrival) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"ticks","arguments":{"count":` + itoa(count) + `,"intervalMs":` + itoa(intervalMs) +
		`},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {"ticks"}}
	start := time.Now()
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []arrival
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			if strings.HasPrefix(line, "{") {
				data = line // a JSON answer
			} else {
				continue
			}
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		out = append(out, arrival{time.Since(start), m})
	}
	return resp.Header, out
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

// TestLiveProgressThroughLambda: through the streaming doors (the REST
// door and a function URL) each progress report reaches the client as the
// tool makes it, in order, before the result; through the buffered door
// all of them come with the result.
func TestLiveProgressThroughLambda(t *testing.T) {
	for _, d := range []rie.Door{rie.RESTAPI, rie.FunctionURL, rie.HTTPAPI} {
		buffered := d == rie.HTTPAPI
		h, events := ticks(t, door(t, d), 20, 100)
		if len(events) != 21 || events[20].msg["result"] == nil {
			t.Fatalf("buffered=%v: %d events, last %v", buffered, len(events), events[len(events)-1].msg)
		}
		for i, e := range events[:20] {
			if p := e.msg["params"].(map[string]any)["progress"]; p != float64(i+1) {
				t.Fatalf("event %d has progress %v", i, p)
			}
		}
		first, result := events[0].at, events[20].at
		t.Logf("%v: Content-Type %s, first event after %v, result after %v", d, h.Get("Content-Type"), first, result)
		// The tool takes 2 s: a stream delivers the first report about
		// 1.9 s before the result; a buffered answer all at once.
		if streamed := result-first > time.Second; streamed == buffered {
			t.Fatalf("buffered=%v: first event %v, result %v", buffered, first, result)
		}
	}
}

// TestLongCallThroughLambda: a call of 35 s completes through the
// streaming door; the buffered door answers it, at its 28 s bound, with a
// retryable timeout refusal, in-band, not a cut connection.
func TestLongCallThroughLambda(t *testing.T) {
	var wg sync.WaitGroup
	results := make([][]arrival, 2)
	for i, d := range []rie.Door{rie.RESTAPI, rie.HTTPAPI} {
		url := door(t, d)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, results[i] = ticks(t, url, 35, 1000)
		}()
	}
	wg.Wait()
	streamed, buffered := results[0], results[1]
	if n := len(streamed); n != 36 || streamed[35].msg["result"] == nil || streamed[35].at < 35*time.Second {
		t.Fatalf("streaming door: %d events, last %v", n, streamed[n-1])
	}
	last := buffered[len(buffered)-1].msg
	e, _ := last["error"].(map[string]any)
	data, _ := e["data"].(map[string]any)
	if e == nil || data["type"] != "timeout" || data["retryable"] != true || data["longerThanRequest"] != true || buffered[len(buffered)-1].at > 29*time.Second {
		t.Fatalf("buffered door: %v after %v", last, buffered[len(buffered)-1].at)
	}
	t.Logf("streaming door: result after %v; buffered door: timeout refusal after %v", streamed[35].at, buffered[len(buffered)-1].at)
}
