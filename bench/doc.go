// Package bench compares the cost of answering the same MCP 2026-07-28
// requests in process with this project's stateless server, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk), with mcp-go
// (github.com/mark3labs/mcp-go), and with a floor that only decodes the
// request and encodes a canned response with encoding/json.
//
// It is a separate module so that the peers never enter the main module's
// go.mod. Each implementation is built in a package of its own
// (impl/ours, impl/gosdk, impl/mcpgo, sharing the tool types of
// impl/tools), so that a Lambda binary can link one alone (cmd/...); this
// package imports them all.
//
// Every implementation is reached through its http.Handler with an
// httptest.ResponseRecorder and a fresh *http.Request per iteration, so the
// harness costs the same for all of them. The Lambda* benchmarks send the
// same requests as API Gateway HTTP API (payload 2.0) events: ours through
// pkg/apigw.Handler, our production path, and ours and the peers through
// one minimal net/http adapter (impl/lambdahttp). Ours is measured twice:
// as by default, each tool handler on the request's goroutine with a timer
// ready to answer it in-band at its deadline should it ignore its context
// (the recorder and the Lambda runtime's early answer let the answer leave
// before the handler returns), and as ours-inline, its tools declared
// stateless.Tool.Inline, which answers an overrun when the handler
// returns, as the peers do. The answers are verified
// by the TestAnswers* and TestLambda* tests, and again before each
// benchmark is timed; an answer that a peer gets wrong is recorded as a
// finding (see findings.go) and its benchmark is skipped.
//
// Run the benchmarks with
//
//	go test -run='^$' -bench=. -benchmem
//
// measure binary sizes, cold start and warm latency under the Lambda
// runtime emulator with
//
//	go run ./coldstart
//
// or run both and write ../docs/performance.md with
//
//	go run ./report
package bench
