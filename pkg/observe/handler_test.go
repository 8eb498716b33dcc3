package observe_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/pkg/apigw"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/observe"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestToolAuthorsObservability: a tool logs through its request's logger
// and emits a metric; its failing HTTP dependency is named, host and
// status, in the request's fault line. The log record carries the
// request's fields (request id, trace ids, method, tool, a digest of the
// principal), the metric is in the line's EMF by Function and Tool (by
// Function alone with NoToolDimension), and the call's argument text
// appears nowhere.
func TestToolAuthorsObservability(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	u, _ := url.Parse(down.URL)
	const secret = "ARGUMENT-TEXT-7f3a"
	for _, noTool := range []bool{false, true} {
		var buf logBuffer
		ob := observe.New(&buf, observe.Options{Namespace: "ns", Function: "fn", NoToolDimension: noTool})
		srv := stateless.NewServer(stateless.Implementation{Name: "t", Version: "1"}, &stateless.Options{Observe: ob.Observe, HandlerLogger: ob.Logger()})
		stateless.AddTool(srv, &stateless.Tool{Name: "fetch", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
			func(ctx context.Context, req *stateless.ToolRequest, in textIn) (*stateless.CallToolResult, any, error) {
				req.Logger().Info("fetching", "bytes", len(in.Text))
				if err := req.Metric("FetchesTried", 1, stateless.MetricUnitCount); err != nil {
					return nil, nil, err
				}
				if req.Metric("Requests", 1, stateless.MetricUnitCount) == nil || req.Metric("fetch", 1, stateless.MetricUnitCount) == nil {
					return nil, nil, errors.New("a reserved or malformed metric name was taken")
				}
				resp, err := http.Get(down.URL + "/?q=" + url.QueryEscape(in.Text))
				if resp != nil {
					resp.Body.Close()
				}
				if err == nil && resp.StatusCode >= 500 {
					return nil, nil, mcperr.NewRetryLater(time.Second, mcperr.HTTPDependency(u.Host, resp, nil))
				}
				return nil, nil, err
			})
		h := &apigw.Handler{Server: srv}
		invoke(t, h, callTool("fetch", `{"text":"`+secret+`"}`), 5*time.Second)
		raw := buf.Take()
		if strings.Contains(raw, secret) {
			t.Fatalf("argument text in the logs:\n%s", raw)
		}
		var record, line map[string]any
		for _, l := range strings.Split(strings.TrimSpace(raw), "\n") {
			var m map[string]any
			if err := json.Unmarshal([]byte(l), &m); err != nil {
				t.Fatalf("not JSON: %s", l)
			}
			switch m["msg"] {
			case "fetching":
				record = m
			case "request":
				line = m
				if _, err := emfcheck.Check([]byte(l)); err != nil {
					t.Fatalf("not EMF: %v\n%s", err, l)
				}
			}
		}
		if record == nil || line == nil {
			t.Fatalf("the tool's record and the request's line:\n%s", raw)
		}
		for k, want := range map[string]any{"request_id": "inv-1", "method": "tools/call", "target": "fetch",
			"principal_digest": stateless.PrincipalDigest(stateless.Anonymous), "traceparent": traceparent, "bytes": float64(len(secret))} {
			if record[k] != want {
				t.Errorf("record %s = %v, want %v: %v", k, record[k], want, record)
			}
		}
		if record["xray_trace_id"] == nil {
			t.Errorf("record without the X-Ray trace id: %v", record)
		}
		if line["dependency_host"] != u.Host || line["dependency_status"] != float64(503) || line["fault"] != true {
			t.Errorf("the fault line does not name the dependency: %v", line)
		}
		b, _ := json.Marshal(line)
		ms, err := emfcheck.Check(b)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, m := range ms {
			if m.Name == "FetchesTried" {
				found = true
				dims := fmt.Sprint(m.Dimensions)
				if m.Value != 1 || noTool == strings.Contains(dims, "Tool") {
					t.Errorf("NoToolDimension %v: FetchesTried %v by %s", noTool, m.Value, dims)
				}
			}
		}
		if !found {
			t.Errorf("no FetchesTried metric: %s", b)
		}
	}
}
