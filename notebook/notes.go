package notebook

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
	return fmt.Sprintf("the note store is full: at most %d items in all", e.Limit)
}

// MaxNotesPerOwner is the notes each principal has at most, in memory
// and in DynamoDB. In memory the endpoint's table bounds them all
// (items.DefaultMaxItems items: notes, counters and records; a note is at
// most 4,000 characters, 16 KB of UTF-8: 160 MB at the very worst, 40 MB
// of ASCII).
const MaxNotesPerOwner = 1_000

// NoteStore keeps notes: as items of the endpoint's table (package
// items), on Lambda the claims table, locally memory, one item each
// (notes_table.go).
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
