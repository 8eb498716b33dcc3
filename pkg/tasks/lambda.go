package tasks

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/lambda/types"
	jsonv2 "github.com/go-json-experiment/json"

	"github.com/serverless-mcp/mcp-lambda/internal/jsonscan"
)

// LambdaAPI is the part of the Lambda client the dispatcher uses.
type LambdaAPI interface {
	Invoke(ctx context.Context, in *lambda.InvokeInput, opts ...func(*lambda.Options)) (*lambda.InvokeOutput, error)
}

// Lambda hands each task to an asynchronous invocation of a Lambda
// function (the function itself: template.yaml grants it
// lambda:InvokeFunction on its own ARN), whose event carries the task's
// id and nothing else. Lambda queues the event and retries a failed
// invocation; the task's lease makes a second delivery do nothing (see
// Extension.Run). Use Dispatch as Options.Dispatch.
type Lambda struct {
	// Client returns the Lambda client, made on first use: a request that
	// creates no task pays nothing for it.
	Client func(ctx context.Context) (LambdaAPI, error)
	// Function is the function's name or ARN.
	Function string
}

// Dispatch invokes the function with the task event of id, in Event
// mode: it returns once Lambda has queued the event.
func (l *Lambda) Dispatch(ctx context.Context, id string) error {
	c, err := l.Client(ctx)
	if err != nil {
		return fmt.Errorf("tasks: the Lambda client: %w", err)
	}
	out, err := c.Invoke(ctx, &lambda.InvokeInput{
		FunctionName:   aws.String(l.Function),
		InvocationType: types.InvocationTypeEvent,
		Payload:        AppendEvent(nil, id),
	})
	if err != nil {
		return fmt.Errorf("tasks: invoking the worker: %w", err)
	}
	if out.StatusCode != 202 {
		return fmt.Errorf("tasks: invoking the worker: status %d, want 202", out.StatusCode)
	}
	return nil
}

// taskEvent is the payload of a worker invocation.
type taskEvent struct {
	Task string `json:"mcpTask"`
}

// AppendEvent appends the worker invocation's payload for task id.
func AppendEvent(dst []byte, id string) []byte {
	dst = append(dst, `{"mcpTask":`...)
	dst = jsonscan.AppendString(dst, id)
	return append(dst, '}')
}

// errNotTask is returned by DecodeEvent for a payload that is not a task
// event.
var errNotTask = errors.New("tasks: not a task event")

// DecodeEvent returns the task id of a worker invocation's payload. A
// payload with any other member, as every gateway event has, is not one.
func DecodeEvent(payload []byte) (string, error) {
	var ev taskEvent
	if err := jsonv2.Unmarshal(payload, &ev, jsonv2.RejectUnknownMembers(true)); err != nil || ev.Task == "" {
		return "", errNotTask
	}
	return ev.Task, nil
}

// HandleEvent answers an invocation of the function whose payload is a
// worker's event (AppendEvent's): it runs the task with Run, and reports
// handled. Any other payload is not the extension's (handled false, and
// nothing done): a gateway's event has other members. It is how the
// worker's events reach the extension without the door knowing it
// (package runner's Options.Events takes it): reply is the invocation's
// answer, and err Run's, which fails the invocation, so that Lambda
// retries it.
func (x *Extension) HandleEvent(ctx context.Context, payload []byte) (handled bool, reply []byte, err error) {
	if !bytes.Contains(payload, []byte(`"mcpTask"`)) {
		return false, nil, nil // the cheap test every gateway event takes
	}
	id, err := DecodeEvent(payload)
	if err != nil {
		return false, nil, nil
	}
	if err := x.Run(ctx, id); err != nil {
		return true, nil, err
	}
	return true, []byte("{}"), nil
}
