package items

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

// DynamoAPI is the part of the DynamoDB client a DynamoDB table uses. A
// transaction's Put, Update and Delete are authorized as PutItem,
// UpdateItem and DeleteItem, so those, GetItem and Query are the actions
// a function's role needs on the table (template.yaml grants them on the
// claims table).
type DynamoAPI interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DynamoDB is a Table in a DynamoDB table keyed pk (S) and sk (S).
type DynamoDB struct {
	client DynamoAPI
	table  string
}

// NewDynamoDB returns the items of table, reached with client.
func NewDynamoDB(client DynamoAPI, table string) *DynamoDB {
	return &DynamoDB{client: client, table: table}
}

// maxConflicts is how many times a transaction that met another on the
// same item (or DynamoDB's throttling) is tried again.
const maxConflicts = 8

// Write makes ops once: enlisted in ctx's call's claim when it holds one
// whose store is in DynamoDB, else at once. See Table.
func (d *DynamoDB) Write(ctx context.Context, ops ...Op) error {
	if err := check(ops); err != nil || len(ops) == 0 {
		return err
	}
	items := make([]types.TransactWriteItem, len(ops))
	for i, o := range ops {
		items[i] = d.transactItem(o)
	}
	ws := make([]claims.Write, len(ops))
	for i := range items {
		ws[i] = claims.Write{Item: &items[i], OnConditionFailed: ops[i].fail}
	}
	if claims.EnlistWrites(ctx, ws...) {
		return nil
	}
	if len(ops) == 1 {
		return d.writeOne(ctx, ops[0], items[0])
	}
	for attempt := 0; ; attempt++ {
		_, err := d.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if err == nil {
			return nil
		}
		var tce *types.TransactionCanceledException
		if !errors.As(err, &tce) {
			return d.failed(ctx, "writing", err)
		}
		retry := false
		for i, r := range tce.CancellationReasons {
			switch aws.ToString(r.Code) {
			case "ConditionalCheckFailed":
				if i < len(ops) {
					return &ConditionError{Op: i, Failure: ops[i].fail}
				}
			case "TransactionConflict", "ThrottlingError", "ProvisionedThroughputExceeded", "RequestLimitExceeded":
				retry = true
			}
		}
		if !retry || attempt >= maxConflicts {
			return d.failed(ctx, "writing", err)
		}
		if err := backOff(ctx, attempt); err != nil {
			return d.failed(ctx, "writing", err)
		}
	}
}

// writeOne makes one op as one conditional request: a single write costs
// half a transaction's write units.
func (d *DynamoDB) writeOne(ctx context.Context, o Op, it types.TransactWriteItem) error {
	var err error
	switch {
	case it.Put != nil:
		p := it.Put
		_, err = d.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: p.TableName, Item: p.Item,
			ConditionExpression: p.ConditionExpression, ExpressionAttributeNames: p.ExpressionAttributeNames,
			ExpressionAttributeValues: p.ExpressionAttributeValues})
	case it.Update != nil:
		u := it.Update
		_, err = d.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: u.TableName, Key: u.Key,
			UpdateExpression: u.UpdateExpression, ConditionExpression: u.ConditionExpression,
			ExpressionAttributeNames: u.ExpressionAttributeNames, ExpressionAttributeValues: u.ExpressionAttributeValues})
	case it.Delete != nil:
		x := it.Delete
		_, err = d.client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: x.TableName, Key: x.Key,
			ConditionExpression: x.ConditionExpression, ExpressionAttributeNames: x.ExpressionAttributeNames,
			ExpressionAttributeValues: x.ExpressionAttributeValues})
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return &ConditionError{Op: 0, Failure: o.fail}
	}
	if err != nil {
		return d.failed(ctx, "writing", err)
	}
	return nil
}

// failed is err as Write, Get and Query return it: a request DynamoDB
// refused as invalid (an item over its size, an attribute of the wrong
// type for an Add) is the tool's fault, not worth retrying; anything else
// is the store being unavailable.
func (d *DynamoDB) failed(ctx context.Context, what string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" {
		return fmt.Errorf("items: %s: %w: %w", what, ErrInvalid, err)
	}
	return unavailable(ctx, what, err)
}

