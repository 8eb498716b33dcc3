package events

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// DynamoAPI is the part of the DynamoDB client the log uses.
type DynamoAPI interface {
	BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DynamoDB is an EventLog in a DynamoDB table with a string partition key
// and a string sort key, whose TTL attribute is "expires_at" (epoch
// seconds): template.yaml's claims table, whose other items it never
// touches. The layout of its items is in the package's documentation.
// Every instance of an endpoint given the same table shares the log. Set
// its fields before the first use; it is then safe for concurrent use.
type DynamoDB struct {
	Client DynamoAPI
	Table  string
	// Scope separates the endpoints that share a table (the deployed
	// function and the conformance fixture share the claims table): the
	// events and the catalog of one are invisible to another. Every
	// instance of one endpoint must have the same Scope; package
	// endpoint gives it the function's name. Empty is a scope too.
	Scope string
	// PartitionKey and SortKey name the table's key attributes; empty
	// are "pk" and "sk", template.yaml's.
	PartitionKey string
	SortKey      string
	// TTL is how long after its At an event is kept (the item's
	// expires_at); 0 is DefaultTTL.
	TTL time.Duration
	// Now is the clock expired items are left out by; nil is time.Now.
	Now func() time.Time
	// Logger, when set, is told of each item a Read leaves out because it
	// does not decode. Nil: they are left out silently.
	Logger *slog.Logger
}

var _ stateless.EventLog = (*DynamoDB)(nil)

func (d *DynamoDB) keyNames() (pk, sk string) {
	pk, sk = d.PartitionKey, d.SortKey
	if pk == "" {
		pk = "pk"
	}
	if sk == "" {
		sk = "sk"
	}
	return pk, sk
}

func (d *DynamoDB) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *DynamoDB) ttl() time.Duration {
	if d.TTL > 0 {
		return d.TTL
	}
	return DefaultTTL
}

// maxBatch is the most write requests one BatchWriteItem takes.
const maxBatch = 25

// maxBatchAttempts bounds the requests a chunk of events is written in,
// and firstBackoff is the wait before the first retry, doubled before
// each next one (with jitter): five retries wait about 0.8 s in all, long
// enough for throttling to pass, short enough for a tool call that
// publishes.
const (
	maxBatchAttempts = 6
	firstBackoff     = 25 * time.Millisecond
)

// Append implements stateless.EventLog with one BatchWriteItem per 25
// events. It refuses the whole batch, and writes nothing, when any event
// fails stateless.CheckEvent or this package's bounds (an At from 1970 to
// 2262, UTF-8 strings, an ID of at most 512 bytes).
//
// Events with the same topic, At and ID are the same item: each is
// written once, the last of them winning, since BatchWriteItem refuses a
// request that writes one key twice ("Provided list of item keys contains
// duplicates", a ValidationException). The chunks are written one after
// another, and the first that cannot be written ends the Append with an
// error saying how many events were not recorded; the chunks before it
// are recorded, and a retry of the whole Append records them again under
// the same keys.
func (d *DynamoDB) Append(ctx context.Context, events []stateless.Event) error {
	items, err := d.items(events)
	if err != nil {
		return err
	}
	reqs := make([]types.WriteRequest, len(items))
	for i, it := range items {
		reqs[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: it}}
	}
	for start := 0; start < len(reqs); start += maxBatch {
		chunk := reqs[start:min(start+maxBatch, len(reqs))]
		left, err := d.writeChunk(ctx, chunk)
		if err != nil {
			unrecorded := left + len(reqs) - start - len(chunk)
			return fmt.Errorf("events: %d of %d events were not recorded: %w", unrecorded, len(reqs), err)
		}
	}
	return nil
}

