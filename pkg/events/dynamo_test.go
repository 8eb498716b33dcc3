package events_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/events"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// fakeDynamo answers BatchWriteItem as DynamoDB under throttling does,
// leaving unprocessed the first requests of each call, so many calls in
// all; and records what it was sent. Query and UpdateItem answer what
// the test sets.
type fakeDynamo struct {
	mu sync.Mutex
	// unprocessed is how many of a call's requests to leave unprocessed
	// on each of the first throttled calls.
	unprocessed, throttled int
	fail                   error
	batches                [][]types.WriteRequest
	written                []map[string]types.AttributeValue

	pages   []*dynamodb.QueryOutput
	queries []*dynamodb.QueryInput
	update  *dynamodb.UpdateItemInput
	old     map[string]types.AttributeValue
}

func (f *fakeDynamo) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.RequestItems) != 1 {
		return nil, fmt.Errorf("%d tables", len(in.RequestItems))
	}
	reqs := in.RequestItems["events"]
	f.batches = append(f.batches, reqs)
	if len(reqs) > 25 {
		return nil, errors.New("ValidationException: too many items")
	}
	keys := map[string]bool{}
	for _, r := range reqs {
		k := r.PutRequest.Item["pk"].(*types.AttributeValueMemberS).Value + " " + r.PutRequest.Item["sk"].(*types.AttributeValueMemberS).Value
		if keys[k] {
			return nil, errors.New("ValidationException: Provided list of item keys contains duplicates")
		}
		keys[k] = true
	}
	if f.fail != nil {
		return nil, f.fail
	}
	out := &dynamodb.BatchWriteItemOutput{}
	n := 0
	if f.throttled > 0 {
		f.throttled--
		n = min(f.unprocessed, len(reqs))
		out.UnprocessedItems = map[string][]types.WriteRequest{"events": reqs[:n]}
	}
	for _, r := range reqs[n:] {
		f.written = append(f.written, r.PutRequest.Item)
	}
	return out, nil
}

func (f *fakeDynamo) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := *in
	f.queries = append(f.queries, &c)
	if len(f.pages) == 0 {
		return &dynamodb.QueryOutput{}, nil
	}
	p := f.pages[0]
	f.pages = f.pages[1:]
	return p, nil
}

func (f *fakeDynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	f.update = in
	return &dynamodb.UpdateItemOutput{Attributes: f.old}, nil
}

func batchOf(n int, tp string) []stateless.Event {
	t0 := time.Now()
	var evs []stateless.Event
	for i := range n {
		evs = append(evs, event(tp, fmt.Sprint(i), t0.Add(time.Duration(i))))
	}
	return evs
}

// TestAppendChunksAndDedupes: 60 events, ten of them twice, are written
// in chunks of at most 25, each key once.
func TestAppendChunksAndDedupes(t *testing.T) {
	f := &fakeDynamo{}
	d := &events.DynamoDB{Client: f, Table: "events"}
	evs := batchOf(50, "t")
	evs = append(evs, evs[20:30]...)
	if err := d.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if len(f.batches) != 2 || len(f.batches[0]) != 25 || len(f.batches[1]) != 25 || len(f.written) != 50 {
		t.Fatalf("%d batches, %d written", len(f.batches), len(f.written))
	}
}

// TestTransactItems: the writes a transaction records events with are
// Puts into the log's table of the items Append writes, each key once;
// an event Append would refuse is refused.
func TestTransactItems(t *testing.T) {
	f := &fakeDynamo{}
	d := &events.DynamoDB{Client: f, Table: "events", Scope: "fn"}
	var _ claims.ChangeRecorder = d
	evs := batchOf(5, "t")
	evs = append(evs, evs[1])
	items, err := d.TransactItems(evs)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Append(context.Background(), evs); err != nil {
		t.Fatal(err)
	}
	if len(items) != 5 || len(f.written) != 5 {
		t.Fatalf("%d items, %d appended", len(items), len(f.written))
	}
	for i, it := range items {
		if it.Put == nil || aws.ToString(it.Put.TableName) != "events" || !reflect.DeepEqual(it.Put.Item, f.written[i]) {
			t.Errorf("item %d: %+v, appended %v", i, it.Put, f.written[i])
		}
	}
	if _, err := d.TransactItems([]stateless.Event{{Topic: "t", ID: "x"}}); err == nil {
		t.Error("an event without a method was taken")
	}
}