// backOff waits before a transaction is tried again: a jittered delay
// growing from 10 ms.
func backOff(ctx context.Context, attempt int) error {
	d := time.Duration(10<<min(attempt, 5)) * time.Millisecond
	t := time.NewTimer(d/2 + rand.N(d/2+1))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// key is k as DynamoDB's key attributes.
func key(k Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": S(k.PK), "sk": S(k.SK)}
}

// expr collects an op's expression names and values.
type expr struct {
	names  map[string]string
	values map[string]types.AttributeValue
}

func (e *expr) name(n string) string {
	if e.names == nil {
		e.names = map[string]string{}
	}
	p := "#a" + strconv.Itoa(len(e.names))
	e.names[p] = n
	return p
}

func (e *expr) value(v types.AttributeValue) string {
	if e.values == nil {
		e.values = map[string]types.AttributeValue{}
	}
	p := ":v" + strconv.Itoa(len(e.values))
	e.values[p] = v
	return p
}

// condition is cs as a DynamoDB condition expression ("" for none).
func (e *expr) condition(cs []Cond) string {
	var parts []string
	for _, c := range cs {
		switch c.kind {
		case condAbsent:
			parts = append(parts, "attribute_not_exists(pk)")
		case condExists:
			parts = append(parts, "attribute_exists(pk)")
		case condEqual:
			parts = append(parts, e.name(c.name)+" = "+e.value(c.v))
		case condLess, condAtLeast:
			// An absent attribute counts as 0.
			a, v := e.name(c.name), e.value(Int(c.n))
			op, absentHolds := " < ", 0 < c.n
			if c.kind == condAtLeast {
				op, absentHolds = " >= ", 0 >= c.n
			}
			if absentHolds {
				parts = append(parts, "(attribute_not_exists("+a+") OR "+a+op+v+")")
			} else {
				parts = append(parts, a+op+v)
			}
		}
	}
	return strings.Join(parts, " AND ")
}

// transactItem is o as one write of a transaction.
func (d *DynamoDB) transactItem(o Op) types.TransactWriteItem {
	var e expr
	table := aws.String(d.table)
	cond := func() *string {
		if c := e.condition(o.conds); c != "" {
			return &c
		}
		return nil
	}
	switch o.kind {
	case opPut:
		item := make(map[string]types.AttributeValue, len(o.item)+2)
		for n, v := range o.item {
			item[n] = v
		}
		item["pk"], item["sk"] = S(o.key.PK), S(o.key.SK)
		c := cond()
		return types.TransactWriteItem{Put: &types.Put{TableName: table, Item: item, ConditionExpression: c,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
	case opUpdate:
		var sets []string
		for _, s := range o.sets {
			sets = append(sets, e.name(s.name)+" = "+e.value(s.v))
		}
		for _, a := range o.adds {
			n := e.name(a.name)
			sets = append(sets, n+" = if_not_exists("+n+", "+e.value(Int(0))+") + "+e.value(Int(a.n)))
		}
		var update string
		if len(sets) > 0 {
			update = "SET " + strings.Join(sets, ", ")
		}
		if len(o.incl) > 0 {
			var adds []string
			for _, a := range o.incl {
				adds = append(adds, e.name(a.name)+" "+e.value(a.v))
			}
			update = strings.TrimSpace(update + " ADD " + strings.Join(adds, ", "))
		}
		c := cond()
		return types.TransactWriteItem{Update: &types.Update{TableName: table, Key: key(o.key), UpdateExpression: &update,
			ConditionExpression: c, ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
	default:
		c := cond()
		return types.TransactWriteItem{Delete: &types.Delete{TableName: table, Key: key(o.key), ConditionExpression: c,
			ExpressionAttributeNames: e.names, ExpressionAttributeValues: e.values}}
	}
}

// Get reads the item k, strongly consistent.
func (d *DynamoDB) Get(ctx context.Context, k Key) (Item, bool, error) {
	if err := checkKey(k); err != nil {
		return nil, false, err
	}
	out, err := d.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(d.table), Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, false, d.failed(ctx, "reading", err)
	}
	if out.Item == nil {
		return nil, false, nil
	}
	return attributes(out.Item), true, nil
}

// Query reads items of the partition pk in sort-key order, strongly
// consistent: one request, for one more item than asked, so that whether
// more follow is known.
func (d *DynamoDB) Query(ctx context.Context, pk, after string, limit int) ([]Entry, bool, error) {
	if err := checkKey(Key{PK: pk, SK: "-"}); err != nil {
		return nil, false, err
	}
	limit = min(max(limit, 1), MaxQuery)
	in := &dynamodb.QueryInput{TableName: aws.String(d.table), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": S(pk)},
		Limit:                     aws.Int32(int32(limit + 1))}
	if after != "" {
		in.KeyConditionExpression = aws.String("pk = :pk AND sk > :after")
		in.ExpressionAttributeValues[":after"] = S(after)
	}
	var entries []Entry
	for {
		out, err := d.client.Query(ctx, in)
		if err != nil {
			return nil, false, d.failed(ctx, "reading", err)
		}
		for _, it := range out.Items {
			sk, _ := it["sk"].(*types.AttributeValueMemberS)
			if sk == nil {
				continue
			}
			if len(entries) == limit {
				return entries, true, nil
			}
			entries = append(entries, Entry{SK: sk.Value, Item: attributes(it)})
		}
		// A page DynamoDB cut at its 1 MB is continued.
		if out.LastEvaluatedKey == nil {
			return entries, false, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
		in.Limit = aws.Int32(int32(limit + 1 - len(entries)))
	}
}

// attributes is a DynamoDB item without its key.
func attributes(item map[string]types.AttributeValue) Item {
	it := make(Item, len(item))
	for n, v := range item {
		if n != "pk" && n != "sk" {
			it[n] = v
		}
	}
	return it
}
