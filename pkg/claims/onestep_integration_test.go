//go:build integration

package claims_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/ddbfault"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/toolschema"
)

// stockRig serves "stock", a tool declared to have no effect but its
// enlisted writes: an item per call (its id) and a per-shelf counter
// that stops at the call's limit, the counter's condition answered as
// shelf_full. Its DynamoDB client counts operations and breaks them on
// demand.
type stockRig struct {
	srv     *stateless.Server
	ops     *opcount.Counter
	f       *ddbfault.Faults
	runs    atomic.Int32
	effects atomic.Int32
	outcomeLog
}

func newStockRig(t *testing.T) *stockRig {
	r := &stockRig{ops: &opcount.Counter{}, f: &ddbfault.Faults{}}
	client := local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, r.ops.Middleware, r.f.Middleware) })
	g := claims.New(claims.NewDynamoDBWith(client, sortedTable, claims.DynamoDBOptions{SortKey: "sk"}), nil)
	r.srv = stateless.NewServer(stateless.Implementation{Name: "stock", Version: "1"}, &stateless.Options{SchemaEngine: toolschema.Engine{},
		Interceptors: []stateless.Interceptor{g.Interceptor()}, Observe: r.record})
	type in struct {
		ID    string `json:"id"`
		Shelf string `json:"shelf"`
		Limit int    `json:"limit"`
	}
	stateless.AddTool(r.srv, &stateless.Tool{Name: "stock", EnlistedEffectsOnly: true}, func(ctx context.Context, _ *stateless.ToolRequest, a in) (*stateless.CallToolResult, map[string]any, error) {
		run := r.runs.Add(1)
		counter := types.TransactWriteItem{Update: &types.Update{TableName: aws.String(sortedTable),
			Key:                       map[string]types.AttributeValue{"pk": str("shelf#" + a.Shelf), "sk": str("count")},
			UpdateExpression:          aws.String("SET n = if_not_exists(n, :zero) + :one"),
			ConditionExpression:       aws.String("attribute_not_exists(n) OR n < :limit"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":zero": num(0), ":one": num(1), ":limit": num(a.Limit)}}}
		put := types.TransactWriteItem{Put: &types.Put{TableName: aws.String(sortedTable),
			Item:                map[string]types.AttributeValue{"pk": str("stock#" + a.ID), "sk": str("item"), "run": num(int(run))},
			ConditionExpression: aws.String("attribute_not_exists(pk)")}}
		if !claims.EnlistWrites(ctx, claims.Write{Item: &counter, OnConditionFailed: mcperr.NewRefused("shelf_full", nil)}, claims.Write{Item: &put}) {
			return nil, nil, errors.New("not enlisted")
		}
		claims.OnCommit(ctx, func() { r.effects.Add(1) })
		return nil, map[string]any{"id": a.ID, "run": run}, nil
	})
	return r
}

// newOwnerToken is a token as long as a claim's owner token (at most 36
// characters, as DynamoDB takes them).
func newOwnerToken() string { return fmt.Sprintf("%032x", time.Now().UnixNano()) }

func num(n int) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(n)} }

func (r *stockRig) call(t *testing.T, timeout time.Duration, id, shelf string, limit int, key string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	st, out := callTool(ctx, r.srv, "stock", fmt.Sprintf(`{"id":%q,"shelf":%q,"limit":%d}`, id, shelf, limit), key)
	if st != http.StatusOK && st != http.StatusBadRequest {
		t.Fatalf("status %d: %v", st, out)
	}
	return out
}

func (r *stockRig) lastOutcome() recorded {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.outcomes[len(r.outcomes)-1]
}

func structured(out map[string]any) map[string]any {
	res, _ := out["result"].(map[string]any)
	sc, _ := res["structuredContent"].(map[string]any)
	return sc
}

