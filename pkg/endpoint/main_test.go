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

// TestStartNamesTheFunction: the name given to Main is the function's
// outside Lambda (its log lines' and metrics' Function); on Lambda the
// function's own name is.
func TestStartNamesTheFunction(t *testing.T) {
	for _, c := range []struct{ lambdaName, want string }{{"", "counter"}, {"stack-Counter-1A2B", "stack-Counter-1A2B"}} {
		var got string
		stop := errors.New("composed")
		err := start(context.Background(), "counter", func(k string) string {
			if k == envLambdaFunctionName {
				return c.lambdaName
			}
			return ""
		}, io.Discard, func(cfg *Config, o Options) (*Endpoint, error) { got = cfg.FunctionName; return nil, stop })
		if !errors.Is(err, stop) || got != c.want {
			t.Errorf("AWS_LAMBDA_FUNCTION_NAME=%q: FunctionName %q, want %q (%v)", c.lambdaName, got, c.want, err)
		}
	}
	var got string
	Start(context.Background(), func(string) string { return "" }, io.Discard, func(cfg *Config, o Options) (*Endpoint, error) {
		got = cfg.FunctionName
		return nil, errors.New("composed")
	})
	if got != "mcp" {
		t.Errorf("Start without a name: FunctionName %q", got)
	}
}
