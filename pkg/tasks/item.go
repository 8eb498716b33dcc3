package tasks

// A task record as a DynamoDB item: every member its own attribute, raw
// JSON and binary as binary, strings as strings, so that the item's size
// is the record's raw size (Record.StoredSize) plus the
// attribute names and a few numbers. Nothing is escaped or re-encoded: a
// result of 190 KB of "<" is 190 KB in the table.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/internal/ddbattr"
)

// MaxItemBytes is DynamoDB's item size limit: 400 KB, counting attribute
// names and values.
const MaxItemBytes = ddbattr.MaxItemBytes

// The attributes of a task item besides its key.
const (
	attrVersion      = "version"
	attrExpiresAt    = "expires_at" // epoch seconds, the table's TTL attribute
	attrExpires      = "expires_ns"
	attrStatus       = "status"
	attrPrincipal    = "principal"
	attrQuota        = "quota"
	attrTool         = "tool"
	attrMessage      = "message"
	attrCreated      = "created_ns"
	attrUpdated      = "updated_ns"
	attrProtocol     = "protocol_version"
	attrKey          = "idempotency_key"
	attrArguments    = "arguments"
	attrCapabilities = "capabilities"
	attrState        = "state"
	attrHasState     = "has_state"
	attrResponses    = "responses"
	attrRequests     = "requests"
	attrAsked        = "asked"
	attrResult       = "result"
	attrError        = "error"
	attrOwner        = "owner"
	attrLease        = "lease_ns"
	attrAttempts     = "attempts"
	// attrBody is the whole record as JSON, as items were written before
	// this layout; such items are still read.
	attrBody = "body"
)

// entryPrefix begins the name of each element of a map attribute, so
// that a record's empty key ("") is a name DynamoDB accepts.
const entryPrefix = "."

// encodeItem returns rec as an item with key; ErrTooLarge
// when the item would be over MaxItemBytes.
func encodeItem(key map[string]types.AttributeValue, rec *Record) (map[string]types.AttributeValue, error) {
	it := make(map[string]types.AttributeValue, len(key)+20)
	for k, v := range key {
		it[k] = v
	}
	it[attrVersion] = num(rec.Version)
	it[attrExpiresAt] = num(rec.ExpiresAt.Unix())
	tm := func(name string, t time.Time) {
		if !t.IsZero() {
			it[name] = num(t.UnixNano())
		}
	}
	tm(attrExpires, rec.ExpiresAt)
	tm(attrCreated, rec.CreatedAt)
	tm(attrUpdated, rec.UpdatedAt)
	tm(attrLease, rec.LeaseUntil)
	str := func(name, v string) {
		if v != "" {
			it[name] = &types.AttributeValueMemberS{Value: v}
		}
	}
	bin := func(name string, v []byte) {
		if v != nil {
			it[name] = &types.AttributeValueMemberB{Value: v}
		}
	}
	raws := func(name string, m map[string]json.RawMessage) {
		if m != nil {
			av := make(map[string]types.AttributeValue, len(m))
			for k, v := range m {
				av[entryPrefix+k] = &types.AttributeValueMemberB{Value: v}
			}
			it[name] = &types.AttributeValueMemberM{Value: av}
		}
	}
	str(attrStatus, string(rec.Status))
	str(attrPrincipal, rec.Principal)
	str(attrQuota, rec.Quota)
	str(attrTool, rec.Tool)
	str(attrMessage, rec.Message)
	str(attrProtocol, rec.ProtocolVersion)
	str(attrKey, rec.IdempotencyKey)
	str(attrOwner, rec.Owner)
	bin(attrArguments, rec.Arguments)
	bin(attrCapabilities, rec.Capabilities)
	bin(attrState, rec.State)
	bin(attrResult, rec.Result)
	bin(attrError, rec.Error)
	if rec.HasState {
		it[attrHasState] = &types.AttributeValueMemberBOOL{Value: true}
	}
	if rec.Attempts != 0 {
		it[attrAttempts] = num(int64(rec.Attempts))
	}
	raws(attrResponses, rec.Responses)
	raws(attrRequests, rec.Requests)
	if rec.Asked != nil {
		l := make([]types.AttributeValue, len(rec.Asked))
		for i, k := range rec.Asked {
			l[i] = &types.AttributeValueMemberS{Value: k}
		}
		it[attrAsked] = &types.AttributeValueMemberL{Value: l}
	}
	if n := ItemSize(it); n > MaxItemBytes {
		return nil, fmt.Errorf("tasks: the task's item would be %d bytes, over DynamoDB's %d: %w", n, MaxItemBytes, ErrTooLarge)
	}
	return it, nil
}

