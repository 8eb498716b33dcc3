//go:build integration

package notebook

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/endpoint"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// keyedEnlistedRequests is the line TestKeyedEnlistedRequests logs, which
// bench/report reads: the DynamoDB requests of a keyed notes_add (a tool
// whose only effect is enlisted DynamoDB writes), first and replay.
const keyedEnlistedRequests = "DynamoDB requests per keyed enlisted call: first %d, replay %d"

// TestKeyedEnlistedRequests counts, at a proxy in front of DynamoDB Local,
// the DynamoDB requests of a keyed notes_add on the demo built as on
// Lambda (claims and notes in the table, the calls quota off: it would
// add one UpdateItem to every call): one TransactWriteItems for the first
// call (the claim, the note, its count and the result), one for its
// replay (the same transaction, cancelled by the claim's condition,
// which returns the winner's record). A full book costs the same one
// request and answers note_limit_reached. bench/report prints the line
// it logs.
func TestKeyedEnlistedRequests(t *testing.T) {
	const transactWrite = "DynamoDB_20120810.TransactWriteItems"
	local := localDynamoDB(t)
	// The test's proxy of the SAM-local test: it counts each request as
	// it reaches the network, the SDK's own retries included, as
	// DynamoDB bills them and as a caller waits for them.
	proxy := newCountingProxy(t, local.Endpoint)
	proxyURL := "http://" + proxy.addr
	cfg, err := endpoint.LoadConfig(func(k string) string {
		return map[string]string{endpoint.EnvAllowAnonymous: "true", endpoint.EnvClaimsTable: notesTable, endpoint.EnvQuotas: "calls=off"}[k]
	})
	if err != nil {
		t.Fatal(err)
	}
	clients := &endpoint.Clients{Configure: func(c *aws.Config) {
		local.Configure(c)
		c.BaseEndpoint = aws.String(proxyURL)
	}}
	srv, err := newServerWith(cfg, discardLogger(), nil, clients)
	if err != nil {
		t.Fatal(err)
	}
	c := &demoClient{t: t, srv: srv, principal: fmt.Sprint("requests-", time.Now().UnixNano()), timeout: 5 * time.Second}
	args := `"name":"notes_add","arguments":{"text":"counted"},"idempotencyKey":"counted-1"`
	proxy.take()
	first := c.call("tools/call", "notes_add", args)
	firstOps := proxy.take()
	replay := c.call("tools/call", "notes_add", args)
	replayOps := proxy.take()
	id, _ := structured(first)["id"].(string)
	if id == "" || isReplay(first) {
		t.Fatalf("first: %v", first)
	}
	if !isReplay(replay) || structured(replay)["id"] != id {
		t.Fatalf("replay: %v", replay)
	}
	if !maps.Equal(firstOps, map[string]int{transactWrite: 1}) || !maps.Equal(replayOps, map[string]int{transactWrite: 1}) {
		t.Errorf("DynamoDB requests: first %v, replay %v; want one TransactWriteItems each", firstOps, replayOps)
	}
	if n, count := countNotes(t, c.principal, "counted"); n != 1 || count != 1 {
		t.Errorf("%d notes, counter %d", n, count)
	}
	t.Logf(keyedEnlistedRequests, total(firstOps), total(replayOps))

	// A book one note from full, then full: the last add and the refused
	// one are one transaction each, nothing read before them.
	client := local.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(proxyURL) })
	g := claims.New(claims.NewDynamoDBWith(client, notesTable, claims.DynamoDBOptions{SortKey: endpoint.TableSortKey}), nil)
	small := taskServer(stateless.Implementation{Name: "small", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{g.Interceptor()}})
	(&demo{notes: dynamoNotes(client, notesTable, 1)}).register(small)
	c = &demoClient{t: t, srv: small, principal: fmt.Sprint("full-", time.Now().UnixNano()), timeout: 5 * time.Second}
	if r := c.call("tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"last"},"idempotencyKey":"last"`); structured(r)["id"] == nil {
		t.Fatalf("the last note: %v", r)
	}
	proxy.take()
	r := c.call("tools/call", "notes_add", `"name":"notes_add","arguments":{"text":"one too many"},"idempotencyKey":"too-many"`)
	if f := toolFailure(t, r); f["code"] != "note_limit_reached" || f["retryable"] != nil {
		t.Errorf("a full book: %v", r)
	}
	if ops := proxy.take(); !maps.Equal(ops, map[string]int{transactWrite: 1}) {
		t.Errorf("a full book's keyed add: %v, want one TransactWriteItems", ops)
	}
}

// total is how many requests ops counts.
func total(ops map[string]int) int {
	n := 0
	for _, v := range ops {
		n += v
	}
	return n
}
