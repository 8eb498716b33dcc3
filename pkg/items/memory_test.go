package items_test

import (
	"testing"

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
