package claims

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"
)

// DynamoAPI is the part of the DynamoDB client the store uses.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

// DynamoDB is a Store in a DynamoDB table whose partition key is the
// string attribute "pk" and whose TTL attribute is "expires_at" (epoch
// seconds). The table may have a string sort key as well (template.yaml's
// has "sk", and keeps the demo's notes in the same table): NewDynamoDBWith
// names it, and every claim item then has the fixed sort key value
// ClaimSortValue, so that a claim is still one item per key. Items:
//
//	pk          S  claim#<digest>
//	sk          S  "claim" (only in a table with a sort key)
//	status      S  in_progress | completed
//	owner       S  the holder's token
//	lease_until N  epoch milliseconds (in progress only)
//	fingerprint S  digest of the tool and its canonical arguments
//	response    B  the stored result, gzipped when large (completed only)
//	oversize    BOOL  completed, but the result was too large to keep
//	expires_at  N  epoch seconds: the TTL
type DynamoDB struct {
	client  DynamoAPI
	table   string
	sortKey string
}

// DynamoDBOptions configure NewDynamoDBWith.
type DynamoDBOptions struct {
	// SortKey is the name of the table's (string) sort key, when its
	// primary key is composite. Empty: the table has a partition key only.
	SortKey string
}

// ClaimSortValue is the sort key value of every claim item, in a table
// with a sort key.
const ClaimSortValue = "claim"

// NewDynamoDB returns a store in table, whose primary key is the
// partition key "pk" alone.
func NewDynamoDB(client DynamoAPI, table string) *DynamoDB {
	return &DynamoDB{client: client, table: table}
}

// NewDynamoDBWith returns a store in table, shaped as o says.
func NewDynamoDBWith(client DynamoAPI, table string, o DynamoDBOptions) *DynamoDB {
	return &DynamoDB{client: client, table: table, sortKey: o.SortKey}
}

// key is the primary key of the claim item for k.
// Table is the table the claims are kept in (TableStore).
func (d *DynamoDB) Table() string { return d.table }

func (d *DynamoDB) key(k string) map[string]types.AttributeValue {
	key := map[string]types.AttributeValue{"pk": str(k)}
	if d.sortKey != "" {
		key[d.sortKey] = str(ClaimSortValue)
	}
	return key
}

var _ Transactor = (*DynamoDB)(nil)

// Attribute names. status, owner and response are DynamoDB reserved words, so the
// expressions name attributes through placeholders; DynamoDB refuses a
// placeholder an expression does not use, so each operation has its set.
var (
	claimNames    = map[string]string{"#st": "status", "#lu": "lease_until", "#ex": "expires_at"}
	completeNames = map[string]string{"#st": "status", "#ow": "owner", "#lu": "lease_until", "#ex": "expires_at", "#ov": "oversize"}
	releaseNames  = map[string]string{"#st": "status", "#ow": "owner"}

	completeWithResponseNames = map[string]string{"#st": "status", "#ow": "owner", "#lu": "lease_until", "#ex": "expires_at", "#ov": "oversize", "#rs": "response"}
)

// takeover is the condition under which a claim may be written: no item,
// or an expired one (TTL deletion lags by up to days), or one in progress
// whose lease lapsed.
const takeover = "attribute_not_exists(pk) OR #ex <= :now_s OR (#st = :in_progress AND #lu <= :now_ms)"

