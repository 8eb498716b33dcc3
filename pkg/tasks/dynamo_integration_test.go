//go:build integration

package tasks_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks/taskstest"
)

// table has the partition key alone; sortedTable has template.yaml's
// composite key, shared with the claims and the notes.
const (
	table       = "tasks-test"
	sortedTable = "tasks-test-sorted"
)

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	ctx := context.Background()
	var err error
	local, err = dynamolocal.Start(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := dynamolocal.CreateHashTable(ctx, local.Client(), table); err != nil {
		fmt.Fprintln(os.Stderr, "creating the table:", err)
		local.Stop()
		os.Exit(1)
	}
	if err := dynamolocal.CreateTable(ctx, local.Client(), sortedTable); err != nil {
		fmt.Fprintln(os.Stderr, "creating the table with a sort key:", err)
		local.Stop()
		os.Exit(1)
	}
	code := m.Run()
	local.Stop()
	os.Exit(code)
}

func TestDynamoDBContract(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) stateless.TaskStore { return &tasks.DynamoDB{Client: local.Client(), Table: table} })
}

func TestDynamoDBContractSortKey(t *testing.T) {
	taskstest.Run(t, func(t *testing.T) stateless.TaskStore {
		return &tasks.DynamoDB{Client: local.Client(), Table: sortedTable, SortKey: "sk"}
	})
}