// TestAppendRetriesUnprocessed: what DynamoDB leaves unprocessed is sent
// again until it is written.
func TestAppendRetriesUnprocessed(t *testing.T) {
	f := &fakeDynamo{unprocessed: 10, throttled: 3}
	d := &events.DynamoDB{Client: f, Table: "events"}
	if err := d.Append(context.Background(), batchOf(30, "t")); err != nil {
		t.Fatal(err)
	}
	if len(f.written) != 30 || len(f.batches) != 5 {
		t.Fatalf("%d written in %d calls", len(f.written), len(f.batches))
	}
	for i, n := range []int{25, 10, 10, 10, 5} {
		if len(f.batches[i]) != n {
			t.Fatalf("call %d sent %d, want %d", i, len(f.batches[i]), n)
		}
	}
}

// TestAppendGivesUp: throttled for good, an Append ends after a bounded
// number of attempts, saying how many events were not recorded: those
// left of its chunk and every later chunk's.
func TestAppendGivesUp(t *testing.T) {
	f := &fakeDynamo{unprocessed: 7, throttled: 1000}
	d := &events.DynamoDB{Client: f, Table: "events"}
	start := time.Now()
	err := d.Append(context.Background(), batchOf(60, "t"))
	if err == nil || !strings.Contains(err.Error(), "42 of 60 events were not recorded") {
		t.Fatalf("%v", err)
	}
	if len(f.batches) > 6 || time.Since(start) > 5*time.Second {
		t.Fatalf("%d calls in %v", len(f.batches), time.Since(start))
	}
}

// TestAppendHonoursContext: a context that ends while retrying ends the
// Append.
func TestAppendHonoursContext(t *testing.T) {
	f := &fakeDynamo{unprocessed: 25, throttled: 1000}
	d := &events.DynamoDB{Client: f, Table: "events"}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := d.Append(ctx, batchOf(25, "t"))
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "25 of 25") || time.Since(start) > time.Second {
		t.Fatalf("%v after %v", err, time.Since(start))
	}
}

// TestAppendFailure: a request that fails ends the Append with its error.
func TestAppendFailure(t *testing.T) {
	boom := errors.New("boom")
	f := &fakeDynamo{fail: boom}
	d := &events.DynamoDB{Client: f, Table: "events"}
	if err := d.Append(context.Background(), batchOf(30, "t")); !errors.Is(err, boom) || !strings.Contains(err.Error(), "30 of 30") {
		t.Fatal(err)
	}
}

