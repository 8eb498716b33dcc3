package notebook

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/claims"
	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Note is one note of the demo's note book. Notes belong to the principal
// that wrote them.
type Note struct {
	ID      string    `json:"id"`
	Text    string    `json:"text"`
	Created time.Time `json:"created"`
}

// ErrNoNote is returned for a note that does not exist for this owner.
var ErrNoNote = errors.New("no such note")

// NoteLimitError is returned by Add when a note book is full: the
// owner's (PerOwner), or, in memory, the whole store's.
type NoteLimitError struct {
	Limit    int
	PerOwner bool
}

// failure is the tool failure notes_add answers a full book with: not
// retryable, naming the limit.
func (e *NoteLimitError) failure() *mcperr.ToolError {
	if e.PerOwner {
		return mcperr.NewRefused("note_limit_reached", noteLimit{Limit: e.Limit})
	}
	return mcperr.NewRefused("note_store_full", noteLimit{Limit: e.Limit})
}

func (e *NoteLimitError) Error() string {
	if e.PerOwner {
		return fmt.Sprintf("the note book is full: at most %d notes each", e.Limit)
	}
	return fmt.Sprintf("the note store is full: at most %d notes in all", e.Limit)
}

// The note books' limits. Each principal has at most MaxNotesPerOwner
// notes, in memory and in DynamoDB; the in-memory store holds at most
// MaxNotesInMemory notes in all (a note is at most 4,000 characters, 16 KB
// of UTF-8: 160 MB at the very worst, 40 MB of ASCII).
const (
	MaxNotesPerOwner = 1_000
	MaxNotesInMemory = 10_000
)

// NoteStore keeps notes. Locally they live in memory; on Lambda in the
// claims table, one item each (notes_dynamo.go).
//
// An owner's notes are kept in id order, which is creation order (see
// newNoteID), and are read a page at a time: no call loads an unbounded
// number of notes.
type NoteStore interface {
	// Add adds a note, or returns a *NoteLimitError when the book is full.
	Add(ctx context.Context, owner, text string) (Note, error)
	// Get returns one note, or ErrNoNote.
	Get(ctx context.Context, owner, id string) (Note, error)
	// Delete deletes one note, or returns ErrNoNote.
	Delete(ctx context.Context, owner, id string) error
	// List returns, in id order, up to limit of the owner's notes whose
	// ids sort after after ("" for the first), and whether more follow.
	List(ctx context.Context, owner, after string, limit int) (notes []Note, more bool, err error)
	// RecordExport records one completed run of notes_export for the
	// task taskID; run names the run, so that a write tried again counts
	// it once.
	RecordExport(ctx context.Context, owner, taskID, run string) error
}

// Execution records. Each effect of the demo leaves a small record that
// counts how often it happened, kept executionTTL: a delete counts the
// deletions of its note (in the same write as the delete), and
// notes_export records each completed run of its handler by task. The
// note book never reads them; they show, from the store alone, that a
// key's effect happened once (the chaos run counts them).
const executionTTL = 24 * time.Hour

// executions is the in-memory stores' execution records.
type executions struct {
	deletes map[string]*execution // by owner and note id
	exports map[string]*execution // by owner and task id
	pruneAt int
}

type execution struct {
	n       int
	runs    map[string]bool
	expires time.Time
}

// record finds or makes the record of key in m, dropping expired
// records once the maps have doubled since the last time.
func (x *executions) record(m *map[string]*execution, key string, now time.Time) *execution {
	if *m == nil {
		*m = map[string]*execution{}
	}
	if len(x.deletes)+len(x.exports) >= max(x.pruneAt, 1024) {
		for _, mm := range []map[string]*execution{x.deletes, x.exports} {
			for k, e := range mm {
				if !now.Before(e.expires) {
					delete(mm, k)
				}
			}
		}
		x.pruneAt = 2 * (len(x.deletes) + len(x.exports))
	}
	e := (*m)[key]
	if e == nil || !now.Before(e.expires) {
		e = &execution{runs: map[string]bool{}}
		(*m)[key] = e
	}
	e.expires = now.Add(executionTTL)
	return e
}

func executionKey(owner, id string) string { return owner + "\x00" + id }

// memoryNotes is the in-process NoteStore.
type memoryNotes struct {
	mu       sync.Mutex
	notes    map[string][]Note // by owner, in id order; no empty lists
	total    int
	perOwner int
	all      int
	ids      noteIDSource
	done     executions
}

func newMemoryNotes() *memoryNotes { return newMemoryNotesLimited(MaxNotesPerOwner, MaxNotesInMemory) }

func newMemoryNotesLimited(perOwner, all int) *memoryNotes {
	return &memoryNotes{notes: map[string][]Note{}, perOwner: perOwner, all: all}
}