// Claim implements Store with ONE conditional PutItem. When the key is
// held, the holder comes back with the failed condition (ALL_OLD), so a
// duplicate costs one round trip; a consistent read is the fallback when
// it does not.
func (d *DynamoDB) Claim(ctx context.Context, c Claim, now time.Time) (bool, *Record, error) {
	item := d.key(c.Key)
	item["status"] = str(string(StatusInProgress))
	item["owner"] = str(c.Owner)
	item["lease_until"] = num(c.LeaseUntil.UnixMilli())
	item["fingerprint"] = str(c.Fingerprint)
	item["expires_at"] = num(c.ExpiresAt.Unix())
	for attempt := 0; attempt < 3; attempt++ {
		_, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName:                &d.table,
			Item:                     item,
			ConditionExpression:      aws.String(takeover),
			ExpressionAttributeNames: claimNames,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now_s":       num(now.Unix()),
				":now_ms":      num(now.UnixMilli()),
				":in_progress": str(string(StatusInProgress)),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		if err == nil {
			return true, nil, nil
		}
		var ccf *types.ConditionalCheckFailedException
		if !errors.As(err, &ccf) {
			return false, nil, fmt.Errorf("%w: claiming: %w", ErrUnavailable, err)
		}
		held := ccf.Item
		if held == nil {
			out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{
				TableName: &d.table, Key: d.key(c.Key), ConsistentRead: aws.Bool(true),
			})
			if err != nil {
				return false, nil, fmt.Errorf("%w: reading the holder: %w", ErrUnavailable, err)
			}
			held = out.Item
		}
		if held == nil {
			continue // released between the write and the read: try again
		}
		r, err := decodeRecord(held)
		if err != nil {
			return false, nil, err
		}
		if r.Owner == c.Owner && r.Status == StatusInProgress {
			// Our own write, applied on an attempt whose answer was lost
			// (the SDK retried it): the claim is ours.
			return true, nil, nil
		}
		return false, r, nil
	}
	return false, nil, fmt.Errorf("%w: the claim kept changing hands", ErrUnavailable)
}

// owned is the condition of a release: fencing, so that a caller whose
// lease lapsed cannot delete its successor's claim, nor a completed one.
const owned = "#ow = :owner AND #st = :in_progress"

// completedBy is the condition of a completion: the caller holds the
// claim, or completed it already (its earlier attempt was applied but the
// answer lost). Owner tokens are never reused, so a claim taken over by
// another caller, or released, fails it.
const completedBy = "#ow = :owner"

// Complete implements Store with one conditional UpdateItem.
func (d *DynamoDB) Complete(ctx context.Context, key, owner string, response []byte, oversize bool, expiresAt time.Time) error {
	_, err := d.client.UpdateItem(ctx, d.completion(Completion{Key: key, Owner: owner, Response: response, Oversize: oversize, ExpiresAt: expiresAt}))
	return d.fenced(err, "completing")
}

// completion is the conditional update that completes c.
func (d *DynamoDB) completion(c Completion) *dynamodb.UpdateItemInput {
	update := "SET #st = :completed, #ov = :oversize, #ex = :exp REMOVE #lu"
	values := map[string]types.AttributeValue{
		":completed": str(string(StatusCompleted)),
		":oversize":  &types.AttributeValueMemberBOOL{Value: c.Oversize},
		":exp":       num(c.ExpiresAt.Unix()),
		":owner":     str(c.Owner),
	}
	names := completeNames
	if !c.Oversize && len(c.Response) > 0 { // a redemption keeps none
		update = "SET #st = :completed, #ov = :oversize, #ex = :exp, #rs = :response REMOVE #lu"
		values[":response"] = &types.AttributeValueMemberB{Value: c.Response}
		names = completeWithResponseNames
	}
	return &dynamodb.UpdateItemInput{
		TableName:                 &d.table,
		Key:                       d.key(c.Key),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(completedBy),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}

// MaxEnlisted is how many writes a tool may enlist in its call's
// completion: DynamoDB's 100 items per transaction, less the claim and a
// single-use state's redemption.
const MaxEnlisted = 98

// CompleteWith implements Transactor with one TransactWriteItems: the
// writes, then the completions, each fenced as Complete is.
func (d *DynamoDB) CompleteWith(ctx context.Context, token string, cs []Completion, writes []types.TransactWriteItem) error {
	items := make([]types.TransactWriteItem, 0, len(writes)+len(cs))
	items = append(items, writes...)
	for _, c := range cs {
		u := d.completion(c)
		items = append(items, types.TransactWriteItem{Update: &types.Update{
			TableName: u.TableName, Key: u.Key, UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues,
		}})
	}
	_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: &token})
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) {
		return failed(err, "completing in a transaction")
	}
	// One reason per item, in order; "None" for an item not at fault.
	for i, r := range tce.CancellationReasons {
		if r.Code == nil || *r.Code != "ConditionalCheckFailed" {
			continue
		}
		if i >= len(writes) {
			return ErrNotOwner
		}
		return &WriteRefusedError{Index: i}
	}
	// A conflict with another transaction, throttling: worth retrying.
	return fmt.Errorf("%w: completing in a transaction: %w", ErrUnavailable, err)
}

