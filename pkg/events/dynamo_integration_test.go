//go:build integration

package events_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// table is shaped as template.yaml's claims table, which the log shares:
// string keys pk and sk, the TTL attribute expires_at.
const table = "events-test"

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	dynamolocal.Main(m, &local, dynamolocal.Table{Name: table, SortKey: "sk"})
}

// TestDynamoDBContract: two DynamoDB values on one table, as two
// instances have them, meet the contract Memory meets.
func TestDynamoDBContract(t *testing.T) {
	runContract(t, func(t *testing.T, now func() time.Time, ttl time.Duration) (a, b stateless.EventLog) {
		return &events.DynamoDB{Client: local.Client(), Table: table, Now: now, TTL: ttl},
			&events.DynamoDB{Client: local.Client(), Table: table, Now: now, TTL: ttl}
	})
}

// partition is the partition key of topic's events, as the package's
// documentation gives it.
func partition(topic string) string {
	h := sha256.Sum256([]byte(topic))
	return "event#" + base64.RawURLEncoding.EncodeToString(h[:])[:22]
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v int64) types.AttributeValue  { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }

// put writes an item past the log, as something else (a bug, an older
// version, a hash collision) might have.
func put(t *testing.T, item map[string]types.AttributeValue) {
	t.Helper()
	if _, err := local.Client().PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(table), Item: item}); err != nil {
		t.Fatal(err)
	}
}

// rawItem is an event's item as the log writes it, for put to spoil.
func rawItem(tp, id string, at time.Time, exp int64) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		"pk": s(partition(tp)), "sk": s(fmt.Sprintf("%020d#%s", at.UnixNano(), id)),
		"topic": s(tp), "id": s(id), "at": n(at.UnixNano()), "method": s("m"), "expires_at": n(exp),
	}
}

// TestItemsAsDocumented: what Append writes is the documented item, and
// a catalog's item has no expiry.
func TestItemsAsDocumented(t *testing.T) {
	ctx := context.Background()
	d := &events.DynamoDB{Client: local.Client(), Table: table}
	tp := topic(t)
	at := time.Unix(1_900_000_000, 5)
	e := event(tp, "doc", at)
	e.Owner = "alice"
	if err := d.Append(ctx, []stateless.Event{e}); err != nil {
		t.Fatal(err)
	}
	out, err := local.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": s(partition(tp)), "sk": s("01900000000000000005#doc")}})
	if err != nil || out.Item == nil {
		t.Fatalf("the item: %v, %v", out, err)
	}
	want := map[string]string{"topic": tp, "id": "doc", "owner": "alice", "method": e.Method, "params": string(e.Params),
		"at": "1900000000000000005", "expires_at": fmt.Sprint(1_900_000_000 + 3600 + 1)}
	for name, v := range want {
		var got string
		switch a := out.Item[name].(type) {
		case *types.AttributeValueMemberS:
			got = a.Value
		case *types.AttributeValueMemberN:
			got = a.Value
		}
		if got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	scoped := &events.DynamoDB{Client: d.Client, Table: table, Scope: fmt.Sprint("items-", time.Now().UnixNano())}
	if _, err := scoped.RecordCatalog(ctx, map[string]string{"tools": "d", "prompts": "p"}); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(scoped.Scope))
	out, err = local.Client().GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": s("catalog#" + base64.RawURLEncoding.EncodeToString(sum[:])[:22]), "sk": s("catalog")}})
	if err != nil || len(out.Item) != 4 || out.Item["digest_tools"].(*types.AttributeValueMemberS).Value != "d" ||
		out.Item["digest_prompts"].(*types.AttributeValueMemberS).Value != "p" {
		t.Fatalf("the catalog's item: %v, %v", out.Item, err)
	}
}

// TestReadLeavesOut: items of another topic in the partition (a hash
// collision), expired ones DynamoDB has not deleted yet, and ones that do
// not decode are left out, and the events among and after them still
// read, past a page of them.
func TestReadLeavesOut(t *testing.T) {
	ctx := context.Background()
	var logged bytes.Buffer
	d := &events.DynamoDB{Client: local.Client(), Table: table, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	tp := topic(t)
	t0 := time.Now()
	later := t0.Add(time.Hour).Unix()
	var want []stateless.Event
	for i := range 5 {
		at := t0.Add(time.Duration(10*i) * time.Millisecond)
		e := event(tp, fmt.Sprint("good", i), at)
		if err := d.Append(ctx, []stateless.Event{e}); err != nil {
			t.Fatal(err)
		}
		want = append(want, e)
		other := rawItem(tp, fmt.Sprint("other", i), at.Add(time.Millisecond), later)
		other["topic"] = s(tp + "#collides")
		put(t, other)
		put(t, rawItem(tp, fmt.Sprint("expired", i), at.Add(2*time.Millisecond), t0.Add(-time.Second).Unix()))
		broken := rawItem(tp, fmt.Sprint("broken", i), at.Add(3*time.Millisecond), later)
		delete(broken, "method")
		put(t, broken)
		notJSON := rawItem(tp, fmt.Sprint("notjson", i), at.Add(4*time.Millisecond), later)
		notJSON["params"] = s("{")
		put(t, notJSON)
	}
	c := &opcount.Counter{}
	d.Client = local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) })
	evs, err := d.Read(ctx, tp, t0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if diff := sameEvents(evs, want); diff != "" {
		t.Fatal(diff)
	}
	if q := c.Take()["Query"]; q < 2 {
		t.Fatalf("%d Queries for 5 events among 20 left out", q)
	}
	if got := strings.Count(logged.String(), "does not decode"); got != 8 {
		// The fifth of each is past the last event wanted: not read.
		t.Fatalf("%d items told of, want 8 of the 10 broken:\n%s", got, logged.String())
	}
	// A topic whose partition holds only another's items reads nothing.
	alone := topic(t)
	stray := rawItem(alone, "stray", t0, later)
	stray["topic"] = s(tp)
	put(t, stray)
	if evs, err := d.Read(ctx, alone, t0, 0); err != nil || len(evs) != 0 {
		t.Fatalf("%s, %v", ids(evs), err)
	}
}