// TestOneStepRequests: a keyed call of a tool with no effect but its
// enlisted writes costs one DynamoDB request, a TransactWriteItems of
// the claim, the writes and the result; its replay one, the same
// transaction cancelled, the holder read from its cancellation reasons
// (no GetItem). A tool that enlists nothing costs one PutItem either way.
func TestOneStepRequests(t *testing.T) {
	r, key, id := newStockRig(t), newKey(t), newKey(t)
	shelf := newKey(t)
	first := r.call(t, 5*time.Second, id, shelf, 5, key)
	if structured(first)["id"] != id || isReplay(first) {
		t.Fatalf("first: %v", first)
	}
	if ops := r.ops.Take(); !maps.Equal(ops, map[string]int{"TransactWriteItems": 1}) {
		t.Errorf("first call: %v, want one TransactWriteItems", ops)
	}
	again := r.call(t, 5*time.Second, id, shelf, 5, key)
	if !isReplay(again) || structured(again)["run"] != structured(first)["run"] {
		t.Fatalf("replay: %v\nfirst: %v", again, first)
	}
	if ops := r.ops.Take(); !maps.Equal(ops, map[string]int{"TransactWriteItems": 1}) {
		t.Errorf("replay: %v, want one TransactWriteItems", ops)
	}
	if o := r.lastOutcome(); o.Claim != stateless.ClaimReplay || o.Fault {
		t.Errorf("the replay's outcome: %+v", o)
	}
	if r.runs.Load() != 2 || r.effects.Load() != 1 || item(t, "stock#"+id, "item") == nil || claimStatus(t, "stock", key) != "completed" {
		t.Errorf("%d runs, %d effects recorded; item %v, claim %s", r.runs.Load(), r.effects.Load(), item(t, "stock#"+id, "item"), claimStatus(t, "stock", key))
	}
	if n := item(t, "shelf#"+shelf, "count")["n"]; n.(*types.AttributeValueMemberN).Value != "1" {
		t.Errorf("counter %v", n)
	}
}

// TestOneStepConditionFailedOnDynamoDB: the counter at its limit fails
// the transaction: the call answers the write's tool failure, in the one
// request, and nothing is written, the claim included; the same key
// succeeds once the limit allows it.
func TestOneStepConditionFailedOnDynamoDB(t *testing.T) {
	r, shelf := newStockRig(t), newKey(t)
	if out := r.call(t, 5*time.Second, newKey(t), shelf, 1, newKey(t)); structured(out)["id"] == nil {
		t.Fatalf("filling the shelf: %v", out)
	}
	r.ops.Take()
	key, id := newKey(t), newKey(t)
	out := r.call(t, 5*time.Second, id, shelf, 1, key)
	res, _ := out["result"].(map[string]any)
	meta, _ := res["_meta"].(map[string]any)
	f, _ := meta[stateless.MetaToolFailure].(map[string]any)
	if res["isError"] != true || f["code"] != "shelf_full" {
		t.Fatalf("a full shelf: %v", out)
	}
	if ops := r.ops.Take(); !maps.Equal(ops, map[string]int{"TransactWriteItems": 1}) {
		t.Errorf("%v, want one TransactWriteItems", ops)
	}
	if item(t, "stock#"+id, "item") != nil || claimStatus(t, "stock", key) != "absent" {
		t.Errorf("written: item %v, claim %s", item(t, "stock#"+id, "item"), claimStatus(t, "stock", key))
	}
	again := r.call(t, 5*time.Second, id, shelf, 1, key)
	if res, _ := again["result"].(map[string]any); res["isError"] != true || isReplay(again) {
		t.Errorf("the same key, still full (not a stored answer): %v", again)
	}
	out = r.call(t, 5*time.Second, id, shelf, 2, key)
	if structured(out)["id"] != id || isReplay(out) {
		t.Errorf("with room (another request: the limit is an argument): %v", out)
	}
}

