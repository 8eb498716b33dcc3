package ratelimit

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Memory counts in this process: for one instance, and tests. Counts are
// forgotten when they expire.
type Memory struct {
	mu     sync.Mutex
	counts map[string]memoryCount
	// windows are the counts of a Limiter's calls, by caller and window
	// rather than by Key: in this process neither the digest nor the
	// key's string is needed.
	windows map[window]memoryCount
	calls   int
}

type memoryCount struct {
	n       int64
	expires time.Time
}

// Increment implements Counter.
func (m *Memory) Increment(ctx context.Context, key string, expires time.Time) (int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.counts == nil {
		m.counts = map[string]memoryCount{}
	}
	m.tick()
	return bump(m.counts, key, expires), nil
}

// incrementWindow is Increment of w's count.
func (m *Memory) incrementWindow(w window, expires time.Time) int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.windows == nil {
		m.windows = map[window]memoryCount{}
	}
	m.tick()
	return bump(m.windows, w, expires)
}

// tick counts a call and, now and then rather than at every call, sweeps
// the expired counts; m.mu is held.
func (m *Memory) tick() {
	if m.calls++; m.calls%256 != 0 {
		return
	}
	now := time.Now()
	sweep(m.counts, now)
	sweep(m.windows, now)
}

// bump adds one to k's count in counts.
func bump[K comparable](counts map[K]memoryCount, k K, expires time.Time) int64 {
	c := counts[k]
	c.n++
	c.expires = expires
	counts[k] = c
	return c.n
}

// sweep forgets the counts expired at now.
func sweep[K comparable](counts map[K]memoryCount, now time.Time) {
	for k, c := range counts {
		if now.After(c.expires) {
			delete(counts, k)
		}
	}
}

// DynamoDBAPI is the part of the DynamoDB client Counter uses.
type DynamoDBAPI interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// DynamoDB counts in a DynamoDB table shared by every instance: one item
// per principal and window, its partition key "pk" the counter key, its
// count "n" added to atomically, its "expires_at" the table's TTL
// (template.yaml's claims table has both; give SortKey "sk" for it, whose
// value is then "rate").
type DynamoDB struct {
	Client  DynamoDBAPI
	Table   string
	SortKey string
}

// Increment implements Counter with one UpdateItem.
func (d *DynamoDB) Increment(ctx context.Context, key string, expires time.Time) (int64, error) {
	k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: key}}
	if d.SortKey != "" {
		k[d.SortKey] = &types.AttributeValueMemberS{Value: "rate"}
	}
	out, err := d.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(d.Table),
		Key:                       k,
		UpdateExpression:          aws.String("ADD #n :one SET #exp = if_not_exists(#exp, :exp)"),
		ExpressionAttributeNames:  map[string]string{"#n": "n", "#exp": "expires_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":one": &types.AttributeValueMemberN{Value: "1"}, ":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(expires.Unix(), 10)}},
		ReturnValues:              types.ReturnValueUpdatedNew,
	})
	if err != nil {
		return 0, err
	}
	n, ok := out.Attributes["n"].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("ratelimit: the count came back as %T", out.Attributes["n"])
	}
	return strconv.ParseInt(n.Value, 10, 64)
}
