package notebook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
)

// notesAPI is the part of the DynamoDB client the note book uses. A
// transaction's Put, Update and Delete are authorized as PutItem,
// UpdateItem and DeleteItem: with Query and GetItem, the actions
// template.yaml grants the function on its table.
type notesAPI interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

// dynamoNotes keeps the notes in the claims table (partition key pk, sort
// key sk, as template.yaml creates it), one item per note, each owner's
// under one partition:
//
//	pk       S  notes#<sha256 of the owner>   (claims use claim#...)
//	sk       S  the note's id (n + 16 hex digits, in creation order)
//	text     S  the note
//	created  N  epoch milliseconds
//
// and one counter item per owner, which bounds the book without reading
// it:
//
//	pk       S  notes#<sha256 of the owner>
//	sk       S  #count (sorts before every id)
//	notes    N  how many notes the owner has
//
// and execution records (see executionTTL), which sort before every id
// too and expire by the table's TTL:
//
//	pk          S  notes#<sha256 of the owner>
//	sk          S  #deleted#<note id>: deletes N, how many times the note was deleted
//	sk          S  #export#<task id>: runs SS, one element per completed run of notes_export
//	expires_at  N  epoch seconds
//
// An add is one transaction of two conditional writes: the note's PutItem
// (its id is new) and the counter's UpdateItem (the count is under the
// limit, and goes up by one). A delete is the note's DeleteItem (it
// exists), the counter's UpdateItem (down by one) and the note's deletion
// record's UpdateItem (up by one). Either all happen or none, so the
// count is exact, and concurrent adds stop at the limit. Reads are
// consistent, so that a caller reads its own writes.
//
// In a call with an idempotency key the same writes are enlisted in the
// call's claim (claims.EnlistWrites): they commit in one transaction with
// the claim and the stored result, so the key adds or deletes exactly
// once whatever fails. A keyed add commits in one step (notes_add has no
// other effect: stateless.Tool.EnlistedEffectsOnly): the claim, the note,
// the count and the result are one request, whose counter condition
// answers a full book (claims.Write.OnConditionFailed), so nothing is
// read before. A keyed delete claims its key first (its confirmation is
// single-use) and reads the note first, so that a missing note is
// answered at once rather than as a refused commit.
type dynamoNotes struct {
	client func(ctx context.Context) (notesAPI, error)
	table  string
	// limit is the notes per owner; 0 means MaxNotesPerOwner.
	limit int
	ids   noteIDSource
}

// counterSK is the sort key of an owner's counter item. Note ids begin
// with "n"; "#" sorts before it, so a Query for notes never meets it.
const counterSK = "#count"

// notesPK is the partition key of an owner's notes: a digest, so that
// principals do not appear in keys.
func notesPK(owner string) types.AttributeValue {
	d := sha256.Sum256([]byte(owner))
	return &types.AttributeValueMemberS{Value: "notes#" + hex.EncodeToString(d[:])}
}

func notesKey(pk types.AttributeValue, sk string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{"pk": pk, "sk": &types.AttributeValueMemberS{Value: sk}}
}

func (d *dynamoNotes) perOwner() int {
	if d.limit > 0 {
		return d.limit
	}
	return MaxNotesPerOwner
}

// counterNames name the counter's attribute in expressions.
var counterNames = map[string]string{"#n": "notes"}

// The sort keys of a note's deletion record and of an export's runs.
func deletedSK(id string) string    { return "#deleted#" + id }
func exportSK(taskID string) string { return "#export#" + taskID }

func expiresAt(now time.Time) types.AttributeValue { return num(now.Add(executionTTL).Unix()) }

func (d *dynamoNotes) Add(ctx context.Context, owner, text string) (Note, error) {
	pk := notesPK(owner)
	limit := d.perOwner()
	n := Note{Text: text, Created: time.Now().UTC().Truncate(time.Millisecond)}
	n.ID = d.ids.next(n.Created)
	// A keyed call: the writes commit with the call's claim and its
	// stored result, after this returns, in one request. The book's room
	// is the counter's condition, answered as a full book when it fails
	// then; the id's, a refused commit the client retries.
	counter, note := d.addWrites(pk, n, limit)
	if claims.EnlistWrites(ctx,
		claims.Write{Item: &counter, OnConditionFailed: (&NoteLimitError{Limit: limit, PerOwner: true}).failure()},
		claims.Write{Item: &note}) {
		return n, nil
	}
	c, err := d.client(ctx)
	if err != nil {
		return Note{}, err
	}
	for attempt := 0; ; attempt++ {
		counter, note := d.addWrites(pk, n, limit)
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{counter, note}})
		switch failed := cancelled(err); {
		case err == nil:
			return n, nil
		case failed[0] == "ConditionalCheckFailed":
			return Note{}, &NoteLimitError{Limit: limit, PerOwner: true}
		case failed[1] == "ConditionalCheckFailed" && attempt < 3:
			// The id is taken (one in a million): draw again.
			n.ID = d.ids.next(n.Created)
		case conflicted(failed) && attempt < maxConflicts:
			if err := backOff(ctx, attempt); err != nil {
				return Note{}, fmt.Errorf("adding a note: %w", err)
			}
		default:
			return Note{}, fmt.Errorf("adding a note: %w", err)
		}
	}
}

