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
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: &rie.Front{Emulator: e}, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() {
		srv.Close()
		e.Stop()
	})
	return "http://" + ln.Addr().String() + "/mcp"
}

type buildError struct {
	err    error
	output string
}

func (b *buildError) Error() string {
	return "building the fixture bootstrap: " + b.err.Error() + "\n" + b.output
}

// The real clients through the Lambda path, with the same expectations as
// over net/http.
func TestGoSDKLambda(t *testing.T)            { testGoSDK(t, startLambda) }
func TestGoSDKElicitationLambda(t *testing.T) { testGoSDKElicitation(t, startLambda) }
func TestMCPGoLambda(t *testing.T)            { testMCPGo(t, startLambda) }
func TestMCPGoElicitationLambda(t *testing.T) { testMCPGoElicitation(t, startLambda) }
func TestGoSDKUnsupportedVersionLambda(t *testing.T) {
	testGoSDKUnsupportedVersion(t, startLambda)
}
