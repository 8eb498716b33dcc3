package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Slots count what a principal holds at once: its live tasks, its open
// streams. A slot is named by the thing it is for (a task's id), so that
// taking or giving one twice — a retry after a lost acknowledgement —
// is the same as doing it once: a count kept as a set of names cannot
// drift by a lost or repeated write, as a number added to and taken from
// could. Each slot also carries the time it lapses by itself (the
// task's expiry, the stream's deadline), so a holder that died without
// giving it back holds it no longer than that.
type Slots interface {
	// Take holds the slot id for key until until. It fails with ErrFull
	// when key already holds max other slots that have not lapsed, and
	// succeeds without a change when key holds id already.
	Take(ctx context.Context, key, id string, until time.Time, max int) error
	// Give gives key's slot id back; giving one not held does nothing.
	Give(ctx context.Context, key, id string) error
	// Held returns key's slots that have not lapsed, and when each lapses.
	Held(ctx context.Context, key string) (map[string]time.Time, error)
}

// ErrFull is the error of Take when every slot is held.
var ErrFull = errors.New("ratelimit: every slot is held")

// MemorySlots keeps slots in this process: for one instance, and tests.
type MemorySlots struct {
	mu   sync.Mutex
	held map[string]map[string]time.Time
	ops  int // for sweeping callers that hold nothing now and then
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// memorySlotsSweep is how many Takes go by between sweeps of the callers
// that hold no slot: a caller's set is kept between its calls, not made
// anew for each.
const memorySlotsSweep = 1024

var _ Slots = (*MemorySlots)(nil)

func (m *MemorySlots) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// live returns key's slots with the lapsed ones dropped; m.mu is held.
func (m *MemorySlots) live(key string) map[string]time.Time {
	h := m.held[key]
	if len(h) == 0 {
		return h
	}
	now := m.now()
	for id, until := range h {
		if !now.Before(until) {
			delete(h, id)
		}
	}
	return h
}

// sweep forgets the callers that hold no slot; m.mu is held.
func (m *MemorySlots) sweep() {
	now := m.now()
	for key, h := range m.held {
		for id, until := range h {
			if !now.Before(until) {
				delete(h, id)
			}
		}
		if len(h) == 0 {
			delete(m.held, key)
		}
	}
}

// inProcess marks slots that never wait on anything: giving one back
// needs no bounded context.
func (m *MemorySlots) inProcess() {}

// Take implements Slots.
func (m *MemorySlots) Take(ctx context.Context, key, id string, until time.Time, max int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ops++; m.ops%memorySlotsSweep == 0 {
		m.sweep()
	}
	h := m.live(key)
	if _, ok := h[id]; ok {
		return nil
	}
	if len(h) >= max {
		return ErrFull
	}
	if h == nil {
		if m.held == nil {
			m.held = map[string]map[string]time.Time{}
		}
		h = map[string]time.Time{}
		m.held[key] = h
	}
	h[id] = until
	return nil
}

// Give implements Slots.
func (m *MemorySlots) Give(ctx context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.held[key], id)
	return nil
}

// Held implements Slots.
func (m *MemorySlots) Held(ctx context.Context, key string) (map[string]time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]time.Time{}
	for id, until := range m.live(key) {
		out[id] = until
	}
	return out, nil
}

