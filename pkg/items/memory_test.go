package items_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
	"github.com/serverless-mcp/mcp-lambda/pkg/items/itemstest"
)

// TestMemoryContract holds the table in memory, paired with claims in
// memory, to the contract DynamoDB meets (dynamo_integration_test.go).
func TestMemoryContract(t *testing.T) {
	itemstest.Run(t, func(t *testing.T) itemstest.Pair {
		return itemstest.Pair{Table: items.NewMemory(items.MemoryOptions{}), Claims: claims.NewMemory()}
	})
}

// TestMemoryBounds: a table in memory stores at most MaxItems items,
// refusing a write past them with ErrFull and nothing written; deletes
// and writes in place still go through; and with a TTL attribute it
// makes room from expired items before refusing.
func TestMemoryBounds(t *testing.T) {
	ctx := context.Background()
	m := items.NewMemory(items.MemoryOptions{MaxItems: 2, TTL: "expires_at"})
	past, future := items.Int(time.Now().Add(-time.Hour).Unix()), items.Int(time.Now().Add(time.Hour).Unix())
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(m.Write(ctx, items.Put(items.Key{PK: "p", SK: "a"}, items.Item{"expires_at": future})))
	must(m.Write(ctx, items.Put(items.Key{PK: "p", SK: "b"}, items.Item{"expires_at": future})))
	if err := m.Write(ctx, items.Put(items.Key{PK: "p", SK: "c"}, items.Item{}), items.Delete(items.Key{PK: "p", SK: "z"})); !errors.Is(err, items.ErrFull) {
		t.Fatalf("a third item: %v", err)
	}
	if got, _, _ := m.Query(ctx, "p", "", 10); len(got) != 2 || m.MaxItems() != 2 {
		t.Fatalf("stored %v", got)
	}
	// In place, and a delete with a put: the count does not grow.
	must(m.Write(ctx, items.Update(items.Key{PK: "p", SK: "a"}).Add("n", 1)))
	must(m.Write(ctx, items.Delete(items.Key{PK: "p", SK: "a"}), items.Put(items.Key{PK: "p", SK: "c"}, items.Item{"expires_at": past})))
	// c has expired: it makes room.
	must(m.Write(ctx, items.Put(items.Key{PK: "q", SK: "d"}, items.Item{})))
	if _, ok, _ := m.Get(ctx, items.Key{PK: "p", SK: "c"}); ok {
		t.Fatal("the expired item is still there")
	}
	if _, ok, _ := m.Get(ctx, items.Key{PK: "p", SK: "b"}); !ok {
		t.Fatal("an item that has not expired was deleted")
	}
}

// TestMemoryCopies: what a caller holds and what the table stores never
// share a value.
func TestMemoryCopies(t *testing.T) {
	ctx := context.Background()
	m := items.NewMemory(items.MemoryOptions{})
	k := items.Key{PK: "p", SK: "a"}
	in := &types.AttributeValueMemberS{Value: "before"}
	if err := m.Write(ctx, items.Put(k, items.Item{"v": in})); err != nil {
		t.Fatal(err)
	}
	in.Value = "changed by the caller"
	got, _, _ := m.Get(ctx, k)
	got["v"].(*types.AttributeValueMemberS).Value = "changed by a reader"
	again, _, _ := m.Get(ctx, k)
	if again["v"].(*types.AttributeValueMemberS).Value != "before" {
		t.Fatalf("stored %v", again["v"])
	}
}