// TestDuplicateKeysInABatch: DynamoDB refuses a BatchWriteItem that
// writes one key twice, so Append writes each once.
func TestDuplicateKeysInABatch(t *testing.T) {
	ctx := context.Background()
	tp := topic(t)
	it := rawItem(tp, "dup", time.Now(), time.Now().Add(time.Hour).Unix())
	_, err := local.Client().BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
		table: {{PutRequest: &types.PutRequest{Item: it}}, {PutRequest: &types.PutRequest{Item: it}}}}})
	if err == nil || !strings.Contains(err.Error(), "duplicates") {
		t.Fatalf("DynamoDB took a batch with a key twice: %v", err)
	}
	t.Logf("DynamoDB Local: %v", err)
	d := &events.DynamoDB{Client: local.Client(), Table: table}
	e := event(tp, "dup", time.Now())
	if err := d.Append(ctx, []stateless.Event{e, e, e}); err != nil {
		t.Fatal(err)
	}
	if evs, err := d.Read(ctx, tp, e.At, 0); err != nil || ids(evs) != "dup" {
		t.Fatalf("%s, %v", ids(evs), err)
	}
}

// TestCost: what the log costs in DynamoDB operations, as the package's
// documentation states it: an Append one BatchWriteItem per 25 events, a
// Read of up to its limit one Query, a RecordCatalog one UpdateItem.
func TestCost(t *testing.T) {
	ctx := context.Background()
	c := &opcount.Counter{}
	d := &events.DynamoDB{Client: local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, c.Middleware) }), Table: table}
	tp := topic(t)
	t0 := time.Now()
	var batch []stateless.Event
	for i := range 60 {
		batch = append(batch, event(tp, fmt.Sprint(i), t0.Add(time.Duration(i))))
	}
	if err := d.Append(ctx, batch); err != nil {
		t.Fatal(err)
	}
	if ops := c.Take(); ops["BatchWriteItem"] != 3 || len(ops) != 1 {
		t.Fatalf("appending 60: %v", ops)
	}
	for _, limit := range []int{100, 60, 10} {
		evs, err := d.Read(ctx, tp, t0, limit)
		if err != nil || len(evs) != min(limit, 60) {
			t.Fatalf("limit %d: %d events, %v", limit, len(evs), err)
		}
		if ops := c.Take(); ops["Query"] != 1 || len(ops) != 1 {
			t.Fatalf("reading with limit %d: %v", limit, ops)
		}
	}
	if _, err := d.RecordCatalog(ctx, map[string]string{"tools": "t", "prompts": "p", "resources": "r"}); err != nil {
		t.Fatal(err)
	}
	if ops := c.Take(); ops["UpdateItem"] != 1 || len(ops) != 1 {
		t.Fatalf("recording three catalogs: %v", ops)
	}
}

// TestScopes: two endpoints sharing a table (the function and the
// conformance fixture) do not hear each other: an event one appends is
// not in the other's reads of the same topic, and their catalogs are
// recorded apart, so that neither announces the other's deploy.
func TestScopes(t *testing.T) {
	ctx := context.Background()
	n := time.Now().UnixNano()
	fn := &events.DynamoDB{Client: local.Client(), Table: table, Scope: fmt.Sprint("function-", n)}
	again := &events.DynamoDB{Client: local.Client(), Table: table, Scope: fn.Scope}
	fixture := &events.DynamoDB{Client: local.Client(), Table: table, Scope: fmt.Sprint("fixture-", n)}
	tp := topic(t)
	t0 := time.Now()
	if err := fn.Append(ctx, []stateless.Event{event(tp, "a", t0)}); err != nil {
		t.Fatal(err)
	}
	if evs, err := fixture.Read(ctx, tp, t0.Add(-time.Second), 10); err != nil || len(evs) != 0 {
		t.Fatalf("another scope read %v, %v", evs, err)
	}
	if evs, err := again.Read(ctx, tp, t0.Add(-time.Second), 10); err != nil || len(evs) != 1 {
		t.Fatalf("the same scope read %v, %v", evs, err)
	}
	for i, s := range []struct {
		log     *events.DynamoDB
		digest  string
		changed bool
	}{{fn, "d1", false}, {fixture, "x1", false}, {fn, "d1", false}, {fixture, "x1", false}, {again, "d2", true}} {
		changed, err := s.log.RecordCatalog(ctx, map[string]string{"tools": s.digest})
		if err != nil || (len(changed) == 1) != s.changed {
			t.Fatalf("step %d: %v, %v", i, changed, err)
		}
	}
}
