package auth

// HasScopes returns the scopes of required that granted does not cover,
// in the order of required and without repeats; nil means the token is
// enough. implies is the server's scope hierarchy: implies[s] lists the
// narrower scopes that s grants too (for example "notes" implies
// "notes:read" and "notes:write"). Implication is transitive, and a cycle
// in implies is harmless.
//
// The caller answers a non-empty result with 403 insufficient_scope
// naming every scope the operation needs, in one challenge, as the MCP
// specification asks; that is why all missing scopes are returned, not
// the first.
func HasScopes(granted, required []string, implies map[string][]string) (missing []string) {
	if len(required) == 0 {
		return nil
	}
	have := make(map[string]struct{}, len(granted))
	pending := append([]string(nil), granted...)
	for len(pending) > 0 {
		s := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if _, ok := have[s]; ok {
			continue // seen: this is what makes cycles harmless
		}
		have[s] = struct{}{}
		pending = append(pending, implies[s]...)
	}
	for i, r := range required {
		if _, ok := have[r]; ok {
			continue
		}
		repeat := false
		for _, earlier := range required[:i] {
			if earlier == r {
				repeat = true
				break
			}
		}
		if !repeat {
			missing = append(missing, r)
		}
	}
	return missing
}
