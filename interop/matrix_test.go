//go:build unix && !integration

package interop

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

// The client matrix: which real client gets which feature through which
// door. Each verified cell is a test run by TestClientMatrix, which prints
// `client-matrix: <client> <feature> <door> ok` when it passes; each gap
// says what a user does instead. docs/clients.md is generated from this
// table (TestClientsDoc; make regen), so the page claims exactly what the
// tests verify.

// The doors, as the template deploys them (and the local server).
const (
	doorLocal     = "local"     // the endpoint as a local HTTP server
	doorHTTPAPI   = "http-api"  // the buffered HTTP API door: Lambda under the emulator
	doorStreaming = "streaming" // the REST API streaming door: Lambda's response streaming
)

var matrixDoors = []string{doorLocal, doorHTTPAPI, doorStreaming}

// matrixCell is one client and feature, through every door, verified by
// check or (check nil) a gap.
type matrixCell struct {
	client, feature string
	// check verifies the cell through a door.
	check func(t *testing.T, door string)
	// gap, for a cell not verified: what a user of the client does.
	gap string
}

// fixtureDoor serves the interop fixture through door.
func fixtureDoor(door string, env ...string) serveFunc {
	switch door {
	case doorLocal:
		if len(env) > 0 {
			return serveKeyed
		}
		return startServer
	case doorHTTPAPI:
		return func(t *testing.T) string { return startLambdaWith(t, env...) }
	}
	return func(t *testing.T) string { return startStreamWith(t, env...) }
}

// authDoor is the authorization rig's target for door: the note book on
// the production composition, protected by a real authorization server.
func authDoor(door string) authTarget {
	switch door {
	case doorLocal:
		return authTarget{"Local", reserveLocal}
	case doorHTTPAPI:
		return authTarget{"Lambda", reserveLambda}
	}
	return authTarget{"StreamingDoor", reserveStreamREST}
}

var clientMatrix = []matrixCell{
	{client: "go-sdk", feature: "tools", check: func(t *testing.T, door string) { testGoSDK(t, fixtureDoor(door)) }},
	{client: "go-sdk", feature: "input-required", check: func(t *testing.T, door string) { testGoSDKElicitation(t, fixtureDoor(door)) }},
	{client: "go-sdk", feature: "idempotent-retries", check: func(t *testing.T, door string) {
		testGoSDKIdempotency(t, fixtureDoor(door, "MCP_FIXTURE=keyed"), door != doorLocal)
	}},
	{client: "go-sdk", feature: "oauth-discovery", check: func(t *testing.T, door string) {
		testAuthDiscovery(t, authDoor(door), nil, false, scopeRead+" "+scopeWrite)
	}},
	{client: "go-sdk", feature: "oauth-step-up", check: func(t *testing.T, door string) {
		testAuthDiscovery(t, authDoor(door), []string{"MCP_AUTH_SCOPES_SUPPORTED=" + scopeRead}, true, scopeRead)
	}},
	{client: "go-sdk", feature: "tasks", gap: "go-sdk v1.8.0 does not declare the tasks extension, so a tool that requires a task is refused -32021 (missing capability): " +
		"give the tool TaskSupportOptional (it then runs in the request), or call it with the extension's own client"},
	{client: "mcp-go", feature: "tools", check: func(t *testing.T, door string) { testMCPGo(t, fixtureDoor(door)) }},
	{client: "mcp-go", feature: "input-required", check: func(t *testing.T, door string) { testMCPGoElicitation(t, fixtureDoor(door)) }},
	{client: "mcp-go", feature: "idempotent-retries", gap: "not in the matrix yet. Neither SDK sets an idempotency key itself: add the Idempotency-Key header " +
		"in the client's HTTP transport, as the go-sdk cell does; a call without a key is not deduplicated, and a retry runs it again"},
	{client: "mcp-go", feature: "tasks", gap: "mcp-go v1.2.1's client does not declare the tasks extension either: as for go-sdk"},
	{client: "typescript-sdk-v2", feature: "all", gap: "not in the matrix yet (make conformance runs the TypeScript client against the conformance fixture, docs/conformance.md): " +
		"by default it negotiates a legacy revision, where input-required tools answer an isError text and task tools -32021; " +
		"pin versionNegotiation to 2026-07-28"},
	{client: "inspector-cli", feature: "all", gap: "not in the matrix yet (make conformance runs it, docs/conformance.md): " +
		"it negotiates the legacy protocol unless run with --protocol-era modern"},
}

