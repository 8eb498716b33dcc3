// Command mcp-smoke checks a deployed endpoint after `sam deploy` (make
// smoke URL=https://... [TOKEN=...] [STREAM_URL=...] [ORIGIN=...], in this
// repository and in a module of your own, whose mcp.mk, written by
// cmd/mcp-sam, runs it with go run): one verdict line per check, and exit
// status 1 if any failed. See docs/deploy.md, "After every deploy".
//
//	TOKEN=... go run github.com/serverless-mcp/mcp-lambda/cmd/mcp-smoke -url https://<api>/mcp [-keyed-tool <tool> -keyed-args '<json>']
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/smoke"
)

func main() {
	var c smoke.Config
	flag.StringVar(&c.URL, "url", "", "the endpoint's URL (the stack's EndpointUrl output)")
	flag.StringVar(&c.StreamURL, "stream-url", "", "the streaming door's URL (StreamingUrl), if deployed")
	flag.StringVar(&c.ConformanceURL, "conformance-url", "", "the conformance fixture's URL (ConformanceUrl), if deployed: the suite's required scenarios are run against it")
	flag.StringVar(&c.Tools, "tools", "tools", "the directory whose node_modules holds the MCP conformance suite, for -conformance-url (make tools installs it in tools/)")
	flag.StringVar(&c.Origin, "origin", "", "a browser origin the stack allows (AllowedOrigins), to check the CORS preflight")
	flag.StringVar(&c.KeyedTool, "keyed-tool", "", `the tool called twice with one idempotency key (default "notes_add")`)
	flag.StringVar(&c.KeyedArgs, "keyed-args", "", "its arguments, JSON")
	flag.StringVar(&c.ProgressTool, "progress-tool", "", `a tool that reports progress, called through the streaming door (default "notes_digest")`)
	flag.StringVar(&c.ProgressArgs, "progress-args", "", "its arguments, JSON")
	flag.DurationVar(&c.ProgressGap, "progress-gap", 0, "how long the progress tool runs on after its first report, with those arguments (default 1s, the demo's pauseMs)")
	flag.Parse()
	// The token comes from the environment, not the command line, which
	// other users of the machine can read.
	c.Token, c.StreamToken = os.Getenv("TOKEN"), os.Getenv("STREAM_TOKEN")
	if c.URL == "" {
		fmt.Fprintln(os.Stderr, "usage: make smoke URL=https://<api>/mcp [TOKEN=<bearer token>] [STREAM_URL=...] [ORIGIN=...]")
		os.Exit(2)
	}
	if (c.KeyedTool == "") != (c.KeyedArgs == "") || (c.ProgressTool == "") != (c.ProgressArgs == "") {
		fmt.Fprintln(os.Stderr, "smoke: a tool and its arguments go together")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	vs := smoke.Run(ctx, c, os.Stdout)
	if n := smoke.Failed(vs); n > 0 {
		fmt.Printf("smoke: %d of %d checks failed\n", n, len(vs))
		os.Exit(1)
	}
	fmt.Printf("smoke: %d checks, none failed\n", len(vs))
}
