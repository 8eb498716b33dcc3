package notebook

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	"github.com/serverless-mcp/mcp-lambda/pkg/items"
)

// tableNotes keeps the notes as items of a table (package items): on
// Lambda the claims table (partition key pk, sort key sk, as
// template.yaml creates it), locally the endpoint's table in memory, one
// item per note, each owner's under one partition:
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
// An add is two conditional writes: the note's Put (its id is new) and
// the counter's Update (the count is under the limit, and goes up by
// one). A delete is the note's Delete (it exists), the counter's Update
// (down by one) and the note's deletion record's Update (up by one).
// Either all happen or none, so the count is exact, and concurrent adds
// stop at the limit. Reads are consistent, so that a caller reads its own
// writes.
//
// In a call with an idempotency key the same writes are enlisted in the
// call's claim (items.Table.Write does it): they commit in one transaction
// with the claim and the stored result, so the key adds or deletes
// exactly once whatever fails. A keyed add commits in one step (notes_add
// has no other effect: stateless.Tool.EnlistedEffectsOnly): the claim,
// the note, the count and the result are one request, whose counter
// condition answers a full book (items.Op.OrFail), so nothing is read
// before. A keyed delete claims its key first (its confirmation is
// single-use) and reads the note first, so that a missing note is
// answered at once rather than as a refused commit.
type tableNotes struct {
	items items.Table
	// limit is the notes per owner; 0 means MaxNotesPerOwner.
	limit int
	ids   noteIDSource
}

// newTableNotes keeps the notes in t, at most perOwner each (0:
// MaxNotesPerOwner).
func newTableNotes(t items.Table, perOwner int) *tableNotes {
	return &tableNotes{items: t, limit: perOwner}
}

// newMemoryNotes keeps the notes in a table in memory of its own, as the
// endpoint's without a DynamoDB table.
func newMemoryNotes() *tableNotes {
	return newMemoryNotesLimited(MaxNotesPerOwner, items.DefaultMaxItems)
}

// newMemoryNotesLimited keeps the notes in a table in memory of at most
// all items (notes, counters, records), perOwner notes each.
func newMemoryNotesLimited(perOwner, all int) *tableNotes {
	return newTableNotes(items.NewMemory(items.MemoryOptions{MaxItems: all, TTL: "expires_at"}), perOwner)
}

// counterSK is the sort key of an owner's counter item. Note ids begin
// with "n"; "#" sorts before it, so a Query for notes never meets it.
const counterSK = "#count"

// notesPart is the partition key of an owner's notes: a digest, so
// that principals do not appear in keys.
func notesPart(owner string) string {
	d := sha256.Sum256([]byte(owner))
	return "notes#" + hex.EncodeToString(d[:])
}

func (d *tableNotes) perOwner() int {
	if d.limit > 0 {
		return d.limit
	}
	return MaxNotesPerOwner
}

// The sort keys of a note's deletion record and of an export's runs.
func deletedSK(id string) string    { return "#deleted#" + id }
func exportSK(taskID string) string { return "#export#" + taskID }

func expiresAt(now time.Time) types.AttributeValue { return num(now.Add(executionTTL).Unix()) }

func (d *tableNotes) Add(ctx context.Context, owner, text string) (Note, error) {
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
		err := d.items.Write(ctx,
			items.Update(items.Key{PK: pk, SK: counterSK}).Add("notes", 1).If(items.Less("notes", int64(limit))).OrFail(full.failure()),
			items.Put(items.Key{PK: pk, SK: n.ID}, items.Item{"text": items.S(n.Text), "created": items.Int(n.Created.UnixMilli())}).If(items.Absent()))
		var ce *items.ConditionError
		switch {
		case err == nil:
			return n, nil
		case errors.As(err, &ce) && ce.Op == 0:
			return Note{}, full
		case errors.Is(err, items.ErrFull):
			return Note{}, d.storeFull()
		case errors.As(err, &ce) && attempt < 3:
		default:
			return Note{}, fmt.Errorf("adding a note: %w", err)
		}
	}
}

