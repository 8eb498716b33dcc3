//go:build integration

package ratelimit_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/dynamolocal"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/opcount"
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
// ten calls alternating between them, five are admitted, each instance
// counts one refusal and refuses the rest itself, and the count's
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
	// 5 admitted, and one write per instance that found the window used
	// up: the other three refusals cost nothing.
	if n == nil || n.Value != "7" || exp == nil || exp.Value != strconv.FormatInt(start.Add(2*time.Hour).Unix(), 10) {
		t.Errorf("the item: %v", out.Item)
	}
}

// TestDynamoDBSlots: the slots contract on DynamoDB Local, and across
// instances: of 24 takes racing from two clients for a quota of 3,
// exactly 3 succeed; a refusal writes nothing (one read); the item
// expires by the table's TTL after its last slot lapses.
func TestDynamoDBSlots(t *testing.T) {
	ctx := context.Background()
	now := time.Now()
	s := &ratelimit.DynamoDBSlots{Client: local.Client(), Table: table, SortKey: "sk", Kind: "test", Now: func() time.Time { return now }}
	exerciseSlots(t, ctx, s, func(d time.Duration) { now = now.Add(d) }, func() time.Time { return now })

	instances := []*ratelimit.DynamoDBSlots{
		{Client: local.Client(), Table: table, SortKey: "sk", Kind: "race"},
		{Client: local.Client(), Table: table, SortKey: "sk", Kind: "race"},
	}
	var wg sync.WaitGroup
	var took, full atomic.Int32
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			switch err := instances[i%2].Take(ctx, "mallory", fmt.Sprint("task-", i), time.Now().Add(time.Hour), 3); {
			case err == nil:
				took.Add(1)
			case errors.Is(err, ratelimit.ErrFull):
				full.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if took.Load() != 3 || full.Load() != 21 {
		t.Fatalf("%d taken, %d refused; want 3 and 21", took.Load(), full.Load())
	}
	held, err := instances[1].Held(ctx, "mallory")
	if err != nil || len(held) != 3 {
		t.Fatalf("held %v %v", held, err)
	}
	// A refusal changes nothing: the first on an instance tries the
	// conditional UpdateItem (its condition fails) and reads; the next
	// ones, for the hint's while, only read.
	counted := &opcount.Counter{}
	refuser := &ratelimit.DynamoDBSlots{Client: local.Client(func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, counted.Middleware) }), Table: table, SortKey: "sk", Kind: "race"}
	for i := range 10 {
		if err := refuser.Take(ctx, "mallory", "one-more", time.Now().Add(time.Hour), 3); !errors.Is(err, ratelimit.ErrFull) {
			t.Fatal(err)
		}
		got := counted.Take()
		if want := map[string]int{"GetItem": 1}; i == 0 {
			want["UpdateItem"] = 1
			if !maps.Equal(got, want) {
				t.Fatalf("the first refusal cost %v, want %v", got, want)
			}
		} else if !maps.Equal(got, want) {
			t.Fatalf("refusal %d cost %v, want %v", i, got, want)
		}
	}
	if held2, _ := refuser.Held(ctx, "mallory"); !maps.Equal(held2, held) {
		t.Fatalf("refusals changed the slots: %v, was %v", held2, held)
	}
	// Where there is room, a take is one UpdateItem.
	counted.Take()
	taker := &ratelimit.DynamoDBSlots{Client: refuser.Client, Table: table, SortKey: "sk", Kind: "race"}
	if err := taker.Take(ctx, "alice", "first", time.Now().Add(time.Hour), 3); err != nil {
		t.Fatal(err)
	}
	counted.Take() // the first of a caller: no map yet, read and put
	if err := taker.Take(ctx, "alice", "second", time.Now().Add(time.Hour), 3); err != nil {
		t.Fatal(err)
	}
	if got := counted.Take(); !maps.Equal(got, map[string]int{"UpdateItem": 1}) {
		t.Fatalf("a take with room cost %v", got)
	}
}

// TestDynamoDBSlotsFirstBurst: a caller's first slots, taken at once from
// two instances with room for all of them, are all taken: the takes that
// lose the race to create the item add to it (the abuse run caught a
// burst of six streamed calls losing eight rounds of read and put, a
// server fault).
func TestDynamoDBSlotsFirstBurst(t *testing.T) {
	ctx := context.Background()
	key := fmt.Sprint("burst-", time.Now().UnixNano())
	instances := []*ratelimit.DynamoDBSlots{
		{Client: local.Client(), Table: table, SortKey: "sk", Kind: "streams"},
		{Client: local.Client(), Table: table, SortKey: "sk", Kind: "streams"},
	}
	var wg sync.WaitGroup
	errs := make(chan error, 30)
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- instances[i%2].Take(ctx, key, fmt.Sprint("call-", i), time.Now().Add(time.Minute), 40)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a take with room: %v", err)
		}
	}
	if held, err := instances[0].Held(ctx, key); err != nil || len(held) != 30 {
		t.Fatalf("%d held, want 30 (%v)", len(held), err)
	}
}
