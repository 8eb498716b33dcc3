package tasks_test

import (
	"context"
	"fmt"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/mcptest"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
	"github.com/serverless-mcp/mcp-lambda/pkg/tasks"
)

type reportIn struct {
	Topic string `json:"topic"`
}

// Example: a tool that runs longer than a gateway waits is a task tool.
// Its call is answered at once with a task, which a worker runs (here in
// this process; on Lambda an asynchronous invocation of the function,
// Options.Dispatch) and the client polls with tasks/get until it ends.
func Example() {
	srv := stateless.NewServer(stateless.Implementation{Name: "reports", Version: "1"}, nil)
	tasks.New(tasks.Options{Store: tasks.NewMemory(), PollInterval: 10 * time.Millisecond}).Install(srv)
	stateless.AddTool(srv, &stateless.Tool{Name: "report", TaskSupport: stateless.TaskSupportRequired},
		func(ctx context.Context, req *stateless.ToolRequest, in reportIn) (*stateless.CallToolResult, map[string]string, error) {
			time.Sleep(50 * time.Millisecond) // the long part
			return nil, map[string]string{"report": "all quiet on " + in.Topic}, nil
		})

	c := mcptest.New(nil, srv)
	// A client declares the tasks extension to call a task tool.
	c.Capabilities = map[string]any{"extensions": map[string]any{stateless.ExtensionTasks: map[string]any{}}}
	created := c.CallTool("report", reportIn{Topic: "the western front"})
	fmt.Println(created.Result["resultType"], created.Result["status"])
	id := created.Result["taskId"].(string)
	for {
		got := c.Call("tasks/get", map[string]any{"taskId": id})
		if got.Result["status"] != "working" {
			res := got.Result["result"].(map[string]any)
			fmt.Println(got.Result["status"], res["structuredContent"])
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// task working
	// completed map[report:all quiet on the western front]
}
