//go:build integration

package claims_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/ddbfault"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// changesRig is a server whose tools notify a change of the resource
// their argument names: "erase", whose effect (an item) is enlisted in a
// claim taken first, and "mark", which declares no effect but its
// enlisted write (it commits in one step). Its claims and its event log
// share DynamoDB Local's sorted table, as the endpoint's do.
type changesRig struct {
	srv *stateless.Server
	log *events.DynamoDB
	f   *ddbfault.Faults
	ops *opcount.Counter
}

func newChangesRig(t *testing.T, store func(*dynamodb.Client) claims.Store) *changesRig {
	r := &changesRig{f: &ddbfault.Faults{}, ops: &opcount.Counter{}}
	client := local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, r.f.Middleware, r.ops.Middleware) })
	r.log = &events.DynamoDB{Client: client, Table: sortedTable, SortKey: "sk", Scope: t.Name()}
	g := claims.New(store(client), &claims.Options{Changes: r.log})
	r.srv = stateless.NewServer(stateless.Implementation{Name: "changes", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{g.Interceptor()}, Events: r.log})
	type in struct {
		ID string `json:"id"`
	}
	handler := func(ctx context.Context, req *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]string, error) {
		put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(sortedTable),
			Item: map[string]types.AttributeValue{"pk": str("effect#" + a.ID), "sk": str("effect")}}}
		if !claims.Enlist(ctx, put) {
			if _, err := local.Client().PutItem(ctx, &dynamodb.PutItemInput{TableName: put.Put.TableName, Item: put.Put.Item}); err != nil {
				return nil, nil, err
			}
		}
		req.NotifyResourceUpdated("res://" + a.ID)
		return nil, map[string]string{"id": a.ID}, nil
	}
	stateless.AddTool(r.srv, &stateless.Tool{Name: "erase"}, handler)
	stateless.AddTool(r.srv, &stateless.Tool{Name: "mark", EnlistedEffectsOnly: true}, handler)
	return r
}

func dynamoStore(c *dynamodb.Client) claims.Store {
	return claims.NewDynamoDBWith(c, sortedTable, claims.DynamoDBOptions{SortKey: "sk"})
}

// changes are the IDs of the events recorded under the resource's topic.
func (r *changesRig) changes(t *testing.T, id string) []string {
	t.Helper()
	evs, err := r.log.Read(context.Background(), stateless.ResourceTopic("res://"+id), time.Now().Add(-time.Hour), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range evs {
		ids = append(ids, e.ID)
	}
	return ids
}

func (r *changesRig) call(t *testing.T, tool, id, key string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	st, out := callTool(ctx, r.srv, tool, `{"id":"`+id+`"}`, key)
	if st != 200 {
		t.Fatalf("%s: status %d: %v", tool, st, out)
	}
	return out
}

// TestChangesCommitWithTheClaim: a keyed call's change events are put in
// the transaction that commits its effect and its result — none appended
// after it — so they are recorded exactly when the effect is: a commit
// that was not made records none, one made whose answer was lost records
// them, and a replay (whose one-step handler runs again) records nothing
// more.
func TestChangesCommitWithTheClaim(t *testing.T) {
	for _, tool := range []string{"erase", "mark"} {
		t.Run(tool+": one transaction, then a replay", func(t *testing.T) {
			r, key, id := newChangesRig(t, dynamoStore), newKey(t), newKey(t)
			if out := r.call(t, tool, id, key); out["result"] == nil || isReplay(out) {
				t.Fatalf("%v", out)
			}
			if got := r.changes(t, id); len(got) != 1 {
				t.Fatalf("events %v, want one", got)
			}
			if ops := r.ops.Take(); ops["TransactWriteItems"] != 1 || ops["BatchWriteItem"] != 0 {
				t.Errorf("requests %v: want the event in the one transaction, none appended", ops)
			}
			if out := r.call(t, tool, id, key); !isReplay(out) {
				t.Fatalf("retry: %v", out)
			}
			if got := r.changes(t, id); len(got) != 1 {
				t.Errorf("after the replay, events %v", got)
			}
			if ops := r.ops.Take(); ops["TransactWriteItems"] > 1 || ops["BatchWriteItem"] != 0 {
				t.Errorf("the replay's requests %v", ops)
			}
		})

		t.Run(tool+": the commit cannot be sent", func(t *testing.T) {
			r, key, id := newChangesRig(t, dynamoStore), newKey(t), newKey(t)
			r.f.Set(nil, map[string]int{"TransactWriteItems": ddbfault.All})
			out := r.call(t, tool, id, key)
			if typ, retry := errorType(out); typ != "idempotency_not_committed" || !retry {
				t.Fatalf("%v", out)
			}
			r.f.Set(nil, nil)
			if got := r.changes(t, id); len(got) != 0 {
				t.Fatalf("events %v of an effect not made", got)
			}
			if ops := r.ops.Take(); ops["BatchWriteItem"] != 0 {
				t.Errorf("requests %v: the events were appended after all", ops)
			}
			if out := r.call(t, tool, id, key); out["result"] == nil || isReplay(out) {
				t.Fatalf("retry: %v", out)
			}
			if got := r.changes(t, id); len(got) != 1 {
				t.Errorf("after the retry, events %v", got)
			}
		})

		t.Run(tool+": the commit is made, its answer never comes", func(t *testing.T) {
			r, key, id := newChangesRig(t, dynamoStore), newKey(t), newKey(t)
			r.f.Set(map[string]int{"TransactWriteItems": ddbfault.All}, nil)
			out := r.call(t, tool, id, key)
			if typ, retry := errorType(out); typ != "idempotency_not_committed" || !retry {
				t.Fatalf("%v", out)
			}
			r.f.Set(nil, nil)
			// The process could have died here: the change is recorded
			// with the effect all the same.
			if got := r.changes(t, id); len(got) != 1 {
				t.Fatalf("events %v, want the one committed with the effect", got)
			}
			if out := r.call(t, tool, id, key); !isReplay(out) {
				t.Fatalf("retry: %v", out)
			}
			if got := r.changes(t, id); len(got) != 1 {
				t.Errorf("after the replay, events %v", got)
			}
		})
	}

	t.Run("without a key nothing is claimed: appended after the call", func(t *testing.T) {
		r, id := newChangesRig(t, dynamoStore), newKey(t)
		r.call(t, "erase", id, "")
		if got := r.changes(t, id); len(got) != 1 {
			t.Fatalf("events %v", got)
		}
		if ops := r.ops.Take(); ops["BatchWriteItem"] != 1 || ops["TransactWriteItems"] != 0 {
			t.Errorf("requests %v", ops)
		}
	})

	t.Run("claims in memory: appended after the call", func(t *testing.T) {
		r, key, id := newChangesRig(t, func(*dynamodb.Client) claims.Store { return claims.NewMemory() }), newKey(t), newKey(t)
		r.call(t, "erase", id, key)
		if got := r.changes(t, id); len(got) != 1 {
			t.Fatalf("events %v", got)
		}
		if ops := r.ops.Take(); ops["BatchWriteItem"] != 1 {
			t.Errorf("requests %v", ops)
		}
	})
}
