package events

// The checks both logs make of an event, the rule of its expiry, and an
// event as a DynamoDB item (doc.go has the layout).

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/ddbattr"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// DefaultTTL is how long after its At an event is kept when a log's TTL
// is not set: far longer than a listen stream stays open (at most 15
// minutes) and reaches back, short enough that the log stays small.
const DefaultTTL = time.Hour

// DefaultReadLimit is how many events a Read returns at most when its
// limit is not positive: the page a listen stream reads.
const DefaultReadLimit = 100

// Bounds of an event's strings beyond stateless.CheckEvent's, from its
// DynamoDB item: the sort key holds the ID and is at most 1024 bytes, and
// the item, params included, at most 400 KB. Memory applies them too, so
// that an event is refused by both logs or by neither.
const (
	maxIDBytes   = 512
	maxTextBytes = 64 << 10 // topic, ID, owner and method together
)

// maxNanos is the last instant a sort key can hold: At in Unix
// nanoseconds, an int64, in the year 2262.
const maxNanos = math.MaxInt64

// check reports whether e can be recorded: stateless.CheckEvent, and what
// its item needs. Its At is between the Unix epoch and 2262 (the sort key
// orders by its Unix nanoseconds, which must be a non-negative int64; a
// zero At, which stateless.Server.Publish never leaves, is refused), its
// strings are UTF-8 (DynamoDB's strings are: a string that is not would be
// read back altered, under a topic no reader asks for), its ID at most
// maxIDBytes and its strings at most maxTextBytes together.
func check(e *stateless.Event) error {
	if err := stateless.CheckEvent(e); err != nil {
		return err
	}
	switch {
	case e.At.Before(time.Unix(0, 0)) || e.At.After(time.Unix(0, maxNanos)):
		return fmt.Errorf("events: the event %q is at %v, outside the years 1970 to 2262 a log orders by", e.ID, e.At)
	case len(e.ID) > maxIDBytes:
		return fmt.Errorf("events: an event's ID of %d bytes is over the %d a log keeps", len(e.ID), maxIDBytes)
	case len(e.Topic)+len(e.ID)+len(e.Owner)+len(e.Method) > maxTextBytes:
		return fmt.Errorf("events: the event %q has %d bytes of topic, ID, owner and method, over the %d a log keeps", e.ID, len(e.Topic)+len(e.ID)+len(e.Owner)+len(e.Method), maxTextBytes)
	case !utf8.ValidString(e.Topic) || !utf8.ValidString(e.ID) || !utf8.ValidString(e.Owner) || !utf8.ValidString(e.Method):
		return fmt.Errorf("events: the event %q has a topic, ID, owner or method that is not UTF-8", e.ID)
	}
	return nil
}

// checkAll checks every event, so that a batch with one that cannot be
// recorded is refused whole: a caller retrying it (with the event fixed
// or left out) would otherwise record the others twice.
func checkAll(events []stateless.Event) error {
	for i := range events {
		if err := check(&events[i]); err != nil {
			return fmt.Errorf("events: event %d of %d: %w", i+1, len(events), err)
		}
	}
	return nil
}

// nanos is t in Unix nanoseconds, clamped to what a sort key holds: a
// since before the epoch reads from the first event, one past 2262 none.
func nanos(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, 0)):
		return 0
	case t.After(time.Unix(0, maxNanos)):
		return maxNanos
	}
	return t.UnixNano()
}

// expiry is when an event at atNanos expires: At plus ttl, in epoch
// seconds rounded up, as the TTL attribute holds it. Both logs expire by
// it, so that they leave out the same events; rounded up, an event is
// never left out before its TTL has passed.
func expiry(atNanos int64, ttl time.Duration) int64 {
	const second = int64(time.Second)
	if atNanos > maxNanos-int64(ttl) {
		return maxNanos/second + 1
	}
	n := atNanos + int64(ttl)
	s := n / second
	if n%second != 0 {
		s++
	}
	return s
}

// expired reports whether an event that expires at the epoch second exp
// is past its TTL at now. DynamoDB deletes such items lazily, and until it
// does a read returns them: readers leave them out by this rule.
func expired(exp int64, now time.Time) bool { return exp <= now.Unix() }

// Keys of the items. The partition of a topic is a hash of it: a topic
// may be a resource's URI of any length, and the key is bounded (2048
// bytes) and best short, since every item and every read carries it.
const (
	eventPrefix   = "event#"
	catalogPrefix = "catalog#"
	// catalogSort is the sort key value of every catalog item.
	catalogSort = "catalog"
)

// eventPartition is the partition key value of topic's events: 22
// characters of base64url are 132 bits of SHA-256, beyond any collision
// by chance. A collision made on purpose costs only a few skipped items,
// since every item names its topic and a read leaves out the others'.
func eventPartition(topic string) string {
	h := sha256.Sum256([]byte(topic))
	return eventPrefix + base64.RawURLEncoding.EncodeToString(h[:])[:22]
}

