// Package harness holds what the chaos run (e2e/chaos) and the abuse run
// (e2e/abuse) do the same way, so that the two cannot drift apart where
// they mean the same thing: how a client speaks MCP over HTTP and reads
// the answer (mcp.go), how a front turns an HTTP request into one Lambda
// invocation and its output back into an answer (front.go), the loopback
// servers a run starts and stops (servers.go), and the latency figures
// of its report (Percentile). What each run counts, injects or checks
// stays in its own package: the two read answers into classes of their
// own, and their fronts pick instances by different rules.
package harness
