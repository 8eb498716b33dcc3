//go:build integration

package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/kms"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/localkms"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate/awskms"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

var (
	kmsServer *localkms.Server
	kmsKey    string
)

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	if kmsServer, kmsKey, err = localkms.StartWithKey(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	kmsServer.Stop()
	os.Exit(code)
}

// serveTwoInstances serves two fixture servers that share nothing but the
// KMS key, behind a front that sends each request to the next instance in
// turn: a multi-round call's rounds land on different instances, as they
// may on Lambda.
func serveTwoInstances(t *testing.T) string {
	t.Helper()
	var calls [2]opcount.Counter
	var handlers [2]http.Handler
	for i := range handlers {
		sealer, err := reqstate.NewKMS(awskms.New(kmsServer.Client(func(o *kms.Options) { o.APIOptions = append(o.APIOptions, calls[i].Middleware) })), reqstate.KMSOptions{KeyID: kmsKey, Function: "interop",
			LocalOptions: reqstate.LocalOptions{Audience: "interop"}})
		if err != nil {
			t.Fatal(err)
		}
		handlers[i] = NewFixtureServerWith(&stateless.Options{Sealer: sealer})
	}
	var mu sync.Mutex
	next := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		h := handlers[next%2]
		next++
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.Close()
		// One instance generated a data key and sealed; the other opened
		// it after exactly one Decrypt.
		c0, c1 := calls[0].Take(), calls[1].Take()
		g0, g1, d0, d1 := c0["GenerateDataKey"], c1["GenerateDataKey"], c0["Decrypt"], c1["Decrypt"]
		if g0+g1 != 1 || d0+d1 != 1 || (g0 == 1) == (d0 == 1) {
			t.Errorf("KMS calls: instance 0 generate %d decrypt %d, instance 1 generate %d decrypt %d", g0, d0, g1, d1)
		}
	})
	return ts.URL
}

// TestGoSDKElicitationAcrossInstances: the go-sdk client drives the
// confirm tool's two rounds, sealed on one instance and opened on the
// other.
func TestGoSDKElicitationAcrossInstances(t *testing.T) {
	testGoSDKElicitation(t, serveTwoInstances)
}
