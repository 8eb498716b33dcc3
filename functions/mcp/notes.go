package main

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
}

// memoryNotes is the in-process NoteStore.
type memoryNotes struct {
	mu       sync.Mutex
	notes    map[string][]Note // by owner, in id order; no empty lists
	total    int
	perOwner int
	all      int
	ids      noteIDSource
}

func newMemoryNotes() *memoryNotes { return newMemoryNotesLimited(MaxNotesPerOwner, MaxNotesInMemory) }

func newMemoryNotesLimited(perOwner, all int) *memoryNotes {
	return &memoryNotes{notes: map[string][]Note{}, perOwner: perOwner, all: all}
}

func (m *memoryNotes) Add(_ context.Context, owner, text string) (Note, error) {
	n := Note{Text: text, Created: time.Now().UTC()}
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.notes[owner]
	switch {
	case len(ns) >= m.perOwner:
		return Note{}, &NoteLimitError{Limit: m.perOwner, PerOwner: true}
	case m.total >= m.all:
		return Note{}, &NoteLimitError{Limit: m.all}
	}
	for {
		n.ID = m.ids.next(n.Created)
		i, found := slices.BinarySearchFunc(ns, n.ID, byID)
		if found {
			continue // the same millisecond and the same random bits: draw again
		}
		m.notes[owner] = slices.Insert(ns, i, n)
		m.total++
		return n, nil
	}
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
	return nil
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
