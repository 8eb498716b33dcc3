// Package bench compares the cost of answering the same MCP 2026-07-28
// requests in process with this project's stateless server, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk), with mcp-go
// (github.com/mark3labs/mcp-go), and with a floor that only decodes the
// request and encodes a canned response with encoding/json.
//
// It is a separate module so that the peers never enter the main module's
// go.mod. Every implementation is reached through its http.Handler with an
// httptest.ResponseRecorder and a fresh *http.Request per iteration, so the
// harness costs the same for all of them. The answers are verified by the
// TestAnswers* tests before they are measured; an answer that a peer gets
// wrong is recorded as a finding (see findings.go) and its benchmark is
// skipped.
//
// Run the benchmarks with
//
//	go test -run='^$' -bench=. -benchmem
//
// or print a Markdown table of medians and ratios with
//
//	go run ./report
package bench
