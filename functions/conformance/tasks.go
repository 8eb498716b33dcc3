package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The fixtures of the conformance suite's tasks-* scenarios (the tasks
// extension): a synchronous greeting, task tools that sleep, fail as a
// tool, fail as a protocol, ask for input during the task, and gather
// input before it.

type greetArgs struct {
	Name string `json:"name"`
}

type computeArgs struct {
	Seconds float64 `json:"seconds" jsonschema:"how long to compute, in seconds (up to 900)"`
	Label   string  `json:"label,omitempty"`
}

type deleteArgs struct {
	Filename string `json:"filename"`
}

func taskFixtures(srv *stateless.Server) {
	stateless.AddTool(srv, &stateless.Tool{Name: "greet", Description: "Greets by name, at once."},
		func(ctx context.Context, req *stateless.ToolRequest, in greetArgs) (*stateless.CallToolResult, any, error) {
			return text("Hello, " + in.Name + "!"), nil, nil
		})
	stateless.AddTool(srv, &stateless.Tool{Name: "slow_compute", Description: "Computes for the given seconds; a task when the client takes tasks.",
		TaskSupport: stateless.TaskSupportOptional},
		func(ctx context.Context, req *stateless.ToolRequest, in computeArgs) (*stateless.CallToolResult, any, error) {
			d := time.Duration(min(max(in.Seconds, 0), 900) * float64(time.Second))
			if err := sleep(ctx, d); err != nil {
				return nil, nil, err
			}
			return text(fmt.Sprintf("Computed %q in %v.", in.Label, d)), nil, nil
		})
	tool(srv, "failing_job", "Fails as a tool after a second; only runs as a task.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		if err := sleep(ctx, time.Second); err != nil {
			return nil, err
		}
		return nil, errors.New("the job failed")
	}, stateless.TaskSupportRequired)
	tool(srv, "protocol_error_job", "Fails as a protocol error (it panics); a task when the client takes tasks.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		panic("protocol_error_job always panics")
	}, stateless.TaskSupportOptional)
	stateless.AddTool(srv, &stateless.Tool{Name: "confirm_delete", Description: "Deletes a file once the user confirms.", TaskSupport: stateless.TaskSupportOptional},
		func(ctx context.Context, req *stateless.ToolRequest, in deleteArgs) (*stateless.CallToolResult, any, error) {
			r, ok := req.ElicitResult("confirm")
			if !ok {
				return nil, nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"confirm": confirmForm()}}
			}
			if !r.Accepted() {
				return text("Kept " + in.Filename + "."), nil, nil
			}
			return text("Deleted " + in.Filename + "."), nil, nil
		})
	tool(srv, "multi_input", "Asks two things at once.", func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
		a, okA := req.ElicitResult("first")
		b, okB := req.ElicitResult("second")
		if !okA || !okB {
			return nil, &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"first": nameForm(), "second": confirmForm()}}
		}
		return text(fmt.Sprintf("Got %v and %v.", a.Content["name"], b.Content["name"])), nil
	}, stateless.TaskSupportOptional)
	srv.AddTool(&stateless.Tool{Name: "test_tool_with_task", Description: "Asks for a name in the request, then greets in a task.",
		InputSchema: map[string]any{"type": "object"}, TaskSupport: stateless.TaskSupportRequired,
		BeforeTask: func(ctx context.Context, req *stateless.ToolRequest) error {
			if _, ok := req.ElicitResult("user_name"); ok {
				return nil
			}
			return &stateless.InputRequired{Requests: map[string]stateless.InputRequest{"user_name": nameForm()}}
		}},
		func(ctx context.Context, req *stateless.ToolRequest) (*stateless.CallToolResult, error) {
			r, _ := req.ElicitResult("user_name")
			if r == nil || !r.Accepted() {
				return text("Hello, whoever you are!"), nil
			}
			return text(fmt.Sprintf("Hello, %v!", r.Content["name"])), nil
		})
}

type ticksArgs struct {
	Count      int `json:"count" jsonschema:"how many progress reports, 1 to 1000"`
	IntervalMs int `json:"intervalMs" jsonschema:"milliseconds between reports, 0 to 60000"`
}

// tickFixtures registers a tool that reports progress at a steady pace:
// the streaming tests measure when each report reaches the client.
func tickFixtures(srv *stateless.Server) {
	stateless.AddTool(srv, &stateless.Tool{Name: "ticks", Description: "Reports progress count times, intervalMs apart, then answers.", MaxDuration: 15 * time.Minute},
		func(ctx context.Context, req *stateless.ToolRequest, in ticksArgs) (*stateless.CallToolResult, any, error) {
			if in.Count < 1 || in.Count > 1000 || in.IntervalMs < 0 || in.IntervalMs > 60000 {
				return nil, nil, errors.New("count must be 1 to 1000 and intervalMs 0 to 60000")
			}
			for i := 1; i <= in.Count; i++ {
				if err := sleep(ctx, time.Duration(in.IntervalMs)*time.Millisecond); err != nil {
					return nil, nil, err
				}
				req.Progress(float64(i), float64(in.Count), "")
			}
			return text(fmt.Sprintf("%d ticks", in.Count)), nil, nil
		})
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
