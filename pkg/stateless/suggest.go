package stateless

import "strings"

// suggest returns the visible name closest to name, if one is close
// enough to be a likely typo.
func suggest(name string, candidates []string) string {
	limit := min(2, max(1, len(name)/2))
	best, bestD := "", limit+1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		if d := editDistance(ln, strings.ToLower(c), limit); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max+1 once it
// is known to exceed max.
func editDistance(a, b string, max int) int {
	if len(a) > 256 || len(b) > 256 {
		return max + 1
	}
	if d := len(a) - len(b); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