// TestClientMatrix runs every verified cell through every door.
func TestClientMatrix(t *testing.T) {
	for _, c := range clientMatrix {
		if c.check == nil {
			continue
		}
		for _, door := range matrixDoors {
			t.Run(c.client+"/"+c.feature+"/"+door, func(t *testing.T) {
				c.check(t, door)
				if !t.Failed() {
					fmt.Printf("client-matrix: %s %s %s ok\n", c.client, c.feature, door)
				}
			})
		}
	}
}

var updateDoc = flag.Bool("update", false, "rewrite docs/clients.md from the client matrix")

// TestClientsDoc: docs/clients.md is the client matrix, rendered; with
// -update (make regen) it is rewritten.
func TestClientsDoc(t *testing.T) {
	const path = "../docs/clients.md"
	got := renderClientsDoc()
	if *updateDoc {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("docs/clients.md is not the client matrix (%v): regenerate it with make regen, and review the diff", err)
	}
}

// renderClientsDoc renders the matrix as docs/clients.md.
func renderClientsDoc() []byte {
	var b strings.Builder
	b.WriteString(`# Clients

Which real MCP client gets which feature through which door. Generated
from the client matrix (interop/matrix_test.go) by ` + "`make regen`" + `; every
"ok" is a test that ` + "`make test`" + ` runs (TestClientMatrix), printing
` + "`client-matrix: <client> <feature> <door> ok`" + ` when it passes.

Doors: ` + "`local`" + ` the endpoint as a local HTTP server; ` + "`http-api`" + ` the
template's buffered HTTP API door (the function under the Lambda runtime
emulator, behind a front that speaks API Gateway's events); ` + "`streaming`" + ` its
REST API streaming door (Lambda's response streaming, held to AWS's
contract by the Runtime API stand-in). Clients: go-sdk v1.8.0
(github.com/modelcontextprotocol/go-sdk) and mcp-go v1.2.1
(github.com/mark3labs/mcp-go), at 2026-07-28 unless a cell says
otherwise; ` + "`tools`" + ` also runs each legacy revision the client can pin.
Features: ` + "`tools`" + ` lists and calls tools, with structured results and
errors; ` + "`input-required`" + ` answers an input-required round (elicitation)
and retries with the sealed request state; ` + "`idempotent-retries`" + ` sends a
key (the Idempotency-Key header, set in the client's HTTP transport:
neither SDK has a setting for it) and gets the replay, the in-progress,
conflict and invalid-key refusals intact; ` + "`oauth-discovery`" + ` goes from a
401 to a token (client credentials) through the protected-resource
metadata; ` + "`oauth-step-up`" + ` also answers a 403 insufficient_scope by asking
for more. The OAuth cells run against a real authorization server
(oauth2-mock-server); docs/auth.md and docs/auth-providers.md have the
providers, and ` + "`make journeys`" + ` the self-registering client's journeys.

| client | feature | ` + strings.Join(matrixDoors, " | ") + ` |
|---|---|` + strings.Repeat("---|", len(matrixDoors)) + `
`)
	for _, c := range clientMatrix {
		if c.check == nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s |%s\n", c.client, c.feature, strings.Repeat(" ok |", len(matrixDoors)))
	}
	b.WriteString(`
## Gaps, and what to do

| client | feature | what a user does |
|---|---|---|
`)
	for _, c := range clientMatrix {
		if c.check != nil {
			continue
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", c.client, c.feature, c.gap)
	}
	return []byte(b.String())
}
