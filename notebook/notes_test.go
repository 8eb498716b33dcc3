package notebook

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// noteStoreContract is what every NoteStore must do; it runs against the
// memory store here and against DynamoDB Local in the integration tests.
// newStore returns an empty store (or one whose owners no other test
// uses) that holds at most perOwner notes per owner.
func noteStoreContract(t *testing.T, newStore func(t *testing.T, perOwner int) NoteStore) {
	ctx := context.Background()
	var seq atomic.Int64
	owner := func(name string) string { return fmt.Sprintf("%s-%d-%d", name, time.Now().UnixNano(), seq.Add(1)) }

	t.Run("notes belong to their owner", func(t *testing.T) {
		s := newStore(t, 10)
		alice, bob := owner("alice"), owner("bob")
		n, err := s.Add(ctx, alice, "Buy milk")
		if err != nil || !validNoteID(n.ID) || n.Text != "Buy milk" {
			t.Fatalf("add: %+v %v", n, err)
		}
		if got, err := s.Get(ctx, alice, n.ID); err != nil || got.ID != n.ID || got.Text != n.Text || !got.Created.Equal(n.Created) {
			t.Errorf("get: %+v %v, want %+v", got, err, n)
		}
		if _, err := s.Get(ctx, bob, n.ID); !errors.Is(err, ErrNoNote) {
			t.Errorf("bob gets alice's note: %v", err)
		}
		if err := s.Delete(ctx, bob, n.ID); !errors.Is(err, ErrNoNote) {
			t.Errorf("bob deletes alice's note: %v", err)
		}
		if notes, more, err := s.List(ctx, bob, "", 10); err != nil || len(notes) != 0 || more {
			t.Errorf("bob lists %v %v %v", notes, more, err)
		}
		if notes, _, err := s.List(ctx, alice, "", 10); err != nil || len(notes) != 1 || notes[0].ID != n.ID {
			t.Errorf("alice lists %v %v", notes, err)
		}
		if err := s.Delete(ctx, alice, n.ID); err != nil {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, alice, n.ID); !errors.Is(err, ErrNoNote) {
			t.Errorf("second delete: %v", err)
		}
		if _, err := s.Get(ctx, alice, n.ID); !errors.Is(err, ErrNoNote) {
			t.Errorf("get after delete: %v", err)
		}
	})

	t.Run("pages see every note once, oldest first", func(t *testing.T) {
		s := newStore(t, 100)
		alice := owner("alice")
		var added []string
		for i := range 25 {
			n, err := s.Add(ctx, alice, fmt.Sprint("note ", i))
			if err != nil {
				t.Fatal(err)
			}
			added = append(added, n.ID)
		}
		if !slices.IsSorted(added) {
			t.Errorf("ids are not in creation order: %v", added)
		}
		var seen []string
		after := ""
		for page := 0; ; page++ {
			notes, more, err := s.List(ctx, alice, after, 10)
			if err != nil {
				t.Fatal(err)
			}
			if want := min(10, 25-10*page); len(notes) != want || more != (page < 2) {
				t.Fatalf("page %d: %d notes, more %v", page, len(notes), more)
			}
			for _, n := range notes {
				seen = append(seen, n.ID)
				after = n.ID
			}
			if !more {
				break
			}
		}
		if !slices.Equal(seen, added) {
			t.Errorf("seen %v, want %v", seen, added)
		}
		// A position need not be a note: the notes after it.
		mid := added[12][:16]
		var want []string
		for _, id := range added {
			if id > mid {
				want = append(want, id)
			}
		}
		if notes, more, err := s.List(ctx, alice, mid, 100); err != nil || more || !slices.Equal(noteIDList(notes), want) {
			t.Errorf("after %s: %v, more %v, %v; want %v", mid, noteIDList(notes), more, err, want)
		}
		if notes, more, err := s.List(ctx, alice, added[24], 10); err != nil || more || len(notes) != 0 {
			t.Errorf("after the last: %v %v %v", notes, more, err)
		}
	})

	t.Run("a full book refuses, naming its limit", func(t *testing.T) {
		s := newStore(t, 5)
		alice, bob := owner("alice"), owner("bob")
		var ids []string
		for i := range 5 {
			n, err := s.Add(ctx, alice, fmt.Sprint("note ", i))
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, n.ID)
		}
		var full *NoteLimitError
		if _, err := s.Add(ctx, alice, "one too many"); !errors.As(err, &full) || full.Limit != 5 || !full.PerOwner {
			t.Fatalf("sixth add: %v", err)
		}
		if _, err := s.Add(ctx, bob, "bob's first"); err != nil {
			t.Errorf("bob's book is not alice's: %v", err)
		}
		// Deleting a note that is not there frees nothing; deleting one
		// that is frees its place.
		if err := s.Delete(ctx, alice, "n0000000000000000"); !errors.Is(err, ErrNoNote) {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, alice, "still full"); !errors.As(err, &full) {
			t.Errorf("after deleting nothing: %v", err)
		}
		if err := s.Delete(ctx, alice, ids[0]); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Add(ctx, alice, "in its place"); err != nil {
			t.Errorf("after a delete: %v", err)
		}
		if notes, _, _ := s.List(ctx, alice, "", 100); len(notes) != 5 {
			t.Errorf("%d notes", len(notes))
		}
	})

	t.Run("concurrent adds stop at the limit", func(t *testing.T) {
		s := newStore(t, 10)
		alice := owner("alice")
		var wg sync.WaitGroup
		var added, refused atomic.Int32
		for i := range 30 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, err := s.Add(ctx, alice, fmt.Sprint("note ", i))
				var full *NoteLimitError
				switch {
				case err == nil:
					added.Add(1)
				case errors.As(err, &full):
					refused.Add(1)
				default:
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		notes, _, err := s.List(ctx, alice, "", 100)
		if err != nil || added.Load() != 10 || refused.Load() != 20 || len(notes) != 10 {
			t.Errorf("%d added, %d refused, %d listed, %v", added.Load(), refused.Load(), len(notes), err)
		}
	})

	t.Run("effects leave execution records", func(t *testing.T) {
		s := newStore(t, 10)
		rec, ok := s.(executionRecords)
		if !ok {
			t.Fatalf("%T keeps no execution records", s)
		}
		alice, bob := owner("alice"), owner("bob")
		n, err := s.Add(ctx, alice, "note")
		if err != nil {
			t.Fatal(err)
		}
		if c, err := rec.deletions(ctx, alice, n.ID); err != nil || c != 0 {
			t.Fatalf("before the delete: %d %v", c, err)
		}
		if err := s.Delete(ctx, bob, n.ID); !errors.Is(err, ErrNoNote) {
			t.Fatal(err)
		}
		if err := s.Delete(ctx, alice, n.ID); err != nil {
			t.Fatal(err)
		}
		// A delete of a note that is gone changes nothing.
		if err := s.Delete(ctx, alice, n.ID); !errors.Is(err, ErrNoNote) {
			t.Fatal(err)
		}
		if c, err := rec.deletions(ctx, alice, n.ID); err != nil || c != 1 {
			t.Errorf("deleted once, recorded %d %v", c, err)
		}
		if c, err := rec.deletions(ctx, bob, n.ID); err != nil || c != 0 {
			t.Errorf("bob's record: %d %v", c, err)
		}
		// An export's runs: one record per run, however often it is written.
		for _, run := range []string{"1-a", "1-a", "2-b"} {
			if err := s.RecordExport(ctx, alice, "task1", run); err != nil {
				t.Fatal(err)
			}
		}
		if c, err := rec.exportRuns(ctx, alice, "task1"); err != nil || c != 2 {
			t.Errorf("two runs, recorded %d %v", c, err)
		}
		if c, err := rec.exportRuns(ctx, bob, "task1"); err != nil || c != 0 {
			t.Errorf("bob's task1: %d %v", c, err)
		}
	})
}

