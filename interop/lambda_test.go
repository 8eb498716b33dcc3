package interop

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/rie"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/runtimeapi"
)

var (
	buildOnce sync.Once
	bootstrap string
	buildErr  error
)

// startLambda is the serveFunc of the Lambda path: the fixture built as a
// Lambda bootstrap, under the runtime emulator, behind a loopback front
// that speaks API Gateway HTTP API events to it.
func startLambda(t *testing.T) string { return startLambdaWith(t) }

// startLambdaWith is startLambda with environment variables for the
// function.
func startLambdaWith(t *testing.T, env ...string) string {
	t.Helper()
	bootstrap := fixtureBootstrap(t)
	riePath, _ := filepath.Abs("../.tools/bin/aws-lambda-rie")
	if p := os.Getenv("AWS_LAMBDA_RIE"); p != "" {
		riePath = p
	}
	if _, err := os.Stat(riePath); err != nil {
		t.Fatalf("aws-lambda-rie is not installed (%v); run make tools", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := rie.Start(ctx, rie.Options{RIE: riePath, Bootstrap: bootstrap, Env: env})
	if err != nil {
		t.Fatal(err)
	}
	return serveFront(t, &rie.Front{Emulator: e}, func() { e.Stop() })
}

// startStreamWith serves the fixture through the streaming door, with
// environment variables for the function: the fixture built as a Lambda
// bootstrap behind the Runtime API stand-in that holds it to Lambda's
// response-streaming contract, behind the template's REST API door (its
// stage at the root of a custom domain, no authorizer).
func startStreamWith(t *testing.T, env ...string) string {
	t.Helper()
	rt, err := runtimeapi.Start(runtimeapi.Options{Bootstrap: fixtureBootstrap(t), Timeout: testTimeout, Env: append([]string{"MCP_STREAM_EVENTS=rest"}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	return serveFront(t, &rie.StreamFront{Function: rt, Door: rie.RESTAPI, REST: rie.REST{Domain: true}}, func() { rt.Stop() })
}

// serveFront serves front on loopback until the test ends, then stops it
// and calls stop.
func serveFront(t *testing.T, front http.Handler, stop func()) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: front, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		stop()
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

// fixtureBootstrap builds lambdafixture once per test binary, as Lambda
// runs it.
func fixtureBootstrap(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lambdafixture")
		if err != nil {
			buildErr = err
			return
		}
		bootstrap = filepath.Join(dir, "bootstrap")
		cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-o", bootstrap, "./lambdafixture")
		cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = &buildError{err, string(out)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return bootstrap
}

type buildError struct {
	err    error
	output string
}

func (b *buildError) Error() string {
	return "building the fixture bootstrap: " + b.err.Error() + "\n" + b.output
}

// The real clients through the Lambda path; their tools and
// input-required rounds there are cells of the client matrix
// (matrix_test.go).
func TestGoSDKUnsupportedVersionLambda(t *testing.T) {
	testGoSDKUnsupportedVersion(t, startLambda)
}