var _ Committer = (*DynamoDB)(nil)

// Commit implements Committer with one TransactWriteItems: the claim's
// item put as completed under the condition a claim is taken under
// (ALL_OLD), then the writes, with token as the transaction's idempotency
// token. With no writes it is one conditional PutItem. A holder comes back
// with the failed condition, so a replay, or the loser of a race, costs
// nothing more; a consistent read is the fallback when it does not.
// DynamoDB gives one cancellation reason per item, in order ("None" for
// an item whose condition held), so a failed write is told from a held
// key by its position.
func (d *DynamoDB) Commit(ctx context.Context, token string, c Claim, response []byte, oversize bool, writes []Write, now time.Time) error {
	item := d.key(c.Key)
	item["status"] = str(string(StatusCompleted))
	item["owner"] = str(c.Owner)
	item["fingerprint"] = str(c.Fingerprint)
	item["expires_at"] = num(c.ExpiresAt.Unix())
	item["oversize"] = &types.AttributeValueMemberBOOL{Value: oversize}
	if !oversize && len(response) > 0 {
		item["response"] = &types.AttributeValueMemberB{Value: response}
	}
	values := map[string]types.AttributeValue{
		":now_s":       num(now.Unix()),
		":now_ms":      num(now.UnixMilli()),
		":in_progress": str(string(StatusInProgress)),
	}
	if len(writes) == 0 {
		_, err := d.client.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: &d.table, Item: item, ConditionExpression: aws.String(takeover),
			ExpressionAttributeNames: claimNames, ExpressionAttributeValues: values,
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		switch {
		case err == nil:
			return nil
		case errors.As(err, &ccf):
			return d.heldBy(ctx, c, ccf.Item)
		}
		return failed(err, "committing")
	}
	items := make([]types.TransactWriteItem, 0, 1+len(writes))
	items = append(items, types.TransactWriteItem{Put: &types.Put{
		TableName: &d.table, Item: item, ConditionExpression: aws.String(takeover),
		ExpressionAttributeNames: claimNames, ExpressionAttributeValues: values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}})
	for i, w := range writes {
		if w.Item == nil {
			return fmt.Errorf("claims: write %d is no DynamoDB write", i+1)
		}
		items = append(items, *w.Item)
	}
	_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items, ClientRequestToken: &token})
	if err == nil {
		return nil
	}
	var tce *types.TransactionCanceledException
	var inProgress *types.TransactionInProgressException
	switch {
	case errors.As(err, &inProgress):
		// An attempt with the same token is still being applied.
		return fmt.Errorf("%w: %w: committing in a transaction: %w", ErrUnavailable, errBusy, err)
	case !errors.As(err, &tce):
		return failed(err, "committing in a transaction")
	}
	reasons := tce.CancellationReasons
	if len(reasons) > 0 && reasons[0].Code != nil && *reasons[0].Code == "ConditionalCheckFailed" {
		return d.heldBy(ctx, c, reasons[0].Item)
	}
	for i, r := range reasons {
		if i > 0 && r.Code != nil && *r.Code == "ConditionalCheckFailed" {
			return &WriteRefusedError{Index: i - 1}
		}
	}
	// Another transaction on one of the items at the same time (a racing
	// call with the key, another add to the same count), or throttling:
	// worth trying again in a moment.
	return fmt.Errorf("%w: %w: committing in a transaction: %w", ErrUnavailable, errBusy, err)
}