// TestReadQuery: a Read is one eventually consistent Query, oldest first,
// of the topic's partition from since; it follows the pages while it has
// fewer events than its limit, asking each time for those still wanted,
// and leaves out what does not decode (telling the logger).
func TestReadQuery(t *testing.T) {
	var logged bytes.Buffer
	tp := "list:tools"
	now := time.Unix(1_800_000_000, 0)
	good := func(id string, at time.Time) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{
			"topic": &types.AttributeValueMemberS{Value: tp}, "id": &types.AttributeValueMemberS{Value: id},
			"at":     &types.AttributeValueMemberN{Value: fmt.Sprint(at.UnixNano())},
			"method": &types.AttributeValueMemberS{Value: "m"}, "expires_at": &types.AttributeValueMemberN{Value: fmt.Sprint(now.Unix() + 60)},
		}
	}
	bad := map[string]types.AttributeValue{"topic": &types.AttributeValueMemberS{Value: tp}}
	more := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}
	f := &fakeDynamo{pages: []*dynamodb.QueryOutput{
		{Items: []map[string]types.AttributeValue{good("a", now), bad, good("b", now)}, LastEvaluatedKey: more},
		{Items: []map[string]types.AttributeValue{good("c", now)}},
	}}
	d := &events.DynamoDB{Client: f, Table: "events", Now: func() time.Time { return now },
		Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	evs, err := d.Read(context.Background(), tp, now.Add(-time.Second), 3)
	if err != nil || ids(evs) != "a b c" {
		t.Fatalf("%s, %v", ids(evs), err)
	}
	if len(f.queries) != 2 || *f.queries[0].Limit != 3 || *f.queries[1].Limit != 1 || f.queries[1].ExclusiveStartKey == nil {
		t.Fatalf("%d queries", len(f.queries))
	}
	q := f.queries[0]
	if *q.ConsistentRead || !*q.ScanIndexForward || *q.KeyConditionExpression != "#pk = :pk AND #sk >= :since" ||
		q.ExpressionAttributeNames["#pk"] != "pk" || q.ExpressionAttributeNames["#sk"] != "sk" {
		t.Fatalf("query %+v", q)
	}
	if since := q.ExpressionAttributeValues[":since"].(*types.AttributeValueMemberS).Value; since != fmt.Sprintf("%020d", now.Add(-time.Second).UnixNano()) {
		t.Fatalf("since %s", since)
	}
	if !strings.Contains(logged.String(), "does not decode") {
		t.Fatalf("logged %q", logged.String())
	}
}

// TestReadBounded: pages of nothing but skipped items end the Read after
// a bounded number of Queries.
func TestReadBounded(t *testing.T) {
	more := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "x"}}
	f := &fakeDynamo{}
	for range 100 {
		f.pages = append(f.pages, &dynamodb.QueryOutput{Items: []map[string]types.AttributeValue{{}}, LastEvaluatedKey: more})
	}
	d := &events.DynamoDB{Client: f, Table: "events"}
	evs, err := d.Read(context.Background(), "t", time.Time{}, 10)
	if err != nil || len(evs) != 0 || len(f.queries) > 20 {
		t.Fatalf("%d events, %v, %d queries", len(evs), err, len(f.queries))
	}
}

// TestRecordCatalogUpdate: one UpdateItem of the scope's catalog item
// sets every digest; a catalog changed only when another digest was
// there before.
func TestRecordCatalogUpdate(t *testing.T) {
	f := &fakeDynamo{}
	d := &events.DynamoDB{Client: f, Table: "events", PartitionKey: "h", SortKey: "r", Scope: "fn"}
	for _, c := range []struct {
		old     map[string]types.AttributeValue
		changed []string
	}{
		{nil, nil},
		{map[string]types.AttributeValue{"digest_tools": &types.AttributeValueMemberS{Value: "d"}}, nil},
		{map[string]types.AttributeValue{"digest_tools": &types.AttributeValueMemberS{Value: "e"}, "digest_prompts": &types.AttributeValueMemberS{Value: "p"}}, []string{"tools"}},
		{map[string]types.AttributeValue{"digest_tools": &types.AttributeValueMemberS{Value: "e"}, "digest_prompts": &types.AttributeValueMemberS{Value: "q"}}, []string{"prompts", "tools"}},
	} {
		f.old = c.old
		changed, err := d.RecordCatalog(context.Background(), map[string]string{"tools": "d", "prompts": "p"})
		if err != nil || !slices.Equal(changed, c.changed) {
			t.Fatalf("old %v: %v, %v; want %v", c.old, changed, err, c.changed)
		}
	}
	u := f.update
	if u.ReturnValues != types.ReturnValueUpdatedOld || *u.UpdateExpression != "SET #n0 = :d0, #n1 = :d1" ||
		u.ExpressionAttributeNames["#n0"] != "digest_prompts" || u.ExpressionAttributeNames["#n1"] != "digest_tools" ||
		!strings.HasPrefix(u.Key["h"].(*types.AttributeValueMemberS).Value, "catalog#") || u.Key["r"].(*types.AttributeValueMemberS).Value != "catalog" {
		t.Fatalf("update %+v", u)
	}
}
