//go:build integration

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
)

// TestLargeAnswerThroughLambda: on the Lambda path with worker
// invocations and tasks in DynamoDB Local, a tasks/update answer of
// 100,000 "<" (600 KB as encoding/json escapes it) is stored, and the
// task's next run on a worker sees it whole; one over a task's 128 KiB of
// answers is refused -32602, not retryable, and the task waits on.
func TestLargeAnswerThroughLambda(t *testing.T) {
	ctx := context.Background()
	db, err := dynamolocal.StartWithTables(ctx, dynamolocal.Table{Name: "tasks", SortKey: "sk"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Stop()
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.Command("go", "build", "-tags", "lambda.norpc", "-o", bootstrap, ".")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, b)
	}
	emulator, err := filepath.Abs("../../.tools/bin/aws-lambda-rie")
	if err != nil {
		t.Fatal(err)
	}
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		emulator = p
	}
	p, err := rie.StartTaskPath(ctx, rie.TaskPathOptions{RIE: emulator, Bootstrap: bootstrap, Env: []string{
		"MCP_TASKS_TABLE=tasks", "AWS_ENDPOINT_URL_DYNAMODB=" + db.Endpoint, "AWS_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_LAMBDA_FUNCTION_NAME=conformance", "AWS_LAMBDA_FUNCTION_TIMEOUT=30"}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	defer func() {
		if t.Failed() {
			front, worker := p.Logs()
			t.Logf("front:\n%.3000s\nworker:\n%.3000s", front, worker)
		}
	}()

	const caps = `{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}`
	rpc := func(method, name, params string) (map[string]any, map[string]any) {
		t.Helper()
		res, e, err := p.Post(ctx, method, name, `{`+params+
			`,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":`+caps+`}}`)
		if err != nil {
			t.Fatal(err)
		}
		return res, e
	}
	wait := func(id, status string) map[string]any {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
			res, e := rpc("tasks/get", id, `"taskId":"`+id+`"`)
			if e != nil {
				t.Fatalf("tasks/get: %v", e)
			}
			if res["status"] == status {
				return res
			}
			if s := res["status"]; s == "completed" || s == "failed" || s == "cancelled" {
				t.Fatalf("ended %v, waiting for %s", res, status)
			}
		}
		t.Fatalf("task %s never %s", id, status)
		return nil
	}
	create := func() string {
		t.Helper()
		res, e := rpc("tools/call", "multi_input", `"name":"multi_input","arguments":{}`)
		id, _ := res["taskId"].(string)
		if e != nil || id == "" {
			t.Fatalf("multi_input: %v %v", res, e)
		}
		wait(id, "input_required")
		return id
	}
	answer := func(name string) string {
		return `"inputResponses":{"first":{"action":"accept","content":{"name":"` + name + `"}},"second":{"action":"accept","content":{"name":"yes"}}}`
	}

	id := create()
	if _, e := rpc("tasks/update", id, `"taskId":"`+id+`",`+answer(strings.Repeat("<", 100_000))); e != nil {
		t.Fatalf("tasks/update of 100,000 '<': %v", e)
	}
	done := wait(id, "completed")
	res, _ := done["result"].(map[string]any)
	if text := fmtContent(res); text != "Got "+strings.Repeat("<", 100_000)+" and yes." {
		t.Fatalf("the worker saw %d bytes of answer", len(text))
	}

	id = create()
	_, e := rpc("tasks/update", id, `"taskId":"`+id+`",`+answer(strings.Repeat("<", 140_000)))
	data, _ := e["data"].(map[string]any)
	if e == nil || e["code"] != float64(-32602) || data["retryable"] == true || data["reason"] != "task_answers_too_large" {
		t.Fatalf("an answer over the bound: %v", e)
	}
	wait(id, "input_required")
}

// fmtContent is the text of a result's one text block.
func fmtContent(res map[string]any) string {
	content, _ := res["content"].([]any)
	if len(content) != 1 {
		return ""
	}
	c, _ := content[0].(map[string]any)
	s, _ := c["text"].(string)
	return s
}
