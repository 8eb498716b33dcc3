//go:build integration

package claims_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims/claimstest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// table has the partition key alone (NewDynamoDB); sortedTable has
// template.yaml's composite key (NewDynamoDBWith a sort key).
const (
	table       = "claims-test"
	sortedTable = "claims-test-sorted"
)

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	if os.Getenv("MCP_CLAIMS_HELPER") != "" {
		os.Exit(helperProcess())
	}
	dynamolocal.Main(m, &local, dynamolocal.Table{Name: table}, dynamolocal.Table{Name: sortedTable, SortKey: "sk"})
}

func TestDynamoDBContract(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) claims.Store { return claims.NewDynamoDB(local.Client(), table) })
}

// TestDynamoDBContractSortKey: the same contract in a table whose primary
// key is composite, as template.yaml's (the demo keeps its notes there).
func TestDynamoDBContractSortKey(t *testing.T) {
	claimstest.Run(t, func(t *testing.T) claims.Store {
		return claims.NewDynamoDBWith(local.Client(), sortedTable, claims.DynamoDBOptions{SortKey: "sk"})
	})
}

// TestSortKeyItems: in a table with a sort key a claim is still one item
// per key, under the fixed sort key value, and a keyed call through the
// store costs what it costs without one.
func TestSortKeyItems(t *testing.T) {
	c := &opcount.Counter{}
	store := claims.NewDynamoDBWith(local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) }), sortedTable, claims.DynamoDBOptions{SortKey: "sk"})
	srv, runs := effectServer(store, nil)
	ctx := context.Background()
	key := newKey(t)
	if st, out := callTool(ctx, srv, "charge", `{"n":5}`, key); st != 200 || out["result"] == nil {
		t.Fatalf("first: %d %v", st, out)
	}
	if st, out := callTool(ctx, srv, "charge", `{"n":5}`, key); outcome(st, out) != "replay" || runs.Load() != 1 {
		t.Fatalf("second: %d %v, runs %d", st, out, runs.Load())
	}
	if ops := c.Take(); ops["PutItem"] != 2 || ops["UpdateItem"] != 1 || len(ops) != 2 {
		t.Errorf("two calls: %v, want two PutItem and one UpdateItem", ops)
	}
	out, err := local.Client().Query(ctx, &dynamodb.QueryInput{TableName: aws.String(sortedTable), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: claims.ClaimKey("alice", "charge", key)}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Items) != 1 {
		t.Fatalf("%d items under the claim's key", len(out.Items))
	}
	if sk, _ := out.Items[0]["sk"].(*types.AttributeValueMemberS); sk == nil || sk.Value != claims.ClaimSortValue {
		t.Errorf("sort key %v", out.Items[0]["sk"])
	}
	if st, _ := out.Items[0]["status"].(*types.AttributeValueMemberS); st == nil || st.Value != "completed" {
		t.Errorf("status %v", out.Items[0]["status"])
	}
}

// effectServer is a server whose side-effecting tool counts its runs.
func effectServer(store claims.Store, opts *claims.Options) (*stateless.Server, *atomic.Int32) {
	var runs atomic.Int32
	srv := stateless.NewServer(stateless.Implementation{Name: "claims", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}, Interceptors: []stateless.Interceptor{claims.New(store, opts).Interceptor()}})
	type in struct {
		N     int    `json:"n"`
		Sleep string `json:"sleep,omitempty"`
	}
	stateless.AddTool(srv, &stateless.Tool{Name: "charge"}, func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]int, error) {
		runs.Add(1)
		if d, _ := time.ParseDuration(a.Sleep); d > 0 {
			time.Sleep(d)
		}
		return nil, map[string]int{"charged": a.N}, nil
	})
	stateless.AddTool(srv, &stateless.Tool{Name: "balance", Annotations: &stateless.ToolAnnotations{ReadOnlyHint: true}},
		func(ctx context.Context, req *stateless.ToolRequest, a struct{}) (*stateless.CallToolResult, map[string]int, error) {
			return nil, map[string]int{"balance": 1}, nil
		})
	return srv, &runs
}