// catalogPartition is the partition key value of scope's catalog item:
// one item holds every catalog of an endpoint, so that an instance
// records them in one request.
func catalogPartition(scope string) string {
	h := sha256.Sum256([]byte(scope))
	return catalogPrefix + base64.RawURLEncoding.EncodeToString(h[:])[:22]
}

// catalogAttr is the attribute of the catalog item that holds the digest
// of the catalog called name.
func catalogAttr(name string) string { return attrDigest + "_" + name }

// itemScope is the scope an event item was written in ("" when it has no
// scope attribute).
func itemScope(it map[string]types.AttributeValue) string {
	if v, ok := it[attrScope].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// digits20 is n, non-negative, as 20 decimal digits: fixed width, so that
// the sort key's byte order is the order of the numbers.
func digits20(n int64) string {
	s := strconv.FormatInt(n, 10)
	return strings.Repeat("0", 20-len(s)) + s
}

// eventSort is the sort key value of an event at atNanos with id: in
// time order, then in the order of the IDs (those at the same nanosecond
// are read in a fixed order, as Memory reads them).
func eventSort(atNanos int64, id string) string { return digits20(atNanos) + "#" + id }

// sinceSort is the sort key value a read from since starts at: the 20
// digits alone sort before every event at that nanosecond, so a read is
// inclusive of it.
func sinceSort(since time.Time) string { return digits20(nanos(since)) }

// The attributes of an event item besides its key, and of a catalog item.
const (
	attrTopic     = "topic"
	attrID        = "id"
	attrAt        = "at"
	attrOwner     = "owner"
	attrMethod    = "method"
	attrParams    = "params"
	attrExpiresAt = "expires_at" // epoch seconds, the table's TTL attribute (template.yaml)
	attrDigest    = "digest"
	attrScope     = "scope" // only when the log has a Scope
)

// encodeEventItem is e as an item with the key attributes pk and sk,
// expiring at the epoch second exp. Owner and params are left out when
// empty: most events have neither, and each attribute costs its name.
// The params are a string, not a binary, so that the item reads as the
// JSON it is in the console.
func encodeEventItem(pk, sk string, e *stateless.Event, exp int64) map[string]types.AttributeValue {
	at := nanos(e.At)
	it := map[string]types.AttributeValue{
		pk:            str(eventPartition(e.Topic)),
		sk:            str(eventSort(at, e.ID)),
		attrTopic:     str(e.Topic),
		attrID:        str(e.ID),
		attrAt:        num(at),
		attrMethod:    str(e.Method),
		attrExpiresAt: num(exp),
	}
	if e.Owner != "" {
		it[attrOwner] = str(e.Owner)
	}
	if e.Params != nil {
		it[attrParams] = str(string(e.Params))
	}
	return it
}

// errItem is the cause of an item that is not an event.
var errItem = errors.New("events: not an event item")

// decodeEventItem reads the event of an item encodeEventItem wrote. It is
// strict: an attribute missing or of the wrong type, a number that is not
// an integer, an event that check refuses, each is an error wrapping
// errItem, so that what a read returns is what Append would take. The key
// attributes are not read: the topic and the ID are attributes of their
// own, and the key is where Read found the item.
func decodeEventItem(it map[string]types.AttributeValue) (stateless.Event, error) {
	d := ddbattr.Reader{Item: it, Kind: errItem}
	e := stateless.Event{
		Topic:  d.MustStr(attrTopic),
		ID:     d.MustStr(attrID),
		Owner:  d.Str(attrOwner),
		Method: d.MustStr(attrMethod),
	}
	at := d.Num(attrAt)
	d.Num(attrExpiresAt)
	if v, ok := it[attrParams]; ok {
		s, ok := v.(*types.AttributeValueMemberS)
		if !ok {
			d.Fail(attrParams)
		} else {
			e.Params = json.RawMessage(s.Value)
		}
	}
	if d.Err() != nil {
		return stateless.Event{}, d.Err()
	}
	if at < 0 {
		return stateless.Event{}, fmt.Errorf("%w: attribute %s is before the epoch", errItem, attrAt)
	}
	e.At = time.Unix(0, at).UTC()
	if err := check(&e); err != nil {
		return stateless.Event{}, fmt.Errorf("%w: %w", errItem, err)
	}
	return e, nil
}

// itemExpiry is the TTL attribute of an item decodeEventItem read.
func itemExpiry(it map[string]types.AttributeValue) int64 {
	d := ddbattr.Reader{Item: it, Kind: errItem}
	return d.Num(attrExpiresAt)
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
