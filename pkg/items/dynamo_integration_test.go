//go:build integration

package items_test

import (
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
	"github.com/serverless-mcp/mcp-lambda/pkg/items/itemstest"
)

// table is keyed as template.yaml's claims table: pk and sk.
const table = "items"

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	dynamolocal.Main(m, &local, dynamolocal.Table{Name: table, SortKey: "sk"})
}

// TestDynamoDBContract holds the table in DynamoDB Local, with the claims
// in the same table as the endpoint keeps them, to the contract the table
// in memory meets (memory_test.go).
func TestDynamoDBContract(t *testing.T) {
	client := local.Client()
	itemstest.Run(t, func(t *testing.T) itemstest.Pair {
		return itemstest.Pair{Table: items.NewDynamoDB(client, table),
			Claims: claims.NewDynamoDBWith(client, table, claims.DynamoDBOptions{SortKey: "sk"})}
	})
}
