// Package jsonscan has the small JSON helpers of the hot paths: walking
// JSON that is already known to be valid without decoding it (the
// positions of strings and values, so that callers can look at keys and
// spans without allocating; give it only bytes a JSON decoder accepted),
// and writing and reading single JSON strings without reflection.
package jsonscan

import (
	"bytes"
	"unicode/utf8"
)

// SkipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func SkipSpace(d []byte, i int) int {
	for i < len(d) && (d[i] == ' ' || d[i] == '\t' || d[i] == '\n' || d[i] == '\r') {
		i++
	}
	return i
}

// ScanString returns the index just past the string starting at d[i]
// (a quote), and whether it contains escapes.
func ScanString(d []byte, i int) (int, bool) {
	escaped := false
	for j := i + 1; j < len(d); j++ {
		switch d[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			return j + 1, escaped
		}
	}
	return len(d), escaped
}

// SkipValue returns the index just past the JSON value starting at d[i].
func SkipValue(d []byte, i int) int {
	if i >= len(d) {
		return i
	}
	switch d[i] {
	case '"':
		end, _ := ScanString(d, i)
		return end
	case '{', '[':
		depth := 0
		for j := i; j < len(d); j++ {
			switch d[j] {
			case '"':
				end, _ := ScanString(d, j)
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(d)
	default:
		j := i
		for j < len(d) && d[j] != ',' && d[j] != '}' && d[j] != ']' && d[j] != ' ' && d[j] != '\t' && d[j] != '\n' && d[j] != '\r' {
			j++
		}
		return j
	}
}

// AppendString appends s as a JSON string. Unlike encoding/json it does
// not escape <, > and &: the output is JSON for machines, not HTML.
// Invalid UTF-8 becomes U+FFFD, as encoding/json does.
func AppendString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendUnquoted appends the text of the JSON string q (with its quotes)
// to dst, resolving escapes. q must be a valid JSON string; lone
// surrogates and invalid UTF-8 become U+FFFD, as encoding/json does.
func AppendUnquoted(dst, q []byte) []byte {
	q = q[1 : len(q)-1]
	for i := 0; i < len(q); i++ {
		c := q[i]
		if c >= utf8.RuneSelf {
			r, size := utf8.DecodeRune(q[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, q[i:i+size]...)
			}
			i += size - 1
			continue
		}
		if c != '\\' {
			dst = append(dst, c)
			continue
		}
		i++
		switch q[i] {
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r := hex4(q[i+1 : i+5])
			i += 4
			if utf16Surrogate(r) {
				if i+6 < len(q) && q[i+1] == '\\' && q[i+2] == 'u' {
					if r2 := hex4(q[i+3 : i+7]); r >= 0xd800 && r < 0xdc00 && r2 >= 0xdc00 && r2 < 0xe000 {
						dst = utf8.AppendRune(dst, (r-0xd800)<<10|(r2-0xdc00)+0x10000)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			dst = utf8.AppendRune(dst, r)
		default: // " \\ /
			dst = append(dst, q[i])
		}
	}
	return dst
}

func utf16Surrogate(r rune) bool { return r >= 0xd800 && r < 0xe000 }

func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// Members calls fn with the name and the raw value of each member of the
// JSON object b, in order, until fn returns false. It is the one place a
// raw scan reads member names, with one policy: a name's escapes are
// resolved (fn sees "\u0061" as "a"), as every JSON decoder resolves them,
// so that a scan and a decoder never read different names. b must be
// valid JSON; Members reports false when b is not an object or fn
// returned false. An escaped name is resolved into a buffer that fn must
// not keep.
func Members(b []byte, fn func(name, value []byte) bool) bool {
	i := SkipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	var buf []byte // made only for a name with escapes
	i = SkipSpace(b, i+1)
	for i < len(b) && b[i] == '"' {
		end, escaped := ScanString(b, i)
		name := b[i+1 : end-1]
		if escaped {
			buf = AppendUnquoted(buf[:0], b[i:end])
			name = buf
		}
		i = SkipSpace(b, end)
		i = SkipSpace(b, i+1) // ':'
		start := i
		i = SkipValue(b, i)
		if !fn(name, b[start:i]) {
			return false
		}
		i = SkipSpace(b, i)
		if i < len(b) && b[i] == ',' {
			i = SkipSpace(b, i+1)
		}
	}
	return true
}

// UniqueNames reports whether no object in the JSON value b, at any
// depth, has a member name twice (names compared with their escapes
// resolved, as a decoder compares them). b must be valid JSON. It is
// the check a strict decoder makes, for the callers that validate with
// a scanner and would otherwise accept what the decoder refuses.
//
// It is one pass with no recursion, comparing each name with the names
// before it in its object, which it keeps on one stack (an object's
// names are popped when it closes): a small frame that allocates nothing
// for common documents, because at a cold start memory touched for the
// first time, a grown stack's or a new map's, costs far more than the
// comparisons. The cost is quadratic in the members of one object, so
// it is for documents the program trusts, such as its own embedded
// files, not for a peer's input.
func UniqueNames(b []byte) bool {
	type span struct{ start, end int }
	var (
		namesArr [32]span
		names    = namesArr[:0] // the names of the open objects, innermost last
		openArr  [16]int
		open     = openArr[:0] // per open container: -1 for an array, else its first name's index
		key      bool          // the next string is a name
	)
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			open = append(open, len(names))
			key = true
		case '[':
			open = append(open, -1)
		case '}', ']':
			if first := open[len(open)-1]; first >= 0 {
				names = names[:first]
			}
			open = open[:len(open)-1]
		case ',':
			key = len(open) > 0 && open[len(open)-1] >= 0
		case '"':
			end, _ := ScanString(b, i)
			if key {
				q := b[i:end]
				for _, n := range names[open[len(open)-1]:] {
					if sameName(b[n.start:n.end], q) {
						return false
					}
				}
				names = append(names, span{i, end})
				key = false
			}
			i = end - 1
		}
	}
	return true
}

// sameName reports whether the quoted JSON strings p and q have the
// same text once their escapes are resolved.
func sameName(p, q []byte) bool {
	if bytes.IndexByte(p, '\\') < 0 && bytes.IndexByte(q, '\\') < 0 {
		return bytes.Equal(p, q)
	}
	var pb, qb [64]byte
	return bytes.Equal(AppendUnquoted(pb[:0], p), AppendUnquoted(qb[:0], q))
}
