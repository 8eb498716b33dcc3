package jsonscan

import "unicode/utf8"

// maxDepth bounds nesting as the JSON decoders of this module bound it.
const maxDepth = 10000

// Valid reports whether b is exactly one JSON value (RFC 8259), with
// white space around it and nothing else, whose strings are valid UTF-8
// and escape no lone surrogate, nested at most 10,000 deep: what a strict
// decoder (jsontext's defaults) accepts, less its check of names given
// twice, which is [UniqueNames]. It allocates nothing and is small, for
// the checks a cold start makes before any decoder has run: there, the
// code a check touches for the first time is most of its cost.
func Valid(b []byte) bool {
	i, ok := value(b, SkipSpace(b, 0), 0)
	return ok && SkipSpace(b, i) == len(b)
}

// value validates the value at b[i] and returns the index past it.
func value(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '"':
		return validString(b, i)
	case c == '{' || c == '[':
		if depth++; depth > maxDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = SkipSpace(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			ok := true
			if end == '}' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = validString(b, i); !ok {
					return i, false
				}
				if i = SkipSpace(b, i); i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = SkipSpace(b, i+1)
			}
			if i, ok = value(b, i, depth); !ok {
				return i, false
			}
			if i = SkipSpace(b, i); i >= len(b) {
				return i, false
			}
			switch b[i] {
			case ',':
				i = SkipSpace(b, i+1)
			case end:
				return i + 1, true
			default:
				return i, false
			}
		}
	case c == 't':
		return literal(b, i, "true")
	case c == 'f':
		return literal(b, i, "false")
	case c == 'n':
		return literal(b, i, "null")
	default:
		return number(b, i)
	}
}

func literal(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

// number validates -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?.
func number(b []byte, i int) (int, bool) {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		i = digits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := digits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}

func digits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// validString validates the string at b[i] (a quote): no control
// character, valid escapes, valid UTF-8, and no escaped lone surrogate.
func validString(b []byte, i int) (int, bool) {
	for i++; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			if i+1 >= len(b) {
				return i, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := escapedRune(b, i)
				if !ok {
					return i, false
				}
				i += 6
				if utf16Surrogate(r) {
					// A high surrogate must be followed by an escaped low one.
					r2, ok := escapedRune(b, i)
					if r >= 0xdc00 || !ok || r2 < 0xdc00 || r2 >= 0xe000 {
						return i, false
					}
					i += 6
				}
			default:
				return i, false
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return i, false
			}
			i += size
		}
	}
	return i, false
}

// escapedRune reads the escape \uXXXX at b[i].
func escapedRune(b []byte, i int) (rune, bool) {
	if len(b)-i < 6 || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
