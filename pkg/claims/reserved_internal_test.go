package claims

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TestReservedWrite: a write into the claims table under a prefix this
// module keeps its items under is found, whichever kind of write it is;
// one into another table, or under another key, is not.
func TestReservedWrite(t *testing.T) {
	key := func(pk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: pk}, "sk": &types.AttributeValueMemberS{Value: "x"}}
	}
	put := func(table, pk string) Write {
		return Write{Item: &types.TransactWriteItem{Put: &types.Put{TableName: aws.String(table), Item: key(pk)}}}
	}
	for _, c := range []struct {
		name  string
		table string
		w     Write
		want  bool
	}{
		{"a note", "claims", put("claims", "notes#alice"), false},
		{"a claim", "claims", put("claims", "claim#abc"), true},
		{"a task, updated", "claims", Write{Item: &types.TransactWriteItem{Update: &types.Update{TableName: aws.String("claims"), Key: key("task#t1")}}}, true},
		{"an event, deleted", "claims", Write{Item: &types.TransactWriteItem{Delete: &types.Delete{TableName: aws.String("claims"), Key: key("event#e")}}}, true},
		{"a counter, checked", "claims", Write{Item: &types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: aws.String("claims"), Key: key("rate#k")}}}, true},
		{"the function's own table", "claims", put("mine", "task#t1"), false},
		{"a store that names no table", "", put("mine", "slots#s"), true},
		{"an in-memory write", "claims", Write{Apply: func(func() bool) error { return nil }}, false},
	} {
		err := reservedWrite(c.table, []Write{put(c.table, "notes#bob"), c.w})
		if got := err != nil; got != c.want || got && !errors.Is(err, ErrReservedKey) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	for _, p := range []string{"claim#", "redeem#", "once#", "task#", "rate#", "slots#", "event#", "catalog#"} {
		if got, ok := Reserved(p + "x"); !ok || got != p {
			t.Errorf("%s not reserved", p)
		}
	}
}