// addWrites are the two conditional writes that add n: the counter goes
// up by one if under the limit, and the note is put if its id is new.
func (d *dynamoNotes) addWrites(pk types.AttributeValue, n Note, limit int) (counter, note types.TransactWriteItem) {
	item := notesKey(pk, n.ID)
	item["text"] = &types.AttributeValueMemberS{Value: n.Text}
	item["created"] = num(n.Created.UnixMilli())
	return types.TransactWriteItem{Update: &types.Update{
			TableName:                &d.table,
			Key:                      notesKey(pk, counterSK),
			UpdateExpression:         aws.String("SET #n = if_not_exists(#n, :zero) + :one"),
			ConditionExpression:      aws.String("attribute_not_exists(#n) OR #n < :limit"),
			ExpressionAttributeNames: counterNames,
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":zero": num(0), ":one": num(1), ":limit": num(int64(limit)),
			},
		}}, types.TransactWriteItem{Put: &types.Put{
			TableName:           &d.table,
			Item:                item,
			ConditionExpression: aws.String("attribute_not_exists(pk)"),
		}}
}

// maxConflicts is how many times a write that met another transaction on
// the same counter is tried again.
const maxConflicts = 8

// cancelled returns the reasons a transaction of up to three writes was
// cancelled for, one per write ("None" for a write that was not at
// fault), or nothing when err is no cancellation.
func cancelled(err error) [3]string {
	var tce *types.TransactionCanceledException
	var reasons [3]string
	if errors.As(err, &tce) {
		for i, r := range tce.CancellationReasons {
			if i < len(reasons) && r.Code != nil {
				reasons[i] = *r.Code
			}
		}
	}
	return reasons
}

// conflicted reports whether a transaction was cancelled because another
// one wrote the same item at the same time (or DynamoDB was throttling):
// worth trying again.
func conflicted(reasons [3]string) bool {
	for _, r := range reasons {
		if r == "TransactionConflict" || r == "ThrottlingError" || r == "ProvisionedThroughputExceeded" {
			return true
		}
	}
	return false
}

// backOff waits a random while that grows with attempt: 5 ms, 10 ms, ...
// at most 200 ms.
func backOff(ctx context.Context, attempt int) error {
	d := min(5*time.Millisecond<<attempt, 200*time.Millisecond)
	t := time.NewTimer(time.Duration(rand.Int64N(int64(d))) + time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

func (d *dynamoNotes) Get(ctx context.Context, owner, id string) (Note, error) {
	if !validNoteID(id) {
		return Note{}, ErrNoNote
	}
	c, err := d.client(ctx)
	if err != nil {
		return Note{}, err
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: notesKey(notesPK(owner), id), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return Note{}, fmt.Errorf("reading a note: %w", err)
	}
	if out.Item == nil {
		return Note{}, ErrNoNote
	}
	return decodeNote(out.Item)
}

func (d *dynamoNotes) Delete(ctx context.Context, owner, id string) error {
	if !validNoteID(id) {
		return ErrNoNote // and never the counter
	}
	c, err := d.client(ctx)
	if err != nil {
		return err
	}
	pk := notesPK(owner)
	if claims.Enlisting(ctx) {
		// A keyed call: as in Add, read what the condition will check,
		// then let the delete commit with the claim.
		out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: notesKey(pk, id), ConsistentRead: aws.Bool(true),
			ProjectionExpression: aws.String("pk")})
		if err != nil {
			return fmt.Errorf("reading a note: %w", err)
		}
		if out.Item == nil {
			return ErrNoNote
		}
		if claims.Enlist(ctx, d.deleteWrites(pk, id)...) {
			return nil
		}
	}
	for attempt := 0; ; attempt++ {
		_, err := c.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: d.deleteWrites(pk, id)})
		switch failed := cancelled(err); {
		case err == nil:
			return nil
		case failed[0] == "ConditionalCheckFailed":
			return ErrNoNote
		case conflicted(failed) && attempt < maxConflicts:
			if err := backOff(ctx, attempt); err != nil {
				return fmt.Errorf("deleting a note: %w", err)
			}
		default:
			return fmt.Errorf("deleting a note: %w", err)
		}
	}
}