// errBusy is wrapped in a commit's error when the transaction met another
// on one of its items, or was throttled: nothing was written, and an
// attempt a moment later may pass.
var errBusy = errors.New("claims: an item of the transaction was busy")

// heldBy is Commit's answer when the claim's condition failed: item is the
// holder as the failed condition returned it, or nil (then it is read).
// The holder is the call's own record when an earlier attempt of the
// commit was applied and its answer lost: then the commit is made.
func (d *DynamoDB) heldBy(ctx context.Context, c Claim, item map[string]types.AttributeValue) error {
	if item == nil {
		out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: d.key(c.Key), ConsistentRead: aws.Bool(true)})
		if err != nil {
			return fmt.Errorf("%w: reading the holder: %w", ErrUnavailable, err)
		}
		if item = out.Item; item == nil {
			// Released between the write and the read: try again.
			return fmt.Errorf("%w: the claim's holder was gone before it could be read", ErrUnavailable)
		}
	}
	r, err := decodeRecord(item)
	if err != nil {
		return err
	}
	if r.Owner == c.Owner && r.Status == StatusCompleted {
		return nil
	}
	return &HeldError{Holder: r}
}

// Release implements Store with one conditional DeleteItem.
func (d *DynamoDB) Release(ctx context.Context, key, owner string) error {
	_, err := d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:                &d.table,
		Key:                      d.key(key),
		ConditionExpression:      aws.String(owned),
		ExpressionAttributeNames: releaseNames,
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":owner": str(owner), ":in_progress": str(string(StatusInProgress)),
		},
	})
	return d.fenced(err, "releasing")
}

func (d *DynamoDB) fenced(err error, what string) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrNotOwner
	}
	return failed(err, what)
}

// failed wraps an error of a write by a claim's holder: in ErrUnavailable
// (worth retrying) unless DynamoDB refused the request itself — a
// validation error, a missing table, access denied — which no retry
// changes.
func failed(err error, what string) error {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorFault() == smithy.FaultClient {
		switch api.ErrorCode() {
		case "ValidationException", "ResourceNotFoundException", "AccessDeniedException",
			"UnrecognizedClientException", "IdempotentParameterMismatchException", "ItemCollectionSizeLimitExceededException":
			return fmt.Errorf("claims: %s: %w", what, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", ErrUnavailable, what, err)
}

func decodeRecord(item map[string]types.AttributeValue) (*Record, error) {
	r := &Record{}
	var err error
	get := func(name string) string {
		if v, ok := item[name].(*types.AttributeValueMemberS); ok {
			return v.Value
		}
		return ""
	}
	getN := func(name string) int64 {
		v, ok := item[name].(*types.AttributeValueMemberN)
		if !ok {
			return 0
		}
		n, perr := strconv.ParseInt(v.Value, 10, 64)
		if perr != nil && err == nil {
			err = fmt.Errorf("claims: attribute %s is not an integer", name)
		}
		return n
	}
	r.Key = get("pk")
	r.Status = Status(get("status"))
	r.Owner = get("owner")
	r.Fingerprint = get("fingerprint")
	r.LeaseUntil = time.UnixMilli(getN("lease_until"))
	r.ExpiresAt = time.Unix(getN("expires_at"), 0)
	if v, ok := item["response"].(*types.AttributeValueMemberB); ok {
		r.Response = v.Value
	}
	if v, ok := item["oversize"].(*types.AttributeValueMemberBOOL); ok {
		r.Oversize = v.Value
	}
	if r.Status != StatusInProgress && r.Status != StatusCompleted {
		return nil, fmt.Errorf("claims: record %s has status %q", r.Key, r.Status)
	}
	return r, err
}

func str(s string) types.AttributeValue { return &types.AttributeValueMemberS{Value: s} }
func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