func (d *tableNotes) Get(ctx context.Context, owner, id string) (Note, error) {
	if !validNoteID(id) {
		return Note{}, ErrNoNote
	}
	it, ok, err := d.items.Get(ctx, items.Key{PK: notesPart(owner), SK: id})
	if err != nil {
		return Note{}, fmt.Errorf("reading a note: %w", err)
	}
	if !ok {
		return Note{}, ErrNoNote
	}
	return decodeNote(id, it)
}

// storeFull is the refusal of an add to a table in memory that holds all
// the items it may.
func (d *tableNotes) storeFull() *NoteLimitError {
	m, _ := d.items.(interface{ MaxItems() int })
	if m == nil {
		return &NoteLimitError{}
	}
	return &NoteLimitError{Limit: m.MaxItems()}
}

func (d *tableNotes) Delete(ctx context.Context, owner, id string) error {
	if !validNoteID(id) {
		return ErrNoNote // and never the counter
	}
	pk := notesPart(owner)
	if claims.Enlisting(ctx) {
		// A keyed call: read what the condition will check, so that a
		// missing note is answered now rather than as a refused commit,
		// then let the delete commit with the claim.
		if _, ok, err := d.items.Get(ctx, items.Key{PK: pk, SK: id}); err != nil || !ok {
			if err != nil {
				return fmt.Errorf("reading a note: %w", err)
			}
			return ErrNoNote
		}
	}
	// The note, if it exists; the counter down by one; the note's
	// deletion record up by one.
	err := d.items.Write(ctx,
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
func (d *tableNotes) RecordExport(ctx context.Context, owner, taskID, run string) error {
	err := d.items.Write(ctx, items.Update(items.Key{PK: notesPart(owner), SK: exportSK(taskID)}).
		Include("runs", run).Set("expires_at", expiresAt(time.Now())))
	if err != nil {
		return fmt.Errorf("recording the export's run: %w", err)
	}
	return nil
}

// deletions is the count of the owner's note id's deletion record (0
// without one).
func (d *tableNotes) deletions(ctx context.Context, owner, id string) (int, error) {
	it, err := d.record(ctx, owner, deletedSK(id))
	return int(numAttr(it, "deletes")), err
}

// exportRuns is how many completed runs of notes_export the owner's task
// taskID recorded.
func (d *tableNotes) exportRuns(ctx context.Context, owner, taskID string) (int, error) {
	it, err := d.record(ctx, owner, exportSK(taskID))
	runs, _ := it["runs"].(*types.AttributeValueMemberSS)
	if runs == nil {
		return 0, err
	}
	return len(runs.Value), err
}

func (d *tableNotes) record(ctx context.Context, owner, sk string) (items.Item, error) {
	it, _, err := d.items.Get(ctx, items.Key{PK: notesPart(owner), SK: sk})
	if err != nil {
		return nil, fmt.Errorf("reading an execution record: %w", err)
	}
	return it, nil
}

// List reads one page: the owner's items after after, from the first
// note on (every id sorts after "n", and the counter and the records
// before it).
func (d *tableNotes) List(ctx context.Context, owner, after string, limit int) ([]Note, bool, error) {
	if after < "n" {
		after = "n"
	}
	if limit <= 0 {
		return nil, false, nil
	}
	entries, more, err := d.items.Query(ctx, notesPart(owner), after, limit)
	if err != nil {
		return nil, false, fmt.Errorf("listing notes: %w", err)
	}
	notes := make([]Note, 0, len(entries))
	for _, e := range entries {
		n, err := decodeNote(e.SK, e.Item)
		if err != nil {
			return nil, false, err
		}
		notes = append(notes, n)
	}
	return notes, more, nil
}

func decodeNote(id string, item items.Item) (Note, error) {
	text, _ := item["text"].(*types.AttributeValueMemberS)
	if text == nil || !validNoteID(id) {
		return Note{}, errors.New("decoding a note: not a note item")
	}
	return Note{ID: id, Text: text.Value, Created: time.UnixMilli(numAttr(item, "created")).UTC()}, nil
}

func num(n int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(n, 10)}
}

// numAttr reads an integer attribute; 0 when absent or not an integer.
func numAttr(item items.Item, name string) int64 {
	v, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	n, _ := strconv.ParseInt(v.Value, 10, 64)
	return n
}
