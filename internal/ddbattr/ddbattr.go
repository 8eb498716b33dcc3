// Package ddbattr reads the attributes of a DynamoDB item strictly, for
// the stores that decode their own items (package tasks' task records,
// package events' events): an attribute that is missing where it is
// required, or of another type than written, is remembered as the first
// failure, so that a decoder reads every field in a row and checks once.
package ddbattr

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Reader reads the attributes of Item.
type Reader struct {
	Item map[string]types.AttributeValue
	// Kind is the error every failure wraps: the store's "not an item"
	// error, which its callers test for.
	Kind error
	err  error
}

// Fail records that the attribute name is missing or of the wrong type,
// unless a failure is recorded already.
func (r *Reader) Fail(name string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: attribute %s missing or of the wrong type", r.Kind, name)
	}
}

// Err is the first failure, or nil.
func (r *Reader) Err() error { return r.err }

// Str reads an optional string attribute: "" when absent.
func (r *Reader) Str(name string) string {
	v, ok := r.Item[name]
	if !ok {
		return ""
	}
	s, ok := v.(*types.AttributeValueMemberS)
	if !ok {
		r.Fail(name)
		return ""
	}
	return s.Value
}

// MustStr reads a required string attribute.
func (r *Reader) MustStr(name string) string {
	if _, ok := r.Item[name]; !ok {
		r.Fail(name)
		return ""
	}
	return r.Str(name)
}

// Bin reads an optional binary attribute: nil when absent, empty (not
// nil) when present and empty.
func (r *Reader) Bin(name string) []byte {
	v, ok := r.Item[name]
	if !ok {
		return nil
	}
	b, ok := v.(*types.AttributeValueMemberB)
	if !ok {
		r.Fail(name)
		return nil
	}
	if b.Value == nil {
		return []byte{}
	}
	return b.Value
}

// Num reads a required integer attribute.
func (r *Reader) Num(name string) int64 {
	n, ok := r.Item[name].(*types.AttributeValueMemberN)
	if !ok {
		r.Fail(name)
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		r.Fail(name)
	}
	return v
}

// OptNum reads an optional integer attribute: 0 when absent.
func (r *Reader) OptNum(name string) int64 {
	if _, ok := r.Item[name]; !ok {
		return 0
	}
	return r.Num(name)
}
