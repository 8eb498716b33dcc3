package bench

import "fmt"

// ProductSearch is the request the cold-start program sends to the
// product (functions/fixture: the production composition serving the
// note book, as functions/mcp does until a fork changes it), which has no echo tool: a tools/call of its
// read-only notes_search with arguments {}. It is not in All: no peer
// serves it.
var ProductSearch = newCase("ProductNotesSearch", "tools/call", "notes_search", ModernVersion,
	map[string]any{}, checkNotesSearch)

// checkNotesSearch accepts a complete result whose structured content
// lists notes (none, on a fresh instance).
func checkNotesSearch(a *Answer) error {
	sc, err := structured(a)
	if err != nil {
		return err
	}
	if _, ok := sc["notes"].([]any); !ok {
		return fmt.Errorf("structuredContent.notes %v, want a list", sc["notes"])
	}
	return nil
}