// errItem is the cause of an item that is not a task record.
var errItem = errors.New("tasks: not a task item")

// decodeItem reads a task record from an item that encodeItem wrote (or
// one with the older JSON body).
func decodeItem(it map[string]types.AttributeValue) (*Record, error) {
	if b, ok := it[attrBody].(*types.AttributeValueMemberB); ok {
		var rec Record
		if err := jsonv2.Unmarshal(b.Value, &rec); err != nil {
			return nil, fmt.Errorf("tasks: decoding the task: %w", err)
		}
		return &rec, nil
	}
	d := itemReader{ddbattr.Reader{Item: it, Kind: errItem}}
	rec := &Record{
		Version:         d.Num(attrVersion),
		Status:          Status(d.Str(attrStatus)),
		Principal:       d.Str(attrPrincipal),
		Quota:           d.Str(attrQuota),
		Tool:            d.Str(attrTool),
		Message:         d.Str(attrMessage),
		CreatedAt:       d.nanos(attrCreated),
		UpdatedAt:       d.nanos(attrUpdated),
		LeaseUntil:      d.nanos(attrLease),
		ProtocolVersion: d.Str(attrProtocol),
		IdempotencyKey:  d.Str(attrKey),
		Owner:           d.Str(attrOwner),
		Arguments:       d.Bin(attrArguments),
		Capabilities:    d.Bin(attrCapabilities),
		State:           d.Bin(attrState),
		Result:          d.Bin(attrResult),
		Error:           d.Bin(attrError),
		Responses:       d.raws(attrResponses),
		Requests:        d.raws(attrRequests),
		Asked:           d.strs(attrAsked),
		Attempts:        int(d.OptNum(attrAttempts)),
	}
	if v, ok := it[attrHasState]; ok {
		b, isBool := v.(*types.AttributeValueMemberBOOL)
		rec.HasState = isBool && b.Value
		if !isBool {
			d.Fail(attrHasState)
		}
	}
	rec.ExpiresAt = d.nanos(attrExpires)
	d.Num(attrExpiresAt)
	if d.Err() != nil {
		return nil, d.Err()
	}
	return rec, nil
}

// itemReader reads the attributes of a task item (ddbattr), and the
// shapes only a task has.
type itemReader struct{ ddbattr.Reader }

// nanos reads a time kept as epoch nanoseconds; absent, the zero time.
func (d *itemReader) nanos(name string) time.Time {
	if _, ok := d.Item[name]; !ok {
		return time.Time{}
	}
	return time.Unix(0, d.Num(name)).UTC()
}

func (d *itemReader) raws(name string) map[string]json.RawMessage {
	v, ok := d.Item[name]
	if !ok {
		return nil
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		d.Fail(name)
		return nil
	}
	out := make(map[string]json.RawMessage, len(m.Value))
	for k, e := range m.Value {
		b, ok := e.(*types.AttributeValueMemberB)
		if !ok || !strings.HasPrefix(k, entryPrefix) {
			d.Fail(name)
			return nil
		}
		out[k[len(entryPrefix):]] = b.Value
	}
	return out
}

func (d *itemReader) strs(name string) []string {
	v, ok := d.Item[name]
	if !ok {
		return nil
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		d.Fail(name)
		return nil
	}
	out := make([]string, len(l.Value))
	for i, e := range l.Value {
		s, ok := e.(*types.AttributeValueMemberS)
		if !ok {
			d.Fail(name)
			return nil
		}
		out[i] = s.Value
	}
	return out
}

// ItemSize is the size DynamoDB counts for an item, by its documented
// rules ("Item sizes and formats", DynamoDB developer guide), never less
// than DynamoDB does (internal/ddbattr.Size).
func ItemSize(it map[string]types.AttributeValue) int { return ddbattr.Size(it) }
