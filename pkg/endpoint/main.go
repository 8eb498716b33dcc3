package endpoint

import (
	"context"
	"fmt"
	"io"
	"os"
)

// Compose makes a function's endpoint from its configuration: New, then
// the function's tools on the endpoint's server. It is the one piece of
// a function that is its own; [Main] and [Start] do the rest.
type Compose func(cfg *Config, o Options) (*Endpoint, error)

// Main is a function's whole main: it composes the endpoint from the
// process's environment and runs it in the mode the environment calls
// for (Lambda, or a local server on MCP_ADDR) until the runtime or a
// signal stops it. name is the function's: outside Lambda it is the
// Function its log lines and metrics are written under (on Lambda the
// function's own name is, AWS_LAMBDA_FUNCTION_NAME). A configuration or
// composition error is printed to stderr after name, and the process
// exits 1.
//
//	func main() { endpoint.Main("weather", newEndpoint) }
func Main(name string, compose Compose) {
	if err := start(context.Background(), name, os.Getenv, os.Stdout, compose); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
		os.Exit(1)
	}
}

// Start is Main's body with its inputs given: the configuration loaded
// from getenv, the endpoint composed with Options.Stdout set to stdout,
// run until ctx ends. Tests call it to run a function as it runs.
func Start(ctx context.Context, getenv func(string) string, stdout io.Writer, compose Compose) error {
	return start(ctx, "", getenv, stdout, compose)
}

// start is Start for the function called name ("" for none): its
// FunctionName when Lambda names none.
func start(ctx context.Context, name string, getenv func(string) string, stdout io.Writer, compose Compose) error {
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	if name != "" && getenv(envLambdaFunctionName) == "" {
		cfg.FunctionName = name
	}
	ep, err := compose(cfg, Options{Stdout: stdout})
	if err != nil {
		return err
	}
	return ep.Run(ctx)
}
