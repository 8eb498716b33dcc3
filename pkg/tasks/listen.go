package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// A listen stream (subscriptions/listen) delivers a task's status
// changes as notifications/tasks when its request names the task in
// notifications.taskIds, as the extension's listen filter has it: each
// notification carries the task as tasks/get answers it. A task is
// honoured only for its own caller, with the extension declared; another
// caller's task, an unknown one and an expired one are left out of the
// acknowledgement alike. Polling tasks/get stays the contract: a status
// whose detailed task is larger than stateless.MaxEventParams (a large
// result) is not published, and a client that listens learns of it by
// its next tasks/get.

// maxListenTasks bounds the tasks one listen stream follows.
const maxListenTasks = 16

// methodTaskStatus is the notification of a task's status change.
const methodTaskStatus = "notifications/tasks"

// taskTopic is the event topic of the task with id.
func taskTopic(id string) string { return "task:" + id }

// listenFilter is the extension's member of a listen request.
func (x *Extension) listenFilter() stateless.ListenFilter {
	return stateless.ListenFilter{Member: "taskIds", Honour: x.honourTasks}
}

var errTooManyTasks = fmt.Errorf("tasks: a listen stream follows at most %d tasks", maxListenTasks)

// honourTasks answers the taskIds a listen stream asks for: those of the
// caller's tasks that exist, and their topics.
func (x *Extension) honourTasks(ctx context.Context, c *stateless.Call, value json.RawMessage) (any, []string, error) {
	var ids []string
	if err := jsonv2.Unmarshal(value, &ids); err != nil {
		return nil, nil, mcperr.Wrap(mcperr.KindMalformedParams, fmt.Errorf("tasks: taskIds: %w", err))
	}
	if len(ids) > maxListenTasks {
		return nil, nil, mcperr.Wrap(mcperr.KindMalformedParams, errTooManyTasks)
	}
	if !c.Declares(stateless.ExtensionTasks) {
		return nil, nil, nil
	}
	honoured, topics := []string{}, []string(nil)
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] || !idShaped(id) {
			continue
		}
		seen[id] = true
		rec, err := x.opts.Store.Load(ctx, id)
		switch {
		case errors.Is(err, ErrNoTask):
			continue
		case err != nil:
			return nil, nil, fmt.Errorf("tasks: loading a task a listen stream follows: %w", err)
		case rec.Principal != c.Principal || !time.Now().Before(rec.ExpiresAt):
			continue
		}
		honoured = append(honoured, id)
		topics = append(topics, taskTopic(id))
	}
	if len(honoured) == 0 {
		return nil, nil, nil
	}
	return honoured, topics, nil
}

// announcing is the extension's Store: every transition that changes a
// task's status or message is published to the task's listeners, its
// owner's only, once the store took it.
type announcing struct {
	Store
	x *Extension
}

// statusChanged publishes rec's new status. A failure to publish leaves
// the task as it is: its listeners learn of it by polling.
func (a *announcing) statusChanged(ctx context.Context, rec *Record) {
	srv := a.x.srv
	if srv == nil {
		return
	}
	params := appendTask(nil, a.x.opts, rec, true)
	if len(params) > stateless.MaxEventParams {
		return
	}
	e := stateless.Event{Topic: taskTopic(rec.ID), Owner: rec.Principal, Method: methodTaskStatus, Params: params,
		ID: stateless.DerivedEventID("task", rec.ID, fmt.Sprint(rec.Version))}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	defer cancel()
	_ = srv.Publish(pctx, e)
}

// statusWatcher is a Store that is told of the transitions that changed
// a task's status or message (announcing).
type statusWatcher interface {
	statusChanged(ctx context.Context, rec *Record)
}
