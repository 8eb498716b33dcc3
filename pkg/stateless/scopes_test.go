package stateless_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

func TestMissingScopes(t *testing.T) {
	hierarchy := map[string][]string{
		"admin":       {"notes", "users"},
		"notes":       {"notes:read", "notes:write"},
		"notes:write": {"notes:append"},
		// A cycle: each implies the other.
		"a": {"b"},
		"b": {"a", "c"},
	}
	for _, c := range []struct {
		name              string
		granted, required []string
		implies           map[string][]string
		missing           []string
	}{
		{"nothing required", []string{"x"}, nil, hierarchy, nil},
		{"nothing granted", nil, []string{"notes:read"}, hierarchy, []string{"notes:read"}},
		{"granted exactly", []string{"notes:read"}, []string{"notes:read"}, nil, nil},
		{"implied", []string{"notes"}, []string{"notes:read", "notes:write"}, hierarchy, nil},
		{"implied transitively", []string{"admin"}, []string{"notes:append", "users"}, hierarchy, nil},
		{"narrower does not imply broader", []string{"notes:read", "notes:write"}, []string{"notes"}, hierarchy, []string{"notes"}},
		{"every missing scope, in order", []string{"notes:read"}, []string{"users", "notes:read", "notes:write", "users"}, hierarchy, []string{"users", "notes:write"}},
		{"no hierarchy", []string{"notes"}, []string{"notes:read"}, nil, []string{"notes:read"}},
		{"cycle", []string{"a"}, []string{"a", "b", "c"}, hierarchy, nil},
		{"cycle, missing", []string{"b"}, []string{"d"}, hierarchy, []string{"d"}},
		{"self-implication", []string{"s"}, []string{"s", "t"}, map[string][]string{"s": {"s"}}, []string{"t"}},
		{"case matters", []string{"Notes"}, []string{"notes"}, hierarchy, []string{"notes"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := stateless.MissingScopes(c.granted, c.required, c.implies); !slices.Equal(got, c.missing) {
				t.Errorf("missing %q, want %q", got, c.missing)
			}
		})
	}
}

func ExampleMissingScopes() {
	implies := map[string][]string{"notes": {"notes:read", "notes:write"}}
	fmt.Println(stateless.MissingScopes([]string{"notes"}, []string{"notes:write"}, implies))
	fmt.Println(stateless.MissingScopes([]string{"notes:read"}, []string{"notes:read", "notes:write", "admin"}, implies))
	// Output:
	// []
	// [notes:write admin]
}
