package notebook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
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
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
}

// writes is the note book's table as package items writes it: enlisted in
// a keyed call's claim, else at once.
func (d *dynamoNotes) writes() *items.DynamoDB {
	return items.NewDynamoDB(lazyNotesAPI(d.client), d.table)
}

// lazyNotesAPI is the note book's client, made on its first use.
type lazyNotesAPI func(ctx context.Context) (notesAPI, error)

func (l lazyNotesAPI) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.PutItem(ctx, in, opts...)
}

func (l lazyNotesAPI) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.UpdateItem(ctx, in, opts...)
}

func (l lazyNotesAPI) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.DeleteItem(ctx, in, opts...)
}

func (l lazyNotesAPI) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.TransactWriteItems(ctx, in, opts...)
}

func (l lazyNotesAPI) GetItem(ctx context.Context, in *dynamodb.GetItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.GetItem(ctx, in, opts...)
}

func (l lazyNotesAPI) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	c, err := l(ctx)
	if err != nil {
		return nil, err
	}
	return c.Query(ctx, in, opts...)
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
	return &types.AttributeValueMemberS{Value: notesPart(owner)}
}

// notesPart is notesPK's value.
func notesPart(owner string) string {
	d := sha256.Sum256([]byte(owner))
	return "notes#" + hex.EncodeToString(d[:])
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

// The sort keys of a note's deletion record and of an export's runs.
func deletedSK(id string) string    { return "#deleted#" + id }
func exportSK(taskID string) string { return "#export#" + taskID }

func expiresAt(now time.Time) types.AttributeValue { return num(now.Add(executionTTL).Unix()) }

func (d *dynamoNotes) Add(ctx context.Context, owner, text string) (Note, error) {
	pk := notesPart(owner)
	limit := d.perOwner()
	n := Note{Text: text, Created: time.Now().UTC().Truncate(time.Millisecond)}
	// A keyed call: the writes commit with the call's claim and its
	// stored result, after this returns, in one request (items). The
	// book's room is the counter's condition, answered as a full book
	// when it fails then; the id's, a refused commit the client retries.
	// Otherwise they are written now, and a taken id (one in a million)
	// is drawn again.
	full := &NoteLimitError{Limit: limit, PerOwner: true}
	for attempt := 0; ; attempt++ {
		n.ID = d.ids.next(n.Created)
		err := d.writes().Write(ctx,
			items.Update(items.Key{PK: pk, SK: counterSK}).Add("notes", 1).If(items.Less("notes", int64(limit))).OrFail(full.failure()),
			items.Put(items.Key{PK: pk, SK: n.ID}, items.Item{"text": items.S(n.Text), "created": items.Int(n.Created.UnixMilli())}).If(items.Absent()))
		var ce *items.ConditionError
		switch {
		case err == nil:
			return n, nil
		case errors.As(err, &ce) && ce.Op == 0:
			return Note{}, full
		case errors.As(err, &ce) && attempt < 3:
		default:
			return Note{}, fmt.Errorf("adding a note: %w", err)
		}
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
	pk := notesPart(owner)
	if claims.Enlisting(ctx) {
		// A keyed call: read what the condition will check, so that a
		// missing note is answered now rather than as a refused commit,
		// then let the delete commit with the claim.
		if _, ok, err := d.writes().Get(ctx, items.Key{PK: pk, SK: id}); err != nil || !ok {
			if err != nil {
				return fmt.Errorf("reading a note: %w", err)
			}
			return ErrNoNote
		}
	}
	// The note, if it exists; the counter down by one; the note's
	// deletion record up by one.
	err := d.writes().Write(ctx,
		items.Delete(items.Key{PK: pk, SK: id}).If(items.Exists()),
		items.Update(items.Key{PK: pk, SK: counterSK}).Add("notes", -1),
		items.Update(items.Key{PK: pk, SK: deletedSK(id)}).Add("deletes", 1).Set("expires_at", expiresAt(time.Now())))
	var ce *items.ConditionError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ce):
		return ErrNoNote
	default:
		return fmt.Errorf("deleting a note: %w", err)
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