// executionRecords reads a store's execution records (see executionTTL).
type executionRecords interface {
	deletions(ctx context.Context, owner, id string) (int, error)
	exportRuns(ctx context.Context, owner, taskID string) (int, error)
}

func TestMemoryNoteStore(t *testing.T) {
	noteStoreContract(t, func(t *testing.T, perOwner int) NoteStore { return newMemoryNotesLimited(perOwner, 1_000) })
}

// TestMemoryNoteStoreTotal: the memory store holds at most its total of
// items (notes, each owner's counter, execution records), whoever they
// belong to: an add past it is refused as the store's limit, nothing
// written, and a delete, which leaves a record of itself, frees no room
// until that record expires.
func TestMemoryNoteStoreTotal(t *testing.T) {
	ctx := context.Background()
	s := newMemoryNotesLimited(3, 8)
	var last Note
	for i := range 5 {
		// owner-0 twice, owner-1 twice, owner-2 once: 5 notes, 3 counters.
		n, err := s.Add(ctx, fmt.Sprint("owner-", i%3), "note")
		if err != nil {
			t.Fatal(i, err)
		}
		last = n
	}
	var full *NoteLimitError
	if _, err := s.Add(ctx, "owner-0", "note"); !errors.As(err, &full) || full.Limit != 8 || full.PerOwner {
		t.Fatalf("a ninth item: %v", err)
	}
	if notes, _, _ := s.List(ctx, "owner-0", "", 10); len(notes) != 2 {
		t.Fatalf("owner-0 has %d notes", len(notes))
	}
	if err := s.Delete(ctx, "owner-1", last.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Add(ctx, "owner-0", "note"); !errors.As(err, &full) {
		t.Fatalf("after a delete, whose record takes the note's place: %v", err)
	}
	if n, err := s.deletions(ctx, "owner-1", last.ID); err != nil || n != 1 {
		t.Fatalf("the deletion's record: %d %v", n, err)
	}
}

func noteIDList(notes []Note) []string {
	var ids []string
	for _, n := range notes {
		ids = append(ids, n.ID)
	}
	return ids
}

// TestNoteIDs: ids sort in creation order, within a millisecond too, and
// keep their shape until the year 2527.
func TestNoteIDs(t *testing.T) {
	var g noteIDSource
	at := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 1000 {
		ids = append(ids, g.next(at.Add(time.Duration(i/100)*time.Millisecond)))
	}
	if !slices.IsSorted(ids) || slices.Compact(slices.Clone(ids)) == nil || len(slices.Compact(slices.Clone(ids))) != 1000 {
		t.Errorf("ids out of order or repeated: %v", ids)
	}
	for _, id := range ids {
		if !validNoteID(id) {
			t.Fatalf("invalid id %s", id)
		}
	}
	var far noteIDSource
	if got := far.next(time.Date(2527, 1, 1, 0, 0, 0, 0, time.UTC)); !validNoteID(got) || got <= ids[999] {
		t.Errorf("far future: %s", got)
	}
}
