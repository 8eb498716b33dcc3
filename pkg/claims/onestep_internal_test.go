package claims

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// cancelling is a DynamoAPI whose TransactWriteItems is cancelled with
// reasons, and whose GetItem answers item, counting the reads.
type cancelling struct {
	DynamoAPI
	reasons []types.CancellationReason
	err     error
	item    map[string]types.AttributeValue
	gets    int
}

func (c *cancelling) TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if c.err != nil {
		return nil, c.err
	}
	return nil, &types.TransactionCanceledException{Message: aws.String("cancelled"), CancellationReasons: c.reasons}
}

func (c *cancelling) GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c.gets++
	return &dynamodb.GetItemOutput{Item: c.item}, nil
}

// TestCommitReadsTheCancellation: what a one-step commit makes of a
// cancelled transaction, by its reasons: the claim's condition failed
// (the holder from its reason, or read when the reason carries none, or
// the call's own commit), a write's, another transaction in the way.
func TestCommitReadsTheCancellation(t *testing.T) {
	now := time.Now()
	c := Claim{Key: "claim#k", Owner: "me", Fingerprint: "f", ExpiresAt: now.Add(time.Hour)}
	holder := map[string]types.AttributeValue{"pk": str("claim#k"), "status": str("completed"), "owner": str("other"),
		"fingerprint": str("f"), "expires_at": num(now.Add(time.Hour).Unix()), "response": &types.AttributeValueMemberB{Value: []byte(`{}`)}}
	mine := map[string]types.AttributeValue{"pk": str("claim#k"), "status": str("completed"), "owner": str("me"),
		"fingerprint": str("f"), "expires_at": num(now.Add(time.Hour).Unix())}
	reason := func(code string, item map[string]types.AttributeValue) types.CancellationReason {
		return types.CancellationReason{Code: aws.String(code), Item: item}
	}
	w := Write{Item: &types.TransactWriteItem{Put: &types.Put{TableName: aws.String("t")}}}
	writes := []Write{w, w}
	commit := func(api *cancelling) error {
		return NewDynamoDB(api, "t").Commit(context.Background(), "tok", c, []byte(`{}`), false, writes, now)
	}
	var held *HeldError
	api := &cancelling{reasons: []types.CancellationReason{reason("ConditionalCheckFailed", holder), reason("None", nil), reason("ConditionalCheckFailed", nil)}}
	if err := commit(api); !errors.As(err, &held) || held.Holder.Owner != "other" || api.gets != 0 {
		t.Errorf("the claim's condition failed, its holder returned: %v, %d reads", err, api.gets)
	}
	api = &cancelling{reasons: []types.CancellationReason{reason("ConditionalCheckFailed", nil), reason("None", nil), reason("None", nil)}, item: holder}
	if err := commit(api); !errors.As(err, &held) || held.Holder.Owner != "other" || api.gets != 1 {
		t.Errorf("the claim's condition failed, no holder returned: %v, %d reads", err, api.gets)
	}
	api = &cancelling{reasons: []types.CancellationReason{reason("ConditionalCheckFailed", mine), reason("None", nil), reason("None", nil)}}
	if err := commit(api); err != nil {
		t.Errorf("the call's own commit, made by an attempt whose answer was lost: %v", err)
	}
	var refused *WriteRefusedError
	api = &cancelling{reasons: []types.CancellationReason{reason("None", nil), reason("None", nil), reason("ConditionalCheckFailed", nil)}}
	if err := commit(api); !errors.As(err, &refused) || refused.Index != 1 || !errors.Is(err, ErrWritesRefused) {
		t.Errorf("the second write's condition failed: %v", err)
	}
	api = &cancelling{reasons: []types.CancellationReason{reason("None", nil), reason("TransactionConflict", nil), reason("None", nil)}}
	if err := commit(api); !errors.Is(err, errBusy) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("a conflict: %v", err)
	}
	api = &cancelling{err: &types.TransactionInProgressException{Message: aws.String("in progress")}}
	if err := commit(api); !errors.Is(err, errBusy) {
		t.Errorf("the token's transaction in progress: %v", err)
	}
}

// TestCommitBusy: a one-step commit that meets another transaction is
// tried again, at most maxBusy times; any other failure is not.
func TestCommitBusy(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		errs  []error
		calls int
		ok    bool
	}{
		{"busy, then made", []error{errBusy, errBusy, nil}, 3, true},
		{"busy every time", []error{errBusy, errBusy, errBusy, errBusy, errBusy, errBusy, errBusy, errBusy, errBusy}, maxBusy + 1, false},
		{"unreachable", []error{ErrUnavailable, nil}, 1, false},
	} {
		calls := 0
		err := commitBusy(ctx, func(context.Context) error {
			e := tc.errs[calls]
			calls++
			return e
		})
		if calls != tc.calls || (err == nil) != tc.ok {
			t.Errorf("%s: %d attempts, %v", tc.name, calls, err)
		}
	}
	// Out of time: not tried again.
	dctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	calls := 0
	if err := commitBusy(dctx, func(context.Context) error { calls++; return errBusy }); err == nil || calls != 1 {
		t.Errorf("with no time left: %d attempts, %v", calls, err)
	}
}
