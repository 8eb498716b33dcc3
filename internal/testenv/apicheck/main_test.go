package main

import (
	"slices"
	"strings"
	"testing"
)

// TestReading: apidiff's lines, the changelog's Unreleased section and
// release versions are read as the check needs them.
func TestReading(t *testing.T) {
	got := incompatible("Ignoring internal package x\n- ./pkg/breaker.Knob: removed\n+ ./pkg/breaker.New: added\n- ./functions/mcp.X: removed\n  - ./pkg/tasks.Options.TTL: changed from int to time.Duration\n")
	want := []change{{"pkg/breaker.Knob: removed", "pkg/breaker.Knob"}, {"pkg/tasks.Options.TTL: changed from int to time.Duration", "pkg/tasks.Options.TTL"}}
	if !slices.Equal(got, want) {
		t.Errorf("incompatible: %q", got)
	}
	log := "# Changelog\n\n## Unreleased\n\n### Incompatible\n\n- `pkg/breaker.Knob` is gone.\n\n## v0.1.0\n\n- `pkg/tasks.Options.TTL`\n"
	if s := unreleasedSection(log); !contains(s, "pkg/breaker.Knob") || contains(s, "pkg/tasks.Options.TTL") {
		t.Errorf("unreleased: %q", s)
	}
	for v, ok := range map[string]bool{"v0.1.0": true, "v1.12.3": true, "v1.2": false, "v01.2.3": false, "1.2.3": false, "v1.2.3-rc1": false} {
		if _, got := release(v); got != ok {
			t.Errorf("release(%q) = %v", v, got)
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
