//go:build integration

package interop

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
)

// listenInstances is how many instances the streaming door's function
// runs on in TestClientMatrixListenStreaming: a cell holds at most two
// listen streams (its client's list listening and the note's), each
// occupying an instance for as long as it is open, and its calls need
// one more.
const listenInstances = 4

// TestClientMatrixListenStreaming is the client matrix's listen cells
// (matrix_listen_test.go) through the streaming door: the note book on
// the production composition invoked in response-streaming mode through
// the Runtime API stand-in, behind the template's REST API door, on
// listenInstances instances as Lambda scales it out (rie.Pool: an
// invocation goes to an idle instance). A listen stream holds its
// instance, so the second connection's delete runs on another, and the
// change reaches the stream only through the event log the instances
// share in DynamoDB Local (the claims table, read every
// MCP_LISTEN_POLL). It is in the integration build, inside the network
// namespace, because DynamoDB Local listens on every interface.
func TestClientMatrixListenStreaming(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	db, err := dynamolocal.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Stop()
	const table = "matrix-listen"
	if err := dynamolocal.CreateTable(ctx, db.Client(), table); err != nil {
		t.Fatal(err)
	}
	bootstrap := filepath.Join(t.TempDir(), "bootstrap")
	build := exec.CommandContext(ctx, "go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "./functions/fixture")
	build.Dir = ".."
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building functions/fixture: %v\n%s", err, b)
	}
	// One request-state key for every instance, as a deployment has one
	// (its KMS key or MCP_STATE_KEY): notes_delete's two rounds may run on
	// two instances.
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	env := []string{"MCP_STREAM_EVENTS=rest", "MCP_CLAIMS_TABLE=" + table, "MCP_STATE_KEY=" + base64.StdEncoding.EncodeToString(key), "MCP_ALLOW_ANONYMOUS=true", "LOG_LEVEL=error",
		"MCP_LISTEN_POLL=200ms", "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=local", "AWS_SECRET_ACCESS_KEY=local",
		"AWS_ENDPOINT_URL_DYNAMODB=" + db.Endpoint}
	for _, c := range matrixListen {
		t.Run(c.client, func(t *testing.T) {
			url, pool := listenStreamingDoor(t, bootstrap, env)
			c.check(t, listenTarget{URL: url, Client: &http.Client{}})
			if t.Failed() {
				for i, in := range pool.Instances {
					t.Logf("instance %d's output (the end):\n%s", i, tail(in.(*runtimeapi.Runtime).Log()))
				}
				return
			}
			fmt.Printf("client-matrix: %s listen %s ok\n", c.client, doorStreaming)
		})
	}
}

// listenStreamingDoor serves the function through the streaming door on
// listenInstances instances until the test ends.
func listenStreamingDoor(t *testing.T, bootstrap string, env []string) (string, *rie.Pool) {
	t.Helper()
	pool := &rie.Pool{}
	for range listenInstances {
		rt, err := runtimeapi.Start(runtimeapi.Options{Bootstrap: bootstrap, Timeout: time.Minute, Env: env})
		if err != nil {
			t.Fatal(err)
		}
		pool.Instances = append(pool.Instances, rt)
	}
	ts := httptest.NewServer(&rie.StreamFront{Function: pool, Door: rie.RESTAPI, REST: rie.REST{Domain: true}})
	// The front's connections first, then the instances: a stream still
	// held ends with its instance (Lambda would run it to its end).
	t.Cleanup(func() {
		ts.CloseClientConnections()
		for _, in := range pool.Instances {
			in.(*runtimeapi.Runtime).Stop()
		}
		ts.Close()
	})
	return ts.URL + "/mcp", pool
}

// tail is the end of a process's output, for a failing test's log.
func tail(s string) string { return s[max(0, len(s)-6<<10):] }
