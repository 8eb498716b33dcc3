package ddbattr

import "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

// MaxItemBytes is DynamoDB's item size limit: 400 KB, counting attribute
// names and values.
const MaxItemBytes = 400 << 10

// Size is the size DynamoDB counts for an item, by its documented rules
// ("Item sizes and formats", DynamoDB developer guide): each attribute's
// name in UTF-8 bytes plus its value — a string its UTF-8 bytes, a binary
// its raw bytes, a number up to 21 bytes (counted here as 21 always), a
// Boolean or null one byte, a list or map 3 bytes plus one byte per
// element plus its elements (a map's element names included), a set its
// members. It never counts less than DynamoDB does, so that an item it
// passes is one DynamoDB stores.
func Size(item map[string]types.AttributeValue) int {
	n := 0
	for k, v := range item {
		n += len(k) + ValueSize(v)
	}
	return n
}

// ValueSize is one attribute value's size, as Size counts it.
func ValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return 21
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += len(k) + ValueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += ValueSize(e) + 1
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 3
		for _, e := range v.Value {
			n += len(e) + 1
		}
		return n
	case *types.AttributeValueMemberNS:
		return 3 + 22*len(v.Value)
	case *types.AttributeValueMemberBS:
		n := 3
		for _, e := range v.Value {
			n += len(e) + 1
		}
		return n
	}
	// A value of a type this module does not know: too large to store.
	return MaxItemBytes + 1
}
