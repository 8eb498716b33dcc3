package notebook

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// A search cursor is a position in the caller's own notes: the id of the
// last note the previous page examined. It is opaque to the client —
// base64url of a version byte, the id's 8 bytes and a 12-byte check — and
// it is no capability: the store applies the position to the notes of
// the principal making the call and no one else's, so whatever a cursor
// says, it can only ever page through the caller's own notes.
//
// The check, a digest of the principal, the query and the position, makes
// a cursor that was altered, made up, or given to another principal or
// another query fail with a clear error rather than page from somewhere
// unexpected. It is not a secret (anyone who knows the scheme can compute
// it for their own principal, and gain nothing by it).
const (
	cursorVersion = 1
	cursorCheck   = 12
	cursorLen     = 1 + 8 + cursorCheck
)

// makeCursor returns the cursor for the notes after id in the search for
// query by principal.
func makeCursor(principal, query, id string) string {
	var b [cursorLen]byte
	b[0] = cursorVersion
	if _, err := hex.Decode(b[1:9], []byte(id[1:])); err != nil {
		panic("makeCursor: not a note id: " + id) // ids come from the store
	}
	check := cursorDigest(principal, query, b[:9])
	copy(b[9:], check[:cursorCheck])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// openCursor returns the position a cursor holds, if principal was given
// it for query.
func openCursor(principal, query, cursor string) (string, bool) {
	if base64.RawURLEncoding.DecodedLen(len(cursor)) != cursorLen {
		return "", false
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil || len(b) != cursorLen || b[0] != cursorVersion {
		return "", false
	}
	check := cursorDigest(principal, query, b[:9])
	if subtle.ConstantTimeCompare(check[:cursorCheck], b[9:]) != 1 {
		return "", false
	}
	return "n" + hex.EncodeToString(b[1:9]), true
}

func cursorDigest(principal, query string, position []byte) [32]byte {
	h := sha256.New()
	fmt.Fprintf(h, "notes_search cursor\x00%d:%s%d:%s", len(principal), principal, len(query), query)
	h.Write(position)
	var d [32]byte
	h.Sum(d[:0])
	return d
}