// TransactItems are the writes that record events, for a transaction of
// the caller's (package claims puts a claimed call's events in its
// claim's, with the call's effect): one Put of each event's item, as
// Append writes it. It is a claims.ChangeRecorder.
func (d *DynamoDB) TransactItems(events []stateless.Event) ([]types.TransactWriteItem, error) {
	items, err := d.items(events)
	if err != nil {
		return nil, err
	}
	out := make([]types.TransactWriteItem, len(items))
	for i, it := range items {
		out[i] = types.TransactWriteItem{Put: &types.Put{TableName: aws.String(d.Table), Item: it}}
	}
	return out, nil
}

// items are the events' items, one per key: an event given twice (the
// same At and ID) is written once, as a batch or a transaction may name
// an item only once.
func (d *DynamoDB) items(events []stateless.Event) ([]map[string]types.AttributeValue, error) {
	if err := checkAll(events); err != nil {
		return nil, err
	}
	pk, sk := d.keyNames()
	ttl := d.ttl()
	items := make([]map[string]types.AttributeValue, 0, len(events))
	seen := make(map[string]int, len(events))
	for i := range events {
		e := &events[i]
		it := encodeEventItem(pk, sk, e, expiry(nanos(e.At), ttl))
		if d.Scope != "" {
			it[pk], it[attrScope] = str(d.partition(e.Topic)), str(d.Scope)
		}
		key := it[pk].(*types.AttributeValueMemberS).Value + "\x00" + it[sk].(*types.AttributeValueMemberS).Value
		if j, dup := seen[key]; dup {
			items[j] = it
			continue
		}
		seen[key] = len(items)
		items = append(items, it)
	}
	return items, nil
}

// writeChunk writes at most 25 requests with BatchWriteItem, again and
// again for those DynamoDB leaves unprocessed, and returns how many it
// could not write. A BatchWriteItem succeeds when DynamoDB writes only
// part of it (under throttling, or a partition's limit), and returns the
// rest as UnprocessedItems, which the caller must send again, best after
// a backoff: see
// https://docs.aws.amazon.com/amazondynamodb/latest/APIReference/API_BatchWriteItem.html.
// The SDK retries a request that fails, not these, so this does; a
// bounded number of times, and no longer than ctx allows.
func (d *DynamoDB) writeChunk(ctx context.Context, reqs []types.WriteRequest) (left int, err error) {
	pending := map[string][]types.WriteRequest{d.Table: reqs}
	wait := firstBackoff
	for attempt := 1; ; attempt++ {
		out, err := d.Client.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
		if err != nil {
			return count(pending), fmt.Errorf("writing a batch: %w", err)
		}
		pending = out.UnprocessedItems
		n := count(pending)
		if n == 0 {
			return 0, nil
		}
		if attempt == maxBatchAttempts {
			return n, fmt.Errorf("DynamoDB left %d writes unprocessed after %d attempts", n, attempt)
		}
		// Half the wait and a random part of the other half: writers
		// throttled together do not retry together.
		t := time.NewTimer(wait/2 + rand.N(wait/2+1))
		select {
		case <-ctx.Done():
			t.Stop()
			return n, fmt.Errorf("%d writes unprocessed: %w", n, ctx.Err())
		case <-t.C:
		}
		wait *= 2
	}
}

// count is how many write requests a batch's request items hold.
func count(items map[string][]types.WriteRequest) int {
	n := 0
	for _, reqs := range items {
		n += len(reqs)
	}
	return n
}

// maxQueryPages bounds the Queries of one Read. A Query page holds at most
// 1 MB and Limit items; a Read needs a second page only when the first
// held more than 1 MB of events, or items left out (expired, undecodable,
// another topic's), so this is reached only when thousands of them lie in
// the range read. Read then returns what it has.
const maxQueryPages = 16

