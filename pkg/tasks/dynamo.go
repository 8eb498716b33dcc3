package tasks

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoAPI is the part of the DynamoDB client the store uses.
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// DynamoDB is a task store in a DynamoDB table whose partition key is the
// string attribute "pk" and whose TTL attribute is "expires_at" (epoch
// seconds): the claims table of package claims, whose items it shares
// without touching them. A table with a sort key names it in SortKey;
// task items then have the fixed sort key value SortValue. An item is
// the record member by member (item.go):
//
//	pk          S  task#<id>
//	sk          S  "task" (only in a table with a sort key)
//	version     N  the record's version; a write replaces only the version it read
//	expires_at  N  epoch seconds: the TTL
//	status, principal, tool, owner, idempotency_key, ...  S
//	arguments, capabilities, state, result, error          B  raw, as the record has them
//	responses, requests                                    M  of B
//
// so that its size is the record's StoredSize plus a fixed amount for
// the names and numbers, under 1 KiB: any record within
// MaxRecordBytes fits DynamoDB's 400 KB item. A record that
// would not (ItemSize, DynamoDB's own rules) is refused before it is
// sent, with an error wrapping ErrTooLarge, as is one
// DynamoDB refuses for its size.
//
// Every read is strongly consistent, so a task is found the moment its
// creation returns, as the extension requires.
type DynamoDB struct {
	Client DynamoAPI
	Table  string
	// SortKey is the name of the table's string sort key, if it has one.
	SortKey string
}

// SortValue is the sort key value of every task item, in a table with a
// sort key.
const SortValue = "task"

var _ Store = (*DynamoDB)(nil)

func (d *DynamoDB) key(id string) map[string]types.AttributeValue {
	k := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "task#" + id}}
	if d.SortKey != "" {
		k[d.SortKey] = &types.AttributeValueMemberS{Value: SortValue}
	}
	return k
}

func (d *DynamoDB) item(rec *Record) (map[string]types.AttributeValue, error) {
	return encodeItem(d.key(rec.ID), rec)
}

// writeError classifies a PutItem's failure: DynamoDB's refusal of an
// item over its size limit is permanent.
func writeError(what string, err error) error {
	var ve interface{ ErrorCode() string }
	if errors.As(err, &ve) && ve.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(err.Error()), "item size") {
		return fmt.Errorf("tasks: %s: %w (%w)", what, ErrTooLarge, err)
	}
	return fmt.Errorf("tasks: %s: %w", what, err)
}

var names = map[string]string{"#v": "version", "#ex": "expires_at"}

// Create implements Store: a PutItem on condition that no
// live task has the id.
func (d *DynamoDB) Create(ctx context.Context, rec *Record) error {
	it, err := d.item(rec)
	if err != nil {
		return err
	}
	_, err = d.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &d.Table, Item: it,
		ConditionExpression:       aws.String("attribute_not_exists(pk) OR #ex <= :now"),
		ExpressionAttributeNames:  map[string]string{"#ex": "expires_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":now": num(time.Now().Unix())},
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return ErrExists
	}
	if err != nil {
		return writeError("creating the task", err)
	}
	return nil
}

// Load implements Store with a strongly consistent GetItem.
func (d *DynamoDB) Load(ctx context.Context, id string) (*Record, error) {
	out, err := d.Client.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.Table, Key: d.key(id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("tasks: reading the task: %w", err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNoTask
	}
	rec, err := decodeItem(out.Item)
	if err != nil {
		return nil, err
	}
	rec.ID = id
	if !time.Now().Before(rec.ExpiresAt) {
		return nil, ErrNoTask
	}
	return rec, nil
}

// Replace implements Store: a PutItem on condition that the
// stored version is prev.
func (d *DynamoDB) Replace(ctx context.Context, rec *Record, prev int64) error {
	it, err := d.item(rec)
	if err != nil {
		return err
	}
	_, err = d.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: &d.Table, Item: it,
		ConditionExpression:                 aws.String("#v = :prev AND #ex > :now"),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           map[string]types.AttributeValue{":prev": num(prev), ":now": num(time.Now().Unix())},
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		if _, ok := ccf.Item["version"]; ok {
			return ErrConflict
		}
		// No item came back with the failed condition: gone, or expired
		// (TTL deletion lags), or a DynamoDB that returns none; a read
		// tells them apart.
		if _, err := d.Load(ctx, rec.ID); errors.Is(err, ErrNoTask) {
			return ErrNoTask
		}
		return ErrConflict
	}
	if err != nil {
		return writeError("writing the task", err)
	}
	return nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}
