package stateless

import "testing"

// TestMethodTable: every row names a feature of the feature table (or
// none), serves some era, and decodes into a params type of its own.
func TestMethodTable(t *testing.T) {
	known := map[string]bool{"": true}
	for _, f := range featureTable {
		known[f.name] = true
	}
	seen := map[string]bool{}
	for i := range protocolMethods {
		m := &protocolMethods[i]
		name := m.name
		if seen[name] {
			t.Errorf("%s: two rows", name)
		}
		seen[name] = true
		if protocolMethod(name) != m || protocolMethod([]byte(name)) != m || !IsProtocolMethod(name) {
			t.Errorf("%s: not found by its name", name)
		}
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
	for _, name := range []string{"", "tools/lis", "tools/listx", "Tools/list", "notifications/initialized"} {
		if protocolMethod(name) != nil || IsProtocolMethod(name) {
			t.Errorf("%q: found", name)
		}
	}
	body := []byte("tools/call")
	if n := testing.AllocsPerRun(100, func() { _ = protocolMethod(body) }); n != 0 {
		t.Errorf("a lookup by bytes allocates %v times", n)
	}
}
