//go:build integration

package ratelimit_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/ratelimit"
)

// table has template.yaml's composite key.
const table = "ratelimit-test"

var local *dynamolocal.Server

func TestMain(m *testing.M) {
	dynamolocal.Main(m, &local, dynamolocal.Table{Name: table, SortKey: "sk"})
}

// TestSharedAcrossInstances: two instances, each with its own limiter
// and client on one DynamoDB table, share a principal's allowance: of
// ten calls alternating between them, five are admitted, and the count's
// item expires by the table's TTL a window after its window.
func TestSharedAcrossInstances(t *testing.T) {
	now := time.Now()
	newInstance := func() *mcptest.Client {
		l := &ratelimit.Limiter{Counter: &ratelimit.DynamoDB{Client: local.Client(), Table: table, SortKey: "sk"}, Limit: 5, Window: time.Hour,
			Now: func() time.Time { return now }}
		c := mcptest.New(t, limitedServer(l))
		c.Principal = "jwt:https://issuer.example.com#shared"
		return c
	}
	instances := []*mcptest.Client{newInstance(), newInstance()}
	admitted, refused := 0, 0
	for i := range 10 {
		a := instances[i%2].CallTool("ping", nil)
		switch {
		case a.Text() == "pong":
			admitted++
		case a.Error != nil && a.Header.Get("Retry-After") != "":
			refused++
		default:
			t.Fatalf("call %d: %s", i, a.Raw)
		}
	}
	if admitted != 5 || refused != 5 {
		t.Errorf("%d admitted, %d refused; want 5 and 5", admitted, refused)
	}
	start := now.Truncate(time.Hour)
	out, err := local.Client().GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: ratelimit.Key("jwt:https://issuer.example.com#shared", start)}, "sk": &types.AttributeValueMemberS{Value: "rate"}}})
	if err != nil {
		t.Fatal(err)
	}
	n, _ := out.Item["n"].(*types.AttributeValueMemberN)
	exp, _ := out.Item["expires_at"].(*types.AttributeValueMemberN)
	if n == nil || n.Value != "10" || exp == nil || exp.Value != strconv.FormatInt(start.Add(2*time.Hour).Unix(), 10) {
		t.Errorf("the item: %v", out.Item)
	}
}
