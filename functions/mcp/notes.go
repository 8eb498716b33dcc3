package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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

// NoteStore keeps notes. Locally they live in memory; on Lambda in the
// claims table, under their own key prefix.
type NoteStore interface {
	Add(ctx context.Context, owner, text string) (Note, error)
	Get(ctx context.Context, owner, id string) (Note, error)
	Delete(ctx context.Context, owner, id string) error
	List(ctx context.Context, owner string) ([]Note, error)
}

// memoryNotes is the in-process NoteStore.
type memoryNotes struct {
	mu    sync.Mutex
	notes map[string][]Note // by owner, oldest first
}

func newMemoryNotes() *memoryNotes { return &memoryNotes{notes: map[string][]Note{}} }

func (m *memoryNotes) Add(_ context.Context, owner, text string) (Note, error) {
	n := Note{ID: newNoteID(), Text: text, Created: time.Now().UTC()}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.notes[owner] = append(m.notes[owner], n)
	return n, nil
}

func (m *memoryNotes) Get(_ context.Context, owner, id string) (Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, n := range m.notes[owner] {
		if n.ID == id {
			return n, nil
		}
	}
	return Note{}, ErrNoNote
}

func (m *memoryNotes) Delete(_ context.Context, owner, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	ns := m.notes[owner]
	i := slices.IndexFunc(ns, func(n Note) bool { return n.ID == id })
	if i < 0 {
		return ErrNoNote
	}
	m.notes[owner] = slices.Delete(ns, i, i+1)
	return nil
}

func (m *memoryNotes) List(_ context.Context, owner string) ([]Note, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.notes[owner]), nil
}

// newNoteID returns a random, URL-safe note id.
func newNoteID() string {
	var b [8]byte
	rand.Read(b[:])
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
