package endpoint

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestStartRefusesBadConfig: a configuration that does not load is
// refused before anything is composed, naming the variable.
func TestStartRefusesBadConfig(t *testing.T) {
	composed := false
	err := Start(context.Background(), func(k string) string {
		if k == EnvStateTTL {
			return "soon"
		}
		return ""
	}, io.Discard, func(*Config, Options) (*Endpoint, error) { composed = true; return nil, nil })
	if err == nil || !strings.Contains(err.Error(), EnvStateTTL) || composed {
		t.Errorf("err = %v, composed %v", err, composed)
	}
}

// TestStartReturnsComposeError: a composition that fails is returned as
// it is, and nothing runs.
func TestStartReturnsComposeError(t *testing.T) {
	bad := errors.New("no tools")
	err := Start(context.Background(), func(string) string { return "" }, io.Discard, func(cfg *Config, o Options) (*Endpoint, error) {
		if o.Stdout != io.Discard {
			t.Error("Options.Stdout is not the writer Start was given")
		}
		return nil, bad
	})
	if !errors.Is(err, bad) {
		t.Errorf("err = %v, want %v", err, bad)
	}
}
