package main

import (
	"bufio"
	"context"
	"encoding/json"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// TestOperatorSignalsThroughEmulator runs the real bootstrap under the
// Lambda runtime emulator with its table's endpoint down, and reads what
// an operator would read: every line the function prints is JSON, every
// request line is a valid EMF document, the first request is the cold
// start, and the keyed call that finds the store down (the tool does not
// run) is one ERROR line with its kind, its cause, the invocation's
// request id and the caller's traceparent. (The emulator hands functions
// no X-Ray header — its tracer is a no-op — so the X-Ray trace id is
// tested in package observe, under the context key aws-lambda-go sets.)
func TestOperatorSignalsThroughEmulator(t *testing.T) {
	riePath := rieBinary(t)
	bootstrap := buildBootstrap(t, runtime.GOARCH)
	down, err := loopback.FreePort() // nothing listens there
	if err != nil {
		t.Fatal(err)
	}
	env := []string{
		endpoint.EnvStateKey + "=" + testEnv[endpoint.EnvStateKey],
		endpoint.EnvAllowAnonymous + "=true",
		endpoint.EnvLogLevel + "=info",
		endpoint.EnvClaimsTable + "=notes",
		endpoint.EnvMetricsNS + "=mcp-test",
		"AWS_ENDPOINT_URL_DYNAMODB=http://" + loopback.Addr(down),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=2",
		"AWS_LAMBDA_FUNCTION_NAME=mcp-fn",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()

	const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, ev := range []string{"../../events/discover.json", "../../events/notes-add-keyed.json"} {
		payload := withHeader(t, ev, "traceparent", traceparent)
		if _, err := e.Invoke(ctx, payload); err != nil {
			t.Fatalf("%s: %v\n%s", ev, err, e.Log())
		}
	}

	// The emulator forwards the function's output on its own time: wait
	// for both request lines rather than read the log at once.
	for end := time.Now().Add(5 * time.Second); strings.Count(e.Log(), `"msg":"request"`) < 2 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	var requests []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.Log()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue // the emulator's own lines
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a function line is not JSON: %v\n%s", err, line)
		}
		if m["msg"] != "request" {
			continue
		}
		metrics, err := emfcheck.Check([]byte(line))
		if err != nil {
			t.Fatalf("a request line is not valid EMF: %v\n%s", err, line)
		}
		for _, mt := range metrics {
			if mt.Namespace != "mcp-test" || mt.Dimensions["Function"] != "mcp-fn" {
				t.Errorf("metric %+v: want namespace mcp-test and Function mcp-fn", mt)
			}
		}
		m["_metrics"] = metrics
		requests = append(requests, m)
	}
	if len(requests) != 2 {
		t.Fatalf("%d request lines, want 2:\n%s", len(requests), e.Log())
	}
	discover, add := requests[0], requests[1]
	if discover["level"] != "INFO" || discover["Method"] != "server/discover" || !hasMetric(discover, "ColdStart", 1) || !hasMetric(discover, "Faults", 0) {
		t.Errorf("discover line: %v", discover)
	}
	want := map[string]any{
		"level": "ERROR", "fault": true, "Outcome": "store_unavailable", "ClaimOutcome": "store_unavailable", "Tool": "notes_add",
		"traceparent": traceparent, "gateway_request_id": "r-notes-add-keyed",
		"aws_service": "DynamoDB", "aws_operation": "PutItem",
	}
	for k, v := range want {
		if add[k] != v {
			t.Errorf("store-down line: %s = %v, want %v\n%s", k, add[k], v, e.Log())
		}
	}
	if c, _ := add["cause"].(string); !strings.Contains(c, "claims: store unavailable") || !strings.Contains(c, "connection refused") {
		t.Errorf("store-down cause = %q", c)
	}
	if id, _ := add["request_id"].(string); id == "" {
		t.Errorf("no Lambda request id: %v", add)
	}
	if !hasMetric(add, "Faults", 1) || !hasMetric(add, "Claims", 1) || hasMetric(add, "ColdStart", 1) {
		t.Errorf("store-down metrics: %v", add["_metrics"])
	}
	if strings.Contains(e.Log(), "Pay the rent") || strings.Contains(e.Log(), "7b1f2c9e-rent") {
		t.Errorf("argument text in the logs:\n%s", e.Log())
	}
}

// withHeader returns the event in path with one more header.
func withHeader(t *testing.T, path, name, value string) []byte {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	ev["headers"].(map[string]any)[name] = value
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func hasMetric(line map[string]any, name string, value float64) bool {
	for _, m := range line["_metrics"].([]emfcheck.Metric) {
		if m.Name == name && m.Value == value {
			return true
		}
	}
	return false
}
