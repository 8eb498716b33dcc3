//go:build integration

package claims_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/ddbfault"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// completionRig is a server over the sorted table with two side-effecting
// tools: "enlisted", whose effect (an item) is enlisted in the claim's
// completion, and "charge", whose effect is outside the table; and the
// outcomes of its requests.
type completionRig struct {
	srv  *stateless.Server
	f    *ddbfault.Faults
	runs atomic.Int32
	outcomeLog
}

func newCompletionRig(t *testing.T) *completionRig {
	r := &completionRig{f: &ddbfault.Faults{}}
	client := local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, r.f.Middleware) })
	g := claims.New(claims.NewDynamoDBWith(client, sortedTable, claims.DynamoDBOptions{SortKey: "sk"}), nil)
	r.srv = stateless.NewServer(stateless.Implementation{Name: "completion", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{g.Interceptor()}, Observe: r.record})
	type in struct {
		ID string `json:"id"`
	}
	stateless.AddTool(r.srv, &stateless.Tool{Name: "enlisted"}, func(ctx context.Context, _ *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]string, error) {
		r.runs.Add(1)
		put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(sortedTable),
			Item:                map[string]types.AttributeValue{"pk": str("effect#" + a.ID), "sk": str("effect")},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}
		if !claims.Enlist(ctx, put) {
			return nil, nil, errors.New("not enlisted")
		}
		return nil, map[string]string{"put": a.ID}, nil
	})
	stateless.AddTool(r.srv, &stateless.Tool{Name: "charge"}, func(ctx context.Context, _ *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]string, error) {
		r.runs.Add(1)
		return nil, map[string]string{"charged": a.ID}, nil
	})
	return r
}

// recorded is what the tests read of a request's stateless.Outcome.
// outcomeLog records what a rig's server observed of each request.
type outcomeLog struct {
	mu       sync.Mutex
	outcomes []recorded
}

// record is a server's Observe.
func (l *outcomeLog) record(_ context.Context, o *stateless.Outcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.outcomes = append(l.outcomes, recorded{Fault: o.Fault, Claim: o.Claim, Err: o.Err})
}

type recorded struct {
	Fault bool
	Claim string
	Err   error
}

func (r *completionRig) lastOutcome() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[len(r.outcomes)-1]
}