func callTool(ctx context.Context, srv *stateless.Server, tool, args, key string) (int, map[string]any) {
	h := http.Header{"Content-Type": {"application/json"}, "Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {tool}}
	params := `{"name":"` + tool + `","arguments":` + args
	if key != "" {
		params += `,"idempotencyKey":"` + key + `"`
	}
	params += `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`
	resp := srv.Handle(ctx, &stateless.Request{Method: "POST", Header: h, Principal: "alice",
		Body: []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`)})
	var out map[string]any
	json.Unmarshal(resp.Body, &out)
	return resp.Status, out
}

func newKey(t *testing.T) string { return fmt.Sprintf("%s-%d", t.Name(), time.Now().UnixNano()) }

// TestRoundTrips counts DynamoDB calls: a first call costs two writes, a
// duplicate one call, a read-only call none.
func TestRoundTrips(t *testing.T) {
	c := &opcount.Counter{}
	srv, runs := effectServer(claims.NewDynamoDB(local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) }), table), nil)
	ctx := context.Background()
	key := newKey(t)

	if st, out := callTool(ctx, srv, "charge", `{"n":5}`, key); st != 200 || out["result"] == nil {
		t.Fatalf("first: %d %v", st, out)
	}
	if ops := c.Take(); ops["PutItem"] != 1 || ops["UpdateItem"] != 1 || len(ops) != 2 {
		t.Errorf("first call: %v, want one PutItem and one UpdateItem", ops)
	}
	st, out := callTool(ctx, srv, "charge", `{"n":5}`, key)
	if st != 200 || runs.Load() != 1 {
		t.Fatalf("duplicate: %d %v, runs %d", st, out, runs.Load())
	}
	meta := out["result"].(map[string]any)["_meta"].(map[string]any)
	if meta[stateless.MetaReplay] != true || out["result"].(map[string]any)["structuredContent"].(map[string]any)["charged"] != float64(5) {
		t.Errorf("replay: %v", out)
	}
	if ops := c.Take(); ops["PutItem"] != 1 || len(ops) != 1 {
		t.Errorf("duplicate: %v, want one PutItem", ops)
	}
	callTool(ctx, srv, "balance", `{}`, key)
	if ops := c.Take(); len(ops) != 0 {
		t.Errorf("read-only call: %v, want none", ops)
	}
	// Same key, other arguments: a conflict, on the ALL_OLD path.
	st, out = callTool(ctx, srv, "charge", `{"n":6}`, key)
	if e, _ := out["error"].(map[string]any); st != 400 || e == nil || e["data"].(map[string]any)["type"] != "idempotency_key_conflict" || runs.Load() != 1 {
		t.Errorf("conflict: %d %v", st, out)
	}
}

// faultOption injects a failure into every DynamoDB call.
func faultOption(fail func(ctx context.Context) error) func(*dynamodb.Options) {
	return func(o *dynamodb.Options) {
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 20 * time.Millisecond })
		o.APIOptions = append(o.APIOptions, func(stack *middleware.Stack) error {
			return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("fault", func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (middleware.FinalizeOutput, middleware.Metadata, error) {
				if err := fail(ctx); err != nil {
					return middleware.FinalizeOutput{}, middleware.Metadata{}, err
				}
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
		})
	}
}

// TestFailsClosed: store down, throttled past the retries, or timing out:
// the tool does not run, the refusal is retryable, nothing is stored.
func TestFailsClosed(t *testing.T) {
	down := dynamolocal.Server{Endpoint: "http://127.0.0.1:1"}
	for name, client := range map[string]*dynamodb.Client{
		"endpoint down": down.Client(func(o *dynamodb.Options) {
			o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) { so.MaxBackoff = 20 * time.Millisecond })
		}),
		"throttled": local.Client(faultOption(func(ctx context.Context) error {
			return &types.ProvisionedThroughputExceededException{Message: aws.String("slow down")}
		})),
		"timing out": local.Client(faultOption(func(ctx context.Context) error {
			<-ctx.Done()
			return ctx.Err()
		})),
	} {
		t.Run(name, func(t *testing.T) {
			srv, runs := effectServer(claims.NewDynamoDB(client, table), nil)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			key := newKey(t)
			st, out := callTool(ctx, srv, "charge", `{"n":1}`, key)
			e, _ := out["error"].(map[string]any)
			if st != 200 || e == nil || e["code"] != float64(-32603) || e["data"].(map[string]any)["retryable"] != true ||
				e["data"].(map[string]any)["type"] != "idempotency_store_unavailable" {
				t.Errorf("%d %v", st, out)
			}
			if runs.Load() != 0 {
				t.Error("the tool ran")
			}
			got, err := local.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table),
				Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: claims.ClaimKey("alice", "charge", key)}}, ConsistentRead: aws.Bool(true)})
			if err != nil || got.Item != nil {
				t.Errorf("stored: %v %v", got.Item, err)
			}
		})
	}
}

// TestDeadlineLapses: a call whose tool outruns the Lambda deadline is
// answered with a retryable timeout before the deadline (less the
// server's 500ms margin), and holds its key only until the lease (the
// handler's time + margin) lapses; then a retry claims it and runs, and
// the late finisher writes nothing.
func TestDeadlineLapses(t *testing.T) {
	store := claims.NewDynamoDB(local.Client(), table)
	srv, runs := effectServer(store, &claims.Options{LeaseMargin: 200 * time.Millisecond})
	key := newKey(t)

	slow := make(chan int, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 600*time.Millisecond)
		defer cancel()
		st, out := callTool(ctx, srv, "charge", `{"n":1,"sleep":"900ms"}`, key)
		if e, _ := out["error"].(map[string]any); e == nil || e["data"].(map[string]any)["type"] != "timeout" {
			t.Errorf("the call past its deadline: %d %v", st, out)
		}
		slow <- st
	}()
	time.Sleep(50 * time.Millisecond)
	st, out := callTool(context.Background(), srv, "charge", `{"n":1,"sleep":"900ms"}`, key)
	if outcome(st, out) != "in_progress" {
		t.Fatalf("during the lease: %d %v", st, out)
	}
	time.Sleep(400 * time.Millisecond) // past deadline + margin
	st, out = callTool(context.Background(), srv, "charge", `{"n":1}`, key)
	if st != 200 || runs.Load() != 2 {
		t.Fatalf("after the lease: %d %v runs %d", st, out, runs.Load())
	}
	<-slow // the late finisher completes (or fails) without overwriting
	st, out = callTool(context.Background(), srv, "charge", `{"n":1}`, key)
	if outcome(st, out) != "replay" || runs.Load() != 2 {
		t.Errorf("replay after takeover: %d %v runs %d", st, out, runs.Load())
	}
}

// TestRaceGoroutines: K concurrent identical calls, one execution; every
// other caller gets in-progress or the replay.
func TestRaceGoroutines(t *testing.T) {
	trials := 5
	if n, _ := strconv.Atoi(os.Getenv("MCP_STRESS_TRIALS")); n > 0 {
		trials = n
	}
	const k = 8
	srv, runs := effectServer(claims.NewDynamoDB(local.Client(), table), nil)
	for trial := 0; trial < trials; trial++ {
		key := fmt.Sprintf("%s-%d-%d", t.Name(), time.Now().UnixNano(), trial)
		before := runs.Load()
		var wg sync.WaitGroup
		statuses := make([]string, k)
		for i := range k {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st, out := callTool(context.Background(), srv, "charge", `{"n":3,"sleep":"20ms"}`, key)
				statuses[i] = outcome(st, out)
			}()
		}
		wg.Wait()
		if got := runs.Load() - before; got != 1 {
			t.Fatalf("trial %d: %d executions (%v)", trial, got, statuses)
		}
		for _, s := range statuses {
			if s != "ran" && s != "replay" && s != "in_progress" {
				t.Fatalf("trial %d: outcome %s", trial, s)
			}
		}
	}
	t.Logf("executions/trials: %d/%d", runs.Load(), trials)
}

func outcome(st int, out map[string]any) string {
	if r, ok := out["result"].(map[string]any); ok {
		if m, _ := r["_meta"].(map[string]any); m[stateless.MetaReplay] == true {
			return "replay"
		}
		return "ran"
	}
	if e, ok := out["error"].(map[string]any); ok {
		if d, _ := e["data"].(map[string]any); d["type"] == "idempotency_key_in_progress" && st == 400 {
			return "in_progress"
		}
	}
	return fmt.Sprintf("unexpected %d %v", st, out)
}

// TestRaceProcesses: the same across K separate processes, each with its
// own client and server, sharing only the table.
func TestRaceProcesses(t *testing.T) {
	const k = 6
	key := newKey(t)
	var wg sync.WaitGroup
	results := make([]string, k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "MCP_CLAIMS_HELPER=1", "MCP_CLAIMS_ENDPOINT="+local.Endpoint, "MCP_CLAIMS_KEY="+key)
			out, err := cmd.Output()
			if err != nil {
				results[i] = "error: " + err.Error()
				return
			}
			results[i] = strings.TrimSpace(string(out))
		}()
	}
	wg.Wait()
	ran := 0
	for _, r := range results {
		switch {
		case strings.HasPrefix(r, "ran"):
			ran++
		case strings.HasPrefix(r, "replay"), strings.HasPrefix(r, "in_progress"):
		default:
			t.Errorf("process said %q", r)
		}
	}
	if ran != 1 {
		t.Errorf("%d processes ran the tool: %v", ran, results)
	}
}

// helperProcess is one process of TestRaceProcesses: it calls the tool
// once and prints what happened.
func helperProcess() int {
	srv := dynamolocal.Server{Endpoint: os.Getenv("MCP_CLAIMS_ENDPOINT")}
	s, runs := effectServer(claims.NewDynamoDB(srv.Client(), table), nil)
	st, out := callTool(context.Background(), s, "charge", `{"n":2,"sleep":"50ms"}`, os.Getenv("MCP_CLAIMS_KEY"))
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	o := outcome(st, out)
	if o == "ran" && runs.Load() != 1 {
		o = "ran-without-running"
	}
	fmt.Fprintln(w, o)
	return 0
}

// BenchmarkClaimPath measures what a claim adds to a side-effecting call:
// the same keyed tools/call through a server with DynamoDB (Local) claims
// and through one without.
func BenchmarkClaimPath(b *testing.B) {
	for _, tc := range []struct {
		name  string
		store claims.Store
	}{{"claims=dynamodb-local", claims.NewDynamoDB(local.Client(), table)}, {"claims=none", nil}} {
		b.Run(tc.name, func(b *testing.B) {
			var srv *stateless.Server
			if tc.store != nil {
				srv, _ = effectServer(tc.store, nil)
			} else {
				srv = stateless.NewServer(stateless.Implementation{Name: "plain", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{}})
				stateless.AddTool(srv, &stateless.Tool{Name: "charge"}, func(ctx context.Context, req *stateless.ToolRequest, a struct {
					N int `json:"n"`
				}) (*stateless.CallToolResult, map[string]int, error) {
					return nil, map[string]int{"charged": a.N}, nil
				})
			}
			ctx := context.Background()
			i := 0
			for b.Loop() {
				i++
				if st, _ := callTool(ctx, srv, "charge", `{"n":1}`, fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i)); st != 200 {
					b.Fatalf("status %d", st)
				}
			}
		})
	}
}