// TestOneStepSurvivesLostAnswers: the one-step commit's answer lost once
// (the SDK sends it again, with its token), lost every time, or never
// sent: the key's effect happens exactly once, the client is never told
// "done" for an effect that did not happen, and never told to retry in
// vain.
func TestOneStepSurvivesLostAnswers(t *testing.T) {
	for name, f := range map[string]struct{ lose, fail map[string]int }{
		"answer lost once":      {lose: map[string]int{"TransactWriteItems": 1}},
		"every answer lost":     {lose: map[string]int{"TransactWriteItems": ddbfault.All}},
		"commit cannot be sent": {fail: map[string]int{"TransactWriteItems": ddbfault.All}},
	} {
		t.Run(name, func(t *testing.T) {
			r, key, id, shelf := newStockRig(t), newKey(t), newKey(t), newKey(t)
			r.f.Set(f.lose, f.fail)
			first := r.call(t, 2*time.Second, id, shelf, 5, key)
			r.f.Set(nil, nil)
			if structured(first)["id"] == nil {
				if typ, retry := errorType(first); typ != "idempotency_not_committed" || !retry {
					t.Fatalf("first: %v", first)
				}
				if o := r.lastOutcome(); !o.Fault || o.Claim != stateless.ClaimNotCommitted || !errors.Is(o.Err, claims.ErrNotCommitted) {
					t.Errorf("its outcome: %+v", o)
				}
			}
			retry := r.call(t, 5*time.Second, id, shelf, 5, key)
			if structured(retry)["id"] != id {
				t.Fatalf("retry: %v", retry)
			}
			if structured(first)["id"] != nil && (!isReplay(retry) || structured(retry)["run"] != structured(first)["run"]) {
				t.Errorf("the retry of an answered call: %v\nfirst: %v", retry, first)
			}
			if n := item(t, "shelf#"+shelf, "count")["n"]; n == nil || n.(*types.AttributeValueMemberN).Value != "1" || item(t, "stock#"+id, "item") == nil {
				t.Errorf("counter %v, item %v: want one effect", n, item(t, "stock#"+id, "item"))
			}
			if r.effects.Load() > 1 {
				t.Errorf("%d effects recorded", r.effects.Load())
			}
		})
	}
}

// TestOneStepRaceOnDynamoDB: calls with one key at once all run their
// handler; one transaction commits, the others are cancelled (or meet it
// in flight and try again) and replay its result.
func TestOneStepRaceOnDynamoDB(t *testing.T) {
	r, key, id, shelf := newStockRig(t), newKey(t), newKey(t), newKey(t)
	const n = 8
	outs := make([]map[string]any, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = r.call(t, 10*time.Second, id, shelf, 5, key)
		}()
	}
	wg.Wait()
	firsts := 0
	var run any
	for i, out := range outs {
		if structured(out)["id"] != id {
			t.Errorf("racer %d: %v", i, out)
			continue
		}
		if !isReplay(out) {
			firsts++
		}
		if run == nil {
			run = structured(out)["run"]
		} else if structured(out)["run"] != run {
			t.Errorf("racer %d answered run %v, another %v", i, structured(out)["run"], run)
		}
	}
	if c := item(t, "shelf#"+shelf, "count")["n"]; firsts != 1 || c.(*types.AttributeValueMemberN).Value != "1" || r.effects.Load() != 1 {
		t.Errorf("%d first answers, counter %v, %d effects", firsts, c, r.effects.Load())
	}
}

