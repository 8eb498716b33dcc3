package smoke

import (
	"slices"
	"testing"
)

// TestSuiteOutput: the suite's listing and per-scenario lines, as its CLI
// prints them, are read back scenario by scenario.
func TestSuiteOutput(t *testing.T) {
	listing := "Client scenarios:\n  - initialize\n\nServer scenarios (2026-07-28 requirements):\n  - server-initialize\n  - tools-call-simple-text\n\nOther\n  - x\n"
	if got := requiredServerScenarios(listing); !slices.Equal(got, []string{"server-initialize", "tools-call-simple-text"}) {
		t.Errorf("required %q", got)
	}
	out := "✓ server-initialize: 3 passed, 0 failed\n✗ tools-call-simple-text: 1 passed, 2 failed\nnot a line: 1 passed, 0 failed\n✓ tasks-status-notifications: 0 passed, 0 failed\n"
	got := ScenarioResults(out)
	want := map[string]ScenarioResult{"server-initialize": {3, 0}, "tools-call-simple-text": {1, 2}, "tasks-status-notifications": {0, 0}}
	if len(got) != len(want) {
		t.Fatalf("results %v", got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v, want %v", k, got[k], v)
		}
	}
}
