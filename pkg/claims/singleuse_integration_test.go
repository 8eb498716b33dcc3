//go:build integration

package claims_test

import (
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

// The single-use scenarios against DynamoDB Local, in both table shapes.
func TestSingleUseStateDynamoDB(t *testing.T) {
	testSingleUse(t, claims.NewDynamoDB(local.Client(), table))
}

func TestSingleUseStateDynamoDBSortKey(t *testing.T) {
	testSingleUse(t, claims.NewDynamoDBWith(local.Client(), sortedTable, claims.DynamoDBOptions{SortKey: "sk"}))
}
