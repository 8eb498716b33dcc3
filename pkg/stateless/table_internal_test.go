package stateless

import "testing"

// TestMethodTable: every row names a feature of the feature table (or
// none), serves some era, and decodes into a params type of its own.
func TestMethodTable(t *testing.T) {
	known := map[string]bool{"": true}
	for _, f := range featureTable {
		known[f.name] = true
	}
	for name, m := range methods {
		if !known[m.feature] {
			t.Errorf("%s: feature %q is not in the feature table", name, m.feature)
		}
		if m.era&everyEra == 0 || m.serve == nil || m.params == nil {
			t.Errorf("%s: incomplete row %+v", name, m)
		}
		if a, b := m.params(), m.params(); a == b {
			t.Errorf("%s: params() returns a shared value", name)
		}
	}
}