// DynamoDBSlotsAPI is the part of the DynamoDB client DynamoDBSlots uses.
type DynamoDBSlotsAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DynamoDBSlots keeps slots in a DynamoDB table every instance shares:
// one item per key and Kind, its partition key "pk" "slots#<Kind>#" and a
// digest of the key, holding a map "held" of slot names to the
// milliseconds when each lapses, a version "v", and the table's TTL
// "expires_at" an hour past the newest slot's lapse (template.yaml's
// claims table has them all; give SortKey "sk" for it, whose value is
// then "slots").
//
// Take is one conditional UpdateItem where the map has room; where it
// has none (or holds lapsed slots that take it), Take reads the item
// strongly consistently and writes it back only when there is room once
// the lapsed slots are dropped, conditioned on the version it read (a
// writer that lost the race reads again). A refusal writes nothing: the
// first of a caller's refusals on an instance also tried the UpdateItem,
// whose condition failed (DynamoDB bills it one write unit, and changes
// nothing), and for five seconds after it the instance reads first. Give is one
// conditional UpdateItem that removes the slot's name. The item is small
// (under 1 KB for tens of slots): a write is one write request unit, a
// read one read unit.
type DynamoDBSlots struct {
	Client  DynamoDBSlotsAPI
	Table   string
	SortKey string
	// Kind tells this key's slots from another quota's (tasks, streams).
	Kind string
	// Now is the clock; nil is time.Now.
	Now func() time.Time

	// full remembers the keys this instance last found without room, and
	// until when to take their slots by reading first: a flood of
	// refused takes then costs reads, never a write.
	full memo[string]
}

// fullHint is how long a key found without room is taken by reading
// first; maxFullHints bounds the keys remembered.
const (
	fullHint     = 5 * time.Second
	maxFullHints = 1 << 14
)

var _ Slots = (*DynamoDBSlots)(nil)

// slotItemGrace is how long past the lapse of the slot last taken the
// item may be forgotten by the table's TTL. One write cannot take the
// larger of two times, so the newest slot sets it; with this grace it
// still outlasts every slot of its kind: a task's lapse is its creation
// plus the one TTL of all tasks, a stream's within the function's
// 15 minutes.
const slotItemGrace = time.Hour

// maxSlotRaces bounds the rounds of one Take that lose to another
// writer of the same key.
const maxSlotRaces = 8

func (d *DynamoDBSlots) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *DynamoDBSlots) key(key string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: string(appendDigest([]byte("slots#"+d.Kind+"#"), key))}}
	if d.SortKey != "" {
		k[d.SortKey] = &types.AttributeValueMemberS{Value: "slots"}
	}
	return k
}

// read returns key's slots that have not lapsed and the item's version
// (0: no item).
func (d *DynamoDBSlots) read(ctx context.Context, key string) (map[string]time.Time, int64, error) {
	out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.Table), Key: d.key(key), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, 0, err
	}
	held := map[string]time.Time{}
	if out.Item == nil {
		return held, 0, nil
	}
	v, err := number(out.Item["v"])
	if err != nil {
		return nil, 0, fmt.Errorf("ratelimit: the slots' version: %w", err)
	}
	m, _ := out.Item["held"].(*types.AttributeValueMemberM)
	if m == nil {
		return held, v, nil
	}
	now := d.now()
	for id, av := range m.Value {
		ms, err := number(av)
		if err != nil {
			return nil, 0, fmt.Errorf("ratelimit: a slot's lapse: %w", err)
		}
		if until := time.UnixMilli(ms); now.Before(until) {
			held[id] = until
		}
	}
	return held, v, nil
}

func number(av types.AttributeValue) (int64, error) {
	n, ok := av.(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("a %T, not a number", av)
	}
	return strconv.ParseInt(n.Value, 10, 64)
}

// Take implements Slots. Where the caller's slots have room, it is one
// conditional UpdateItem that adds the slot (its condition: fewer than
// max names in the map, lapsed ones included); otherwise — the first slot
// of a caller, a full map, one whose lapsed slots take the room — it
// reads the item, drops the lapsed slots, and writes it back conditioned
// on the version it read. A key this instance found full within fullHint
// is read first, so that its refusals write nothing.
func (d *DynamoDBSlots) Take(ctx context.Context, key, id string, until time.Time, max int) error {
	for range maxSlotRaces {
		if !d.full.has(key, d.now()) {
			switch err := d.add(ctx, key, id, until, max); {
			case err == nil:
				return nil
			case !errors.Is(err, errNoRoom):
				return err
			}
		}
		switch err := d.putWhole(ctx, key, id, until, max); {
		case errors.Is(err, errRaced):
			// Another writer came between the read and the write: most
			// often a caller's first slots, taken at once, each of which
			// found no item; the item is there now, and the next round
			// adds to it.
			continue
		default:
			return err
		}
	}
	// A caller whose own takes keep racing each other is holding its
	// slots as fast as they free: refused as full, its doing.
	return fmt.Errorf("%w: %d takes raced in a row", ErrFull, maxSlotRaces)
}

