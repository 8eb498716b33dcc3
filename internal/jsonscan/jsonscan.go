// Package jsonscan walks JSON that is already known to be valid, without
// decoding it: the positions of strings and values, so that callers can
// look at keys and spans without allocating. It does not validate; give it
// only bytes a JSON decoder has accepted.
package jsonscan

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
