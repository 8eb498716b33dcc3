package events

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// TestItemLayout: the keys and attributes of an event's item are the
// package documentation's.
func TestItemLayout(t *testing.T) {
	topic := stateless.ResourceTopic("file:///" + strings.Repeat("long/", 500))
	e := stateless.Event{Topic: topic, ID: "abc", At: time.Unix(1_800_000_000, 42), Method: "m", Params: json.RawMessage(`{"a":1}`)}
	it := encodeEventItem("pk", "sk", &e, expiry(e.At.UnixNano(), time.Hour))
	h := sha256.Sum256([]byte(topic))
	want := map[string]string{
		"pk": "event#" + base64.RawURLEncoding.EncodeToString(h[:])[:22], "sk": "01800000000000000042#abc",
		"topic": topic, "id": "abc", "method": "m", "params": `{"a":1}`, "at": "1800000000000000042", "expires_at": "1800003601",
	}
	if len(it) != len(want) {
		t.Fatalf("%d attributes, want %d: %v", len(it), len(want), it)
	}
	for name, v := range want {
		var got string
		switch a := it[name].(type) {
		case *types.AttributeValueMemberS:
			got = a.Value
		case *types.AttributeValueMemberN:
			got = a.Value
		}
		if got != v {
			t.Errorf("%s = %q, want %q", name, got, v)
		}
	}
	e.Owner = "alice"
	if it := encodeEventItem("pk", "sk", &e, 0); it["owner"].(*types.AttributeValueMemberS).Value != "alice" {
		t.Error("no owner")
	}
	if sinceSort(time.Unix(1_800_000_000, 42)) >= "01800000000000000042#" || sinceSort(time.Unix(1_800_000_000, 43)) <= "01800000000000000042#~" {
		t.Error("since does not bound the sort keys as it should")
	}
	if sinceSort(time.Time{}) != strings.Repeat("0", 20) || sinceSort(time.Unix(1<<40, 0)) != "09223372036854775807" {
		t.Error("since is not clamped")
	}
}

// TestExpiry: an event expires at At plus the TTL rounded up to the
// second, never before.
func TestExpiry(t *testing.T) {
	for _, c := range []struct {
		at   int64
		want int64
	}{
		{0, 3600}, {1, 3601}, {999_999_999, 3601}, {1_000_000_000, 3601}, {maxNanos, maxNanos/int64(time.Second) + 1},
	} {
		if got := expiry(c.at, time.Hour); got != c.want {
			t.Errorf("expiry(%d) = %d, want %d", c.at, got, c.want)
		}
	}
	if expired(10, time.Unix(9, 999_999_999)) || !expired(10, time.Unix(10, 0)) {
		t.Error("expired")
	}
}

// TestDecodeStrict: an item an event's encoding would not be is refused.
func TestDecodeStrict(t *testing.T) {
	e := stateless.Event{Topic: "t", ID: "i", At: time.Unix(5, 0), Method: "m", Params: json.RawMessage(`{}`)}
	good := func() map[string]types.AttributeValue { return encodeEventItem("pk", "sk", &e, 99) }
	if got, err := decodeEventItem(good()); err != nil || got.Topic != "t" || !got.At.Equal(e.At) || string(got.Params) != "{}" {
		t.Fatalf("%+v, %v", got, err)
	}
	for name, spoil := range map[string]func(map[string]types.AttributeValue){
		"no topic":        func(it map[string]types.AttributeValue) { delete(it, "topic") },
		"no id":           func(it map[string]types.AttributeValue) { delete(it, "id") },
		"no at":           func(it map[string]types.AttributeValue) { delete(it, "at") },
		"no method":       func(it map[string]types.AttributeValue) { delete(it, "method") },
		"no expiry":       func(it map[string]types.AttributeValue) { delete(it, "expires_at") },
		"at a string":     func(it map[string]types.AttributeValue) { it["at"] = str("5") },
		"at a fraction":   func(it map[string]types.AttributeValue) { it["at"] = &types.AttributeValueMemberN{Value: "5.5"} },
		"at negative":     func(it map[string]types.AttributeValue) { it["at"] = num(-1) },
		"expiry a string": func(it map[string]types.AttributeValue) { it["expires_at"] = str("5") },
		"owner a number":  func(it map[string]types.AttributeValue) { it["owner"] = num(1) },
		"params binary": func(it map[string]types.AttributeValue) {
			it["params"] = &types.AttributeValueMemberB{Value: []byte("{}")}
		},
		"params an array": func(it map[string]types.AttributeValue) { it["params"] = str("[]") },
		"params empty":    func(it map[string]types.AttributeValue) { it["params"] = str("") },
		"empty topic":     func(it map[string]types.AttributeValue) { it["topic"] = str("") },
		"topic binary": func(it map[string]types.AttributeValue) {
			it["topic"] = &types.AttributeValueMemberB{Value: []byte("t")}
		},
	} {
		it := good()
		spoil(it)
		if got, err := decodeEventItem(it); !errors.Is(err, errItem) {
			t.Errorf("%s: %+v, %v", name, got, err)
		}
	}
}