// TestCancellationReasonsAsDocumented holds DynamoDB Local to what the
// one-step commit reads of a cancelled transaction (docs/aws-contract.md):
// one reason per item, in the items' order, every failed condition
// reported whatever its place, "None" for an item whose condition held,
// and the item as it was for a Put with ReturnValuesOnConditionCheckFailure
// ALL_OLD; an idempotency token resent with the same items after a commit
// is answered as applied, after a cancellation is a new attempt, and with
// other items is refused.
func TestCancellationReasonsAsDocumented(t *testing.T) {
	c, ctx := local.Client(), context.Background()
	k := newKey(t)
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": str(k + pk), "sk": str("x")}
	}
	put := func(pk string) types.TransactWriteItem {
		it := key(pk)
		it["v"] = str("new")
		return types.TransactWriteItem{Put: &types.Put{TableName: aws.String(sortedTable), Item: it,
			ConditionExpression: aws.String("attribute_not_exists(pk)"), ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}
	}
	absent := func(pk string) types.TransactWriteItem {
		return types.TransactWriteItem{Update: &types.Update{TableName: aws.String(sortedTable), Key: key(pk),
			UpdateExpression: aws.String("SET v = :v"), ConditionExpression: aws.String("attribute_not_exists(pk)"),
			ExpressionAttributeValues: map[string]types.AttributeValue{":v": str("upd")}}}
	}
	for _, pk := range []string{"a", "b"} {
		it := key(pk)
		it["v"] = str("old")
		if _, err := c.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(sortedTable), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	reasons := func(err error) []types.CancellationReason {
		t.Helper()
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			t.Fatalf("not cancelled: %v", err)
		}
		return tce.CancellationReasons
	}
	code := func(r types.CancellationReason) string { return aws.ToString(r.Code) }
	old := func(r types.CancellationReason) string {
		v, _ := r.Item["v"].(*types.AttributeValueMemberS)
		if v == nil {
			return ""
		}
		return v.Value
	}
	for name, tc := range map[string]struct {
		items []types.TransactWriteItem
		codes []string
		old   []string
	}{
		"both fail, the put first":  {[]types.TransactWriteItem{put("a"), absent("b")}, []string{"ConditionalCheckFailed", "ConditionalCheckFailed"}, []string{"old", ""}},
		"both fail, the put second": {[]types.TransactWriteItem{absent("b"), put("a")}, []string{"ConditionalCheckFailed", "ConditionalCheckFailed"}, []string{"", "old"}},
		"the second fails":          {[]types.TransactWriteItem{put("c"), absent("b")}, []string{"None", "ConditionalCheckFailed"}, []string{"", ""}},
	} {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: tc.items})
		rs := reasons(err)
		if len(rs) != len(tc.codes) {
			t.Fatalf("%s: %d reasons", name, len(rs))
		}
		for i := range rs {
			if code(rs[i]) != tc.codes[i] || old(rs[i]) != tc.old[i] {
				t.Errorf("%s: reason %d is %s with item %v, want %s with v=%q", name, i, code(rs[i]), rs[i].Item, tc.codes[i], tc.old[i])
			}
		}
	}
	tok := newOwnerToken()
	in := &dynamodb.TransactWriteItemsInput{ClientRequestToken: &tok, TransactItems: []types.TransactWriteItem{put("t1"), put("t2")}}
	if _, err := c.TransactWriteItems(ctx, in); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TransactWriteItems(ctx, in); err != nil {
		t.Errorf("the same token and items after the commit: %v", err)
	}
	other := &dynamodb.TransactWriteItemsInput{ClientRequestToken: &tok, TransactItems: []types.TransactWriteItem{put("t3")}}
	if _, err := c.TransactWriteItems(ctx, other); err == nil || !errors.As(err, new(*types.IdempotentParameterMismatchException)) {
		t.Errorf("the same token, other items: %v", err)
	}
	tok2 := newOwnerToken()
	in2 := &dynamodb.TransactWriteItemsInput{ClientRequestToken: &tok2, TransactItems: []types.TransactWriteItem{put("a"), put("t4")}}
	reasons(func() error { _, err := c.TransactWriteItems(ctx, in2); return err }())
	if _, err := c.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(sortedTable), Key: key("a")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TransactWriteItems(ctx, in2); err != nil {
		t.Errorf("the token of a cancelled transaction, its condition met now: %v", err)
	}
}
