//go:build integration

package interop

import (
	"context"
	"fmt"
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

// TestClientMatrixTasksLambda is the client matrix's cells of the tasks
// extension's client through the HTTP API and streaming doors
// (matrix_test.go, matrixTasksLambda): the note book on the production
// composition under the runtime emulator (or, behind the streaming door,
// the Runtime API stand-in in response-streaming mode), its tasks in DynamoDB Local, its workers started by
// asynchronous invocations through the Lambda Invoke API stand-in, and
// @modelcontextprotocol/ext-tasks running notes_export as a task to its
// result. It is in the integration build, inside the network namespace,
// because DynamoDB Local listens on every interface.
func TestClientMatrixTasksLambda(t *testing.T) {
	for _, door := range []string{doorHTTPAPI, doorStreaming} {
		t.Run(door, func(t *testing.T) { testClientMatrixTasksLambda(t, door) })
	}
}

func testClientMatrixTasksLambda(t *testing.T, door string) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := dynamolocal.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Stop()
	table := "matrix-tasks-" + door
	if err := dynamolocal.CreateTable(ctx, db.Client(), table); err != nil {
		t.Fatal(err)
	}
	env := []string{"MCP_CLAIMS_TABLE=" + table, "MCP_ALLOW_ANONYMOUS=true", "LOG_LEVEL=error",
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local", "AWS_ENDPOINT_URL_DYNAMODB=" + db.Endpoint}
	riePath, _ := filepath.Abs("../.tools/bin/aws-lambda-rie")
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		riePath = p
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "./functions/fixture")
	build.Dir = ".."
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building functions/fixture: %v\n%s", err, b)
	}
	tp, err := rie.StartTaskPath(ctx, rie.TaskPathOptions{RIE: riePath, Bootstrap: bootstrap, Env: env, Stream: door == doorStreaming})
	if err != nil {
		t.Fatal(err)
	}
	defer tp.Stop()
	node, err := filepath.Abs("../tools/node_modules/.bin/node")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, node, "matrix.mjs", "ext-tasks", "tasks", tp.URL)
	cmd.Dir = "../tools"
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "matrix: ok: notes_export ran as a task") {
		front, worker := tp.Logs()
		t.Fatalf("the tasks client through the %s door: %v\n%s\nfront:\n%s\nworker:\n%s", door, err, out, front, worker)
	}
	fmt.Printf("client-matrix: %s %s %s ok\n", matrixTasksLambda.client, matrixTasksLambda.feature, door)
}