// errNoRoom and errRaced are how add and putWhole fail short of an answer.
var (
	errNoRoom = errors.New("ratelimit: no room for an added slot")
	errRaced  = errors.New("ratelimit: the slots changed since they were read")
)

// add adds the slot with one conditional UpdateItem, which DynamoDB
// applies in turn with any other: errNoRoom when the map is absent or
// holds max names, lapsed ones included.
func (d *DynamoDBSlots) add(ctx context.Context, key, id string, until time.Time, max int) error {
	_, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.Table),
		Key:                      d.key(key),
		UpdateExpression:         aws.String("SET #held.#id = :until, #v = #v + :one, #exp = :exp"),
		ConditionExpression:      aws.String("attribute_exists(#held) AND (size(#held) < :max OR attribute_exists(#held.#id))"),
		ExpressionAttributeNames: map[string]string{"#held": "held", "#id": id, "#v": "v", "#exp": "expires_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":until": &types.AttributeValueMemberN{Value: strconv.FormatInt(until.UnixMilli(), 10)},
			":one":   &types.AttributeValueMemberN{Value: "1"},
			":max":   &types.AttributeValueMemberN{Value: strconv.Itoa(max)},
			":exp":   &types.AttributeValueMemberN{Value: strconv.FormatInt(until.Add(slotItemGrace).Unix(), 10)},
		},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errNoRoom
	}
	return err
}

// putWhole reads the slots strongly consistently, drops the lapsed ones
// and, when there is room, writes them back with the slot, conditioned on
// the version read: ErrFull when there is no room, errRaced when another
// writer came between.
func (d *DynamoDBSlots) putWhole(ctx context.Context, key, id string, until time.Time, max int) error {
	held, v, err := d.read(ctx, key)
	if err != nil {
		return err
	}
	if _, ok := held[id]; ok {
		return nil
	}
	if len(held) >= max {
		now := d.now()
		d.full.keep(key, now.Add(fullHint), now, maxFullHints)
		return ErrFull
	}
	d.full.forget(key)
	held[id] = until
	m := make(map[string]types.AttributeValue, len(held))
	last := until
	for name, u := range held {
		m[name] = &types.AttributeValueMemberN{Value: strconv.FormatInt(u.UnixMilli(), 10)}
		if u.After(last) {
			last = u
		}
	}
	item := d.key(key)
	item["held"] = &types.AttributeValueMemberM{Value: m}
	item["v"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(v+1, 10)}
	item["expires_at"] = &types.AttributeValueMemberN{Value: strconv.FormatInt(last.Add(slotItemGrace).Unix(), 10)}
	in := &dynamodb.PutItemInput{TableName: aws.String(d.Table), Item: item, ConditionExpression: aws.String("attribute_not_exists(pk)")}
	if v != 0 {
		in.ConditionExpression = aws.String("#v = :v")
		in.ExpressionAttributeNames = map[string]string{"#v": "v"}
		in.ExpressionAttributeValues = map[string]types.AttributeValue{":v": &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}}
	}
	_, err = d.Client.PutItem(ctx, in)
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return errRaced
	}
	return err
}

// Give implements Slots.
func (d *DynamoDBSlots) Give(ctx context.Context, key, id string) error {
	_, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       d.key(key),
		UpdateExpression:          aws.String("REMOVE #held.#id SET #v = #v + :one"),
		ConditionExpression:       aws.String("attribute_exists(#held.#id)"),
		ExpressionAttributeNames:  map[string]string{"#held": "held", "#id": id, "#v": "v"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return nil // not held: given back already, or lapsed and swept
	}
	return err
}

// Held implements Slots.
func (d *DynamoDBSlots) Held(ctx context.Context, key string) (map[string]time.Time, error) {
	held, _, err := d.read(ctx, key)
	return held, err
}