// Add adds a note. In a keyed call that commits in one step with the
// claims in memory, the add is enlisted in the call's claim
// (claims.Write.Apply), as the DynamoDB store enlists its writes: made
// with the claim and the stored result, or not at all, the book's room
// checked then.
func (m *memoryNotes) Add(ctx context.Context, owner, text string) (Note, error) {
	n := Note{Text: text, Created: time.Now().UTC()}
	n.ID = m.ids.next(n.Created)
	if claims.EnlistWrites(ctx, claims.Write{Apply: func(commit func() bool) error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if full := m.full(owner); full != nil {
			return full.failure() // what the call answers; nothing is committed
		}
		i, found := slices.BinarySearchFunc(m.notes[owner], n.ID, byID)
		if found {
			return errIDTaken // not committed: the client's retry draws another
		}
		if commit() {
			m.insert(owner, i, n)
		}
		return nil
	}}) {
		return n, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if full := m.full(owner); full != nil {
		return Note{}, full
	}
	for {
		i, found := slices.BinarySearchFunc(m.notes[owner], n.ID, byID)
		if !found {
			m.insert(owner, i, n)
			return n, nil
		}
		n.ID = m.ids.next(n.Created) // the same millisecond and the same random bits: draw again
	}
}

// errIDTaken refuses an enlisted add whose note id is taken.
var errIDTaken = errors.New("the note id is taken")

// full says which limit keeps the owner from adding a note, if one does;
// m.mu is held.
func (m *memoryNotes) full(owner string) *NoteLimitError {
	switch {
	case len(m.notes[owner]) >= m.perOwner:
		return &NoteLimitError{Limit: m.perOwner, PerOwner: true}
	case m.total >= m.all:
		return &NoteLimitError{Limit: m.all}
	}
	return nil
}

// insert puts n at index i of the owner's notes; m.mu is held.
func (m *memoryNotes) insert(owner string, i int, n Note) {
	m.notes[owner] = slices.Insert(m.notes[owner], i, n)
	m.total++
}

func byID(n Note, id string) int { return strings.Compare(n.ID, id) }

func (m *memoryNotes) Get(_ context.Context, owner, id string) (Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.notes[owner]
	if i, found := slices.BinarySearchFunc(ns, id, byID); found {
		return ns[i], nil
	}
	return Note{}, ErrNoNote
}

func (m *memoryNotes) Delete(_ context.Context, owner, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.notes[owner]
	i, found := slices.BinarySearchFunc(ns, id, byID)
	if !found {
		return ErrNoNote
	}
	if len(ns) == 1 {
		delete(m.notes, owner)
	} else {
		m.notes[owner] = slices.Delete(ns, i, i+1)
	}
	m.total--
	m.done.record(&m.done.deletes, executionKey(owner, id), time.Now()).n++
	return nil
}

func (m *memoryNotes) RecordExport(_ context.Context, owner, taskID, run string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.done.record(&m.done.exports, executionKey(owner, taskID), time.Now()).runs[run] = true
	return nil
}

// deletions is how many times the owner's note id was deleted (its
// record's count; 0 without one).
func (m *memoryNotes) deletions(_ context.Context, owner, id string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.done.deletes[executionKey(owner, id)]; e != nil && time.Now().Before(e.expires) {
		return e.n, nil
	}
	return 0, nil
}

// exportRuns is how many completed runs of notes_export were recorded
// for the owner's task taskID.
func (m *memoryNotes) exportRuns(_ context.Context, owner, taskID string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e := m.done.exports[executionKey(owner, taskID)]; e != nil && time.Now().Before(e.expires) {
		return len(e.runs), nil
	}
	return 0, nil
}

func (m *memoryNotes) List(_ context.Context, owner, after string, limit int) ([]Note, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.notes[owner]
	i, found := slices.BinarySearchFunc(ns, after, byID)
	if found {
		i++
	}
	end := min(i+max(limit, 0), len(ns))
	return slices.Clone(ns[i:end]), end < len(ns), nil
}

// noteIDSource makes note ids: "n" and 16 hex digits, the first 11 the
// creation time in milliseconds since 1970 (until the year 2527), the
// last 5 random. Ids sort by creation time, so a page of notes in id
// order is a page in creation order, and a note added while a client
// pages through the book comes after the page it is on. Within one
// source ids only increase (two notes in the same millisecond keep their
// order); ids from two instances in the same millisecond collide one time
// in a million, and the stores draw again when they do.
type noteIDSource struct {
	mu   sync.Mutex
	last uint64
}

func (g *noteIDSource) next(created time.Time) string {
	var r [4]byte
	rand.Read(r[:])
	v := uint64(created.UnixMilli())<<20 | uint64(binary.BigEndian.Uint32(r[:])&0xfffff)
	g.mu.Lock()
	if v <= g.last {
		v = g.last + 1
	}
	g.last = v
	g.mu.Unlock()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], v)
	return "n" + hex.EncodeToString(b[:])
}

// validNoteID reports whether id has the shape newNoteID gives, so that
// a peer's string is checked before it is used as a key.
func validNoteID(id string) bool {
	if len(id) != 17 || id[0] != 'n' {
		return false
	}
	return strings.Trim(id[1:], "0123456789abcdef") == ""
}