// deleteWrites are the writes that delete a note: the note, if it exists,
// the counter down by one, and the note's deletion record up by one.
func (d *dynamoNotes) deleteWrites(pk types.AttributeValue, id string) []types.TransactWriteItem {
	return []types.TransactWriteItem{
		{Delete: &types.Delete{
			TableName:           &d.table,
			Key:                 notesKey(pk, id),
			ConditionExpression: aws.String("attribute_exists(pk)"),
		}},
		{Update: &types.Update{
			TableName:                 &d.table,
			Key:                       notesKey(pk, counterSK),
			UpdateExpression:          aws.String("SET #n = if_not_exists(#n, :one) - :one"),
			ExpressionAttributeNames:  counterNames,
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1)},
		}},
		{Update: &types.Update{
			TableName:                 &d.table,
			Key:                       notesKey(pk, deletedSK(id)),
			UpdateExpression:          aws.String("ADD #d :one SET #ex = :ex"),
			ExpressionAttributeNames:  map[string]string{"#d": "deletes", "#ex": "expires_at"},
			ExpressionAttributeValues: map[string]types.AttributeValue{":one": num(1), ":ex": expiresAt(time.Now())},
		}},
	}
}

// RecordExport adds run to the export's record of runs: a set, so that
// the same write applied twice (an SDK retry of a write whose answer was
// lost) counts the run once.
func (d *dynamoNotes) RecordExport(ctx context.Context, owner, taskID, run string) error {
	c, err := d.client(ctx)
	if err != nil {
		return err
	}
	_, err = c.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &d.table,
		Key:                       notesKey(notesPK(owner), exportSK(taskID)),
		UpdateExpression:          aws.String("ADD #r :run SET #ex = :ex"),
		ExpressionAttributeNames:  map[string]string{"#r": "runs", "#ex": "expires_at"},
		ExpressionAttributeValues: map[string]types.AttributeValue{":run": &types.AttributeValueMemberSS{Value: []string{run}}, ":ex": expiresAt(time.Now())},
	})
	if err != nil {
		return fmt.Errorf("recording the export's run: %w", err)
	}
	return nil
}

// deletions is the count of the owner's note id's deletion record (0
// without one).
func (d *dynamoNotes) deletions(ctx context.Context, owner, id string) (int, error) {
	it, err := d.record(ctx, owner, deletedSK(id))
	return int(numAttr(it, "deletes")), err
}

// exportRuns is how many completed runs of notes_export the owner's task
// taskID recorded.
func (d *dynamoNotes) exportRuns(ctx context.Context, owner, taskID string) (int, error) {
	it, err := d.record(ctx, owner, exportSK(taskID))
	runs, _ := it["runs"].(*types.AttributeValueMemberSS)
	if runs == nil {
		return 0, err
	}
	return len(runs.Value), err
}

func (d *dynamoNotes) record(ctx context.Context, owner, sk string) (map[string]types.AttributeValue, error) {
	c, err := d.client(ctx)
	if err != nil {
		return nil, err
	}
	out, err := c.GetItem(ctx, &dynamodb.GetItemInput{TableName: &d.table, Key: notesKey(notesPK(owner), sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("reading an execution record: %w", err)
	}
	return out.Item, nil
}

// List reads one page with Query (more than one when DynamoDB's 1 MB
// pages cut it short), asking for one note more than the page to learn
// whether more follow.
func (d *dynamoNotes) List(ctx context.Context, owner, after string, limit int) ([]Note, bool, error) {
	c, err := d.client(ctx)
	if err != nil {
		return nil, false, err
	}
	if after < "n" {
		after = "n" // every id sorts after "n", and the counter before it
	}
	limit = max(limit, 0)
	in := &dynamodb.QueryInput{
		TableName:                 &d.table,
		KeyConditionExpression:    aws.String("pk = :pk AND sk > :after"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": notesPK(owner), ":after": &types.AttributeValueMemberS{Value: after}},
		ConsistentRead:            aws.Bool(true),
	}
	notes := make([]Note, 0, min(limit+1, 128))
	for len(notes) <= limit {
		in.Limit = aws.Int32(int32(limit + 1 - len(notes)))
		out, err := c.Query(ctx, in)
		if err != nil {
			return nil, false, fmt.Errorf("listing notes: %w", err)
		}
		for _, it := range out.Items {
			n, err := decodeNote(it)
			if err != nil {
				return nil, false, err
			}
			notes = append(notes, n)
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
	if len(notes) > limit {
		return notes[:limit], true, nil
	}
	return notes, false, nil
}

func decodeNote(item map[string]types.AttributeValue) (Note, error) {
	id, _ := item["sk"].(*types.AttributeValueMemberS)
	text, _ := item["text"].(*types.AttributeValueMemberS)
	if id == nil || text == nil || !validNoteID(id.Value) {
		return Note{}, errors.New("decoding a note: not a note item")
	}
	return Note{ID: id.Value, Text: text.Value, Created: time.UnixMilli(numAttr(item, "created")).UTC()}, nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// numAttr reads an integer attribute; 0 when absent or not an integer.
func numAttr(item map[string]types.AttributeValue, name string) int64 {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}
