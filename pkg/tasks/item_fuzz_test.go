package tasks

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

// itemOverhead bounds what a task item adds to its record's StoredSize:
// attribute names, numbers, the key's names and values, map and list
// headers. MaxRecordBytes plus it is within DynamoDB's item limit.
const itemOverhead = 1 << 10

func TestRecordBoundFitsAnItem(t *testing.T) {
	if MaxRecordBytes+itemOverhead > MaxItemBytes {
		t.Fatalf("a record of %d bytes and %d of overhead do not fit %d", MaxRecordBytes, itemOverhead, MaxItemBytes)
	}
}

// FuzzTaskItem: for every record, its item is at most its StoredSize
// plus itemOverhead by DynamoDB's counting, so a record within
// MaxRecordBytes is always accepted and fits the item limit, and
// anything the encoder accepts reads back as it was written. The record
// is built from the input: its members separated by 0xff, the rest as
// answer keys and values, and scale making the arguments as many times
// longer (padding) so that records reach and cross the bound.
//
// The seeds are in testdata/fuzz/FuzzTaskItem.
func FuzzTaskItem(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte, scale uint16) {
		if len(data) > 4096 {
			return
		}
		rec := recordFrom(data, int(scale))
		key := (&DynamoDB{SortKey: "sk"}).key(rec.ID)
		it, err := encodeItem(key, rec)
		stored := rec.StoredSize()
		if err != nil {
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("encoding: %v", err)
			}
			if stored <= MaxRecordBytes {
				t.Fatalf("a record of %d bytes, within the bound, was refused: %v", stored, err)
			}
			return
		}
		n := ItemSize(it)
		if n > MaxItemBytes || n > stored+itemOverhead {
			t.Fatalf("a record of %d bytes made an item of %d", stored, n)
		}
		back, err := decodeItem(it)
		if err != nil {
			t.Fatalf("decoding: %v", err)
		}
		back.ID = rec.ID
		if !sameRecord(back, rec) {
			t.Fatalf("read back\n%+v\nwrote\n%+v", back, rec)
		}
	})
}

// recordFrom builds a record from fuzz input (see FuzzTaskItem).
func recordFrom(data []byte, scale int) *Record {
	parts := bytes.Split(data, []byte{0xff})
	part := func(i int) []byte {
		if i < len(parts) {
			return parts[i]
		}
		return nil
	}
	now := time.Unix(1_700_000_000, int64(len(data))*7919).UTC()
	rec := &Record{
		ID: "id" + strconv.Itoa(len(data)), Version: int64(scale), Status: Status(part(0)),
		Principal: string(part(1)), Tool: string(part(2)), Message: string(part(3)), IdempotencyKey: string(part(4)), Owner: string(part(5)),
		ProtocolVersion: "2026-07-28", CreatedAt: now, UpdatedAt: now.Add(time.Millisecond), ExpiresAt: now.Add(time.Hour), LeaseUntil: now.Add(time.Minute),
		Arguments:    raw(padding(part(6), scale)),
		Capabilities: raw(part(7)), State: part(8), HasState: part(8) != nil, Result: raw(part(9)), Error: raw(part(10)),
		Attempts: scale % 5,
	}
	if rest := parts[min(len(parts), 11):]; len(rest) > 0 {
		rec.Responses, rec.Requests = map[string]json.RawMessage{}, map[string]json.RawMessage{}
		for i := 0; i+1 < len(rest); i += 2 {
			k := string(rest[i])
			rec.Responses[k] = raw(rest[i+1])
			rec.Requests[k+"?"] = raw(rest[i+1])
			rec.Asked = append(rec.Asked, k)
		}
	}
	return rec
}

// pad is what padding slices: the bytes of a large member matter to the
// fuzz target only by their number, and one buffer spares every
// execution a copy of up to 420 KB.
var pad = bytes.Repeat([]byte("<"), 420<<10)

// padding is p's length times 1+scale bytes, at most len(pad): a member
// that takes a record to its bound and past it.
func padding(p []byte, scale int) []byte {
	if p == nil {
		return nil
	}
	return pad[:min(len(p)*(1+scale), len(pad))]
}

// raw is b as a record's raw member: nil stays nil.
func raw(b []byte) json.RawMessage {
	if b == nil {
		return nil
	}
	return json.RawMessage(b)
}

// sameRecord compares records as a store keeps them: empty and nil
// members alike, times by instant.
func sameRecord(a, b *Record) bool {
	norm := func(r *Record) Record {
		c := *r
		c.CreatedAt, c.UpdatedAt, c.ExpiresAt, c.LeaseUntil = time.Time{}, time.Time{}, time.Time{}, time.Time{}
		for _, p := range []*json.RawMessage{&c.Arguments, &c.Capabilities, &c.Result, &c.Error} {
			if len(*p) == 0 {
				*p = nil
			}
		}
		if len(c.State) == 0 {
			c.State = nil
		}
		if len(c.Responses) == 0 {
			c.Responses = nil
		}
		if len(c.Requests) == 0 {
			c.Requests = nil
		}
		if len(c.Asked) == 0 {
			c.Asked = nil
		}
		for _, m := range []map[string]json.RawMessage{c.Responses, c.Requests} {
			for k, v := range m {
				if len(v) == 0 {
					m[k] = nil
				}
			}
		}
		return c
	}
	na, nb := norm(a), norm(b)
	return reflect.DeepEqual(na, nb) && a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt) &&
		a.ExpiresAt.Equal(b.ExpiresAt) && a.LeaseUntil.Equal(b.LeaseUntil)
}

// TestWriteErrorClassifiesSize: DynamoDB's refusal of an item for its
// size (as TestItemSizeAsDynamoDBCounts has DynamoDB Local give it) is
// permanent, ErrTooLarge; its other failures are not.
func TestWriteErrorClassifiesSize(t *testing.T) {
	size := &smithy.GenericAPIError{Code: "ValidationException", Message: "Item size has exceeded the maximum allowed size"}
	if err := writeError("writing", &smithy.OperationError{ServiceID: "DynamoDB", OperationName: "PutItem", Err: size}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("item size: %v", err)
	}
	for _, e := range []error{
		&smithy.GenericAPIError{Code: "ValidationException", Message: "One or more parameter values were invalid"},
		&smithy.GenericAPIError{Code: "ProvisionedThroughputExceededException", Message: "item size"},
		errors.New("connection reset"),
	} {
		if err := writeError("writing", e); errors.Is(err, ErrTooLarge) {
			t.Errorf("%v is not about size: %v", e, err)
		}
	}
}
