package ddbattr

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

var errNotItem = errors.New("not an item")

// TestReader: values as written read back; the first attribute missing
// where required, or of another type, is the failure, wrapping Kind.
func TestReader(t *testing.T) {
	r := Reader{Kind: errNotItem, Item: map[string]types.AttributeValue{
		"s": &types.AttributeValueMemberS{Value: "v"},
		"n": &types.AttributeValueMemberN{Value: "42"},
		"b": &types.AttributeValueMemberB{},
	}}
	if r.MustStr("s") != "v" || r.Str("absent") != "" || r.Num("n") != 42 || r.OptNum("absent") != 0 ||
		r.Bin("b") == nil || len(r.Bin("b")) != 0 || r.Bin("absent") != nil || r.Err() != nil {
		t.Fatalf("reading a good item: %v", r.Err())
	}
	for name, read := range map[string]func(*Reader){
		"required string absent": func(r *Reader) { r.MustStr("absent") },
		"string of a number":     func(r *Reader) { r.Str("n") },
		"number absent":          func(r *Reader) { r.Num("absent") },
		"number of a string":     func(r *Reader) { r.Num("s") },
		"binary of a string":     func(r *Reader) { r.Bin("s") },
	} {
		bad := Reader{Kind: errNotItem, Item: r.Item}
		read(&bad)
		bad.Num("s") // a second failure does not replace the first
		if !errors.Is(bad.Err(), errNotItem) {
			t.Errorf("%s: %v", name, bad.Err())
		}
	}
	frac := Reader{Kind: errNotItem, Item: map[string]types.AttributeValue{"n": &types.AttributeValueMemberN{Value: "1.5"}}}
	if frac.Num("n"); frac.Err() == nil {
		t.Error("a number that is no integer read")
	}
}
