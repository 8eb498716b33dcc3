package events

import (
	"bytes"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// FuzzDecodeEventItem: whatever item a read meets, decodeEventItem does
// not panic; what it decodes stateless.CheckEvent and check accept, is the
// item's attributes as they were, and encodes to an item that decodes to
// the same event; what it refuses wraps errItem. The item is built from
// the input: its attributes as strings (at and expires_at as a number's
// text), and shape's bits leaving attributes out or giving them another
// type (see itemFrom).
//
// The seeds are in testdata/fuzz/FuzzDecodeEventItem.
func FuzzDecodeEventItem(f *testing.F) {
	f.Fuzz(func(t *testing.T, topic, id, at, owner, method string, params []byte, shape uint8) {
		if len(topic)+len(id)+len(owner)+len(method)+len(params) > 64<<10 {
			return
		}
		it := itemFrom(topic, id, at, owner, method, params, shape)
		e, err := decodeEventItem(it)
		if err != nil {
			if !errors.Is(err, errItem) {
				t.Fatalf("an error not wrapping errItem: %v", err)
			}
			if e.Topic != "" || e.ID != "" || e.Params != nil {
				t.Fatalf("an error with an event: %v, %+v", err, e)
			}
			return
		}
		if err := stateless.CheckEvent(&e); err != nil {
			t.Fatalf("decoded an event CheckEvent refuses: %v", err)
		}
		if err := check(&e); err != nil {
			t.Fatalf("decoded an event Append refuses: %v", err)
		}
		n, _ := strconv.ParseInt(at, 10, 64)
		if e.Topic != topic || e.ID != id || e.Method != method || e.At.UnixNano() != n || e.At.Location() != time.UTC {
			t.Fatalf("decoded %+v from topic %q id %q at %q method %q", e, topic, id, at, method)
		}
		if shape&shapeOwner == 0 && e.Owner != owner || shape&shapeOwner != 0 && e.Owner != "" {
			t.Fatalf("owner %q from %q (shape %08b)", e.Owner, owner, shape)
		}
		if shape&shapeNoParams != 0 && e.Params != nil || shape&shapeNoParams == 0 && !bytes.Equal(e.Params, params) {
			t.Fatalf("params %q from %q (shape %08b)", e.Params, params, shape)
		}
		back, err := decodeEventItem(encodeEventItem("pk", "sk", &e, expiry(n, time.Hour)))
		if err != nil {
			t.Fatalf("the encoding of a decoded event does not decode: %v", err)
		}
		if back.Topic != e.Topic || back.ID != e.ID || !back.At.Equal(e.At) || back.Owner != e.Owner || back.Method != e.Method ||
			!bytes.Equal(back.Params, e.Params) || (back.Params == nil) != (e.Params == nil) {
			t.Fatalf("round trip:\n%+v\n%+v", back, e)
		}
	})
}

// The bits of FuzzDecodeEventItem's shape.
const (
	shapeNoParams   = 1 << iota // no params attribute
	shapeOwner                  // no owner attribute
	shapeTopicB                 // topic a binary
	shapeAtS                    // at a string
	shapeNoExpiry               // no expires_at
	shapeNoMethod               // no method
	shapeParamsB                // params a binary
	shapeExpiryText             // expires_at the at's text, not a number of its own
)

// itemFrom is the item of FuzzDecodeEventItem's input.
func itemFrom(topic, id, at, owner, method string, params []byte, shape uint8) map[string]types.AttributeValue {
	it := map[string]types.AttributeValue{
		"pk":          str(eventPartition(topic)),
		"sk":          str(at + "#" + id),
		attrTopic:     str(topic),
		attrID:        str(id),
		attrAt:        &types.AttributeValueMemberN{Value: at},
		attrOwner:     str(owner),
		attrMethod:    str(method),
		attrParams:    str(string(params)),
		attrExpiresAt: num(1_800_000_000),
	}
	if shape&shapeNoParams != 0 {
		delete(it, attrParams)
	}
	if shape&shapeOwner != 0 {
		delete(it, attrOwner)
	}
	if shape&shapeTopicB != 0 {
		it[attrTopic] = &types.AttributeValueMemberB{Value: []byte(topic)}
	}
	if shape&shapeAtS != 0 {
		it[attrAt] = str(at)
	}
	if shape&shapeNoExpiry != 0 {
		delete(it, attrExpiresAt)
	}
	if shape&shapeNoMethod != 0 {
		delete(it, attrMethod)
	}
	if shape&shapeParamsB != 0 && shape&shapeNoParams == 0 {
		it[attrParams] = &types.AttributeValueMemberB{Value: params}
	}
	if shape&shapeExpiryText != 0 && shape&shapeNoExpiry == 0 {
		it[attrExpiresAt] = &types.AttributeValueMemberN{Value: at}
	}
	return it
}