func (r *completionRig) call(t *testing.T, timeout time.Duration, tool, id, key string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, out := callTool(ctx, r.srv, tool, `{"id":"`+id+`"}`, key)
	if st != http.StatusOK {
		t.Fatalf("%s: status %d: %v", tool, st, out)
	}
	return out
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

// item reads one item of the sorted table, bypassing the faults.
func item(t *testing.T, pk, sk string) map[string]types.AttributeValue {
	t.Helper()
	out, err := local.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(sortedTable),
		Key: map[string]types.AttributeValue{"pk": str(pk), "sk": str(sk)}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Item
}

func claimStatus(t *testing.T, tool, key string) string {
	it := item(t, claims.ClaimKey("alice", tool, key), claims.ClaimSortValue)
	if it == nil {
		return "absent"
	}
	return it["status"].(*types.AttributeValueMemberS).Value
}

func isReplay(out map[string]any) bool {
	res, _ := out["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	return meta[stateless.MetaReplay] == true
}

func errorType(out map[string]any) (string, bool) {
	e, _ := out["error"].(map[string]any)
	d, _ := e["data"].(map[string]any)
	typ, _ := d["type"].(string)
	retry, _ := d["retryable"].(bool)
	return typ, retry
}

// TestCompletionSurvivesLostAnswers: the write that completes a claim is
// applied but its answer lost, once or every time; or it cannot be sent;
// or the tool's own condition fails at commit. In each case the key's
// effect happens exactly once, the client is never told "done" for an
// effect that did not happen, and never told to retry in vain.
func TestCompletionSurvivesLostAnswers(t *testing.T) {
	t.Run("outside effect, completion's answer lost once", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		r.f.Set(map[string]int{"UpdateItem": 1}, nil)
		out := r.call(t, 5*time.Second, "charge", "c1", key)
		if out["result"] == nil || r.f.Broken() != 1 {
			t.Fatalf("%v (broken %d)", out, r.f.Broken())
		}
		// The retried completion found its own: not a lost completion.
		if o := r.lastOutcome(); o.Fault || o.Claim != stateless.ClaimNew {
			t.Errorf("outcome: fault %v claim %q err %v", o.Fault, o.Claim, o.Err)
		}
		if st := claimStatus(t, "charge", key); st != "completed" {
			t.Errorf("claim %s", st)
		}
		if out := r.call(t, 5*time.Second, "charge", "c1", key); !isReplay(out) || r.runs.Load() != 1 {
			t.Errorf("retry: %v, runs %d", out, r.runs.Load())
		}
	})

	t.Run("outside effect, completion never answered", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		r.f.Set(nil, map[string]int{"UpdateItem": ddbfault.All})
		out := r.call(t, 2*time.Second, "charge", "c2", key)
		// The effect happened: the client gets its result, the operator
		// an ERROR naming the claim's digest.
		if out["result"] == nil {
			t.Fatalf("%v", out)
		}
		o := r.lastOutcome()
		if !o.Fault || o.Claim != stateless.ClaimLost || !errors.Is(o.Err, claims.ErrCompletionLost) ||
			!strings.Contains(o.Err.Error(), claims.ClaimKey("alice", "charge", key)) || strings.Contains(o.Err.Error(), key) {
			t.Errorf("outcome: fault %v claim %q err %v", o.Fault, o.Claim, o.Err)
		}
		if r.f.Broken() < 2 {
			t.Errorf("the completion was tried %d times, want retries", r.f.Broken())
		}
	})

	t.Run("enlisted effect, commit's answer lost once", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		id := newKey(t)
		r.f.Set(map[string]int{"TransactWriteItems": 1}, nil)
		out := r.call(t, 5*time.Second, "enlisted", id, key)
		typ, retry := errorType(out)
		switch {
		case out["result"] != nil: // the retry with the same token was answered as applied
		case typ == "idempotency_not_committed" && retry: // not known to be committed: the retry replays
		default:
			t.Fatalf("%v", out)
		}
		if item(t, "effect#"+id, "effect") == nil || claimStatus(t, "enlisted", key) != "completed" {
			t.Fatal("the commit is missing")
		}
		if out := r.call(t, 5*time.Second, "enlisted", id, key); !isReplay(out) || r.runs.Load() != 1 {
			t.Errorf("retry: %v, runs %d", out, r.runs.Load())
		}
	})

	t.Run("enlisted effect, commit never answered", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		id := newKey(t)
		r.f.Set(map[string]int{"TransactWriteItems": ddbfault.All}, nil)
		out := r.call(t, 2*time.Second, "enlisted", id, key)
		if typ, retry := errorType(out); typ != "idempotency_not_committed" || !retry {
			t.Fatalf("%v", out)
		}
		if o := r.lastOutcome(); !o.Fault || o.Claim != stateless.ClaimNotCommitted {
			t.Errorf("outcome: fault %v claim %q err %v", o.Fault, o.Claim, o.Err)
		}
		r.f.Set(nil, nil)
		// It was committed after all: the retry replays it.
		if out := r.call(t, 5*time.Second, "enlisted", id, key); !isReplay(out) || r.runs.Load() != 1 {
			t.Errorf("retry: %v, runs %d", out, r.runs.Load())
		}
	})

	t.Run("enlisted effect, commit cannot be sent", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		id := newKey(t)
		r.f.Set(nil, map[string]int{"TransactWriteItems": ddbfault.All})
		out := r.call(t, 2*time.Second, "enlisted", id, key)
		if typ, retry := errorType(out); typ != "idempotency_not_committed" || !retry {
			t.Fatalf("%v", out)
		}
		// Nothing happened, and the key was freed for the retry at once.
		if item(t, "effect#"+id, "effect") != nil || claimStatus(t, "enlisted", key) != "absent" {
			t.Fatal("something was written")
		}
		r.f.Set(nil, nil)
		out = r.call(t, 5*time.Second, "enlisted", id, key)
		if out["result"] == nil || isReplay(out) || item(t, "effect#"+id, "effect") == nil {
			t.Errorf("retry: %v", out)
		}
	})

	t.Run("enlisted effect, its condition fails at commit", func(t *testing.T) {
		r, key := newCompletionRig(t), newKey(t)
		id := newKey(t)
		if _, err := local.Client().PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(sortedTable),
			Item: map[string]types.AttributeValue{"pk": str("effect#" + id), "sk": str("effect"), "by": str("someone else")}}); err != nil {
			t.Fatal(err)
		}
		out := r.call(t, 5*time.Second, "enlisted", id, key)
		if typ, retry := errorType(out); typ != "idempotency_not_committed" || !retry {
			t.Fatalf("%v", out)
		}
		if o := r.lastOutcome(); !errors.Is(o.Err, claims.ErrWritesRefused) {
			t.Errorf("cause %v", o.Err)
		}
		if it := item(t, "effect#"+id, "effect"); it["by"] == nil || claimStatus(t, "enlisted", key) != "absent" {
			t.Errorf("after the refused commit: effect %v, claim %s", it, claimStatus(t, "enlisted", key))
		}
	})
}