// Read implements stateless.EventLog with one Query of the topic's
// partition from since (inclusive: the sort key begins with At's
// nanoseconds), oldest first, Limit the events still wanted; another page
// only when that one held fewer than it could (see maxQueryPages).
//
// The Query is eventually consistent (half the cost; see the package's
// documentation): a listen stream reads again from a little before its
// last read, so an event this read misses the next one returns.
//
// An item that does not decode is left out (and told to Logger): one
// corrupt item must not stop the delivery of every later event of its
// topic to every stream, for as long as it is kept. So are items of
// another topic whose hash is the same, and expired items, which
// DynamoDB deletes only some time after their TTL (typically within a few
// days) and returns until it does: see
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/howitworks-ttl.html.
func (d *DynamoDB) Read(ctx context.Context, topic string, since time.Time, limit int) ([]stateless.Event, error) {
	if limit <= 0 {
		limit = DefaultReadLimit
	}
	pk, sk := d.keyNames()
	now := d.now()
	in := &dynamodb.QueryInput{
		TableName:                &d.Table,
		KeyConditionExpression:   aws.String("#pk = :pk AND #sk >= :since"),
		ExpressionAttributeNames: map[string]string{"#pk": pk, "#sk": sk},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":pk":    str(d.partition(topic)),
			":since": str(sinceSort(since)),
		},
		ConsistentRead:   aws.Bool(false),
		ScanIndexForward: aws.Bool(true),
	}
	var out []stateless.Event
	for page := 0; page < maxQueryPages && len(out) < limit; page++ {
		in.Limit = aws.Int32(int32(min(limit-len(out), math.MaxInt32)))
		res, err := d.Client.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("events: reading the events of %q: %w", topic, err)
		}
		for _, it := range res.Items {
			e, err := decodeEventItem(it)
			if err != nil {
				if d.Logger != nil {
					d.Logger.LogAttrs(ctx, slog.LevelWarn, "events: an item of the event log does not decode; it is left out",
						slog.String("table", d.Table), slog.String("topic", topic), slog.String("error", err.Error()))
				}
				continue
			}
			if e.Topic != topic || itemScope(it) != d.Scope || expired(itemExpiry(it), now) {
				continue
			}
			out = append(out, e)
		}
		if len(res.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
	return out, nil
}

// partition is the partition key value of topic's events in d's scope.
func (d *DynamoDB) partition(topic string) string {
	if d.Scope == "" {
		return eventPartition(topic)
	}
	return eventPartition(d.Scope + "\x00" + topic)
}

// RecordCatalog implements stateless.EventLog with one UpdateItem of the
// scope's catalog item, which sets every digest and returns those it
// replaced (UPDATED_OLD): a name recorded for the first time has none,
// and reports no change. One request whatever the number of catalogs,
// since every instance makes it when it starts. Unconditional, so that
// the many instances a deploy starts at once each record the same
// digests without a conflict; those of the old deploy record none after
// their start. A catalog item never expires: a deploy may last longer
// than any TTL.
func (d *DynamoDB) RecordCatalog(ctx context.Context, digests map[string]string) ([]string, error) {
	if len(digests) == 0 {
		return nil, nil
	}
	names := slices.Sorted(maps.Keys(digests))
	attrNames := make(map[string]string, len(names))
	values := make(map[string]types.AttributeValue, len(names))
	set := make([]string, len(names))
	for i, name := range names {
		n, v := "#n"+strconv.Itoa(i), ":d"+strconv.Itoa(i)
		attrNames[n], values[v] = catalogAttr(name), str(digests[name])
		set[i] = n + " = " + v
	}
	pk, sk := d.keyNames()
	out, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &d.Table,
		Key:                       map[string]types.AttributeValue{pk: str(catalogPartition(d.Scope)), sk: str(catalogSort)},
		UpdateExpression:          aws.String("SET " + strings.Join(set, ", ")),
		ExpressionAttributeNames:  attrNames,
		ExpressionAttributeValues: values,
		ReturnValues:              types.ReturnValueUpdatedOld,
	})
	if err != nil {
		return nil, fmt.Errorf("events: recording the catalogs: %w", err)
	}
	var changed []string
	for _, name := range names {
		if old, had := out.Attributes[catalogAttr(name)].(*types.AttributeValueMemberS); had && old.Value != digests[name] {
			changed = append(changed, name)
		}
	}
	return changed, nil
}
