package stateless

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// ListenOptions bound the listen streams (subscriptions/listen) a server
// holds open. A listen stream is served only where the answer can be
// streamed ([Server.HandleStream]: local mode, a REST API's streaming
// integration, a function URL in response-stream mode); through
// [Server.Handle] (a buffered door) the method is unknown and
// server/discover advertises nothing only a listen stream delivers.
type ListenOptions struct {
	// Off serves no listen streams through any door.
	Off bool
	// MaxDuration is how long a listen stream stays open: it then ends
	// gracefully with its result, and the client listens again. It ends
	// sooner, by the server's DeadlineMargin, before the request's
	// deadline (a Lambda invocation's). Default 5 minutes.
	MaxDuration time.Duration
	// Poll is how often an open stream reads its topics from the
	// server's EventLog, for the events other instances record; events
	// published in this process arrive at once. Default 1 second.
	Poll time.Duration
	// LookBack is how far before its last read each read of the log
	// reaches, so that an event whose writer's clock lags, or that an
	// eventually consistent read did not return yet, is still delivered
	// (once: a stream suppresses the events it already sent). Default 5
	// seconds.
	LookBack time.Duration
	// MaxResources bounds the resource URIs one stream subscribes to
	// (resourceSubscriptions): a request naming more is refused -32602.
	// Default 16.
	MaxResources int
}

func (o *ListenOptions) defaults() {
	if o.MaxDuration <= 0 {
		o.MaxDuration = 5 * time.Minute
	}
	if o.Poll <= 0 {
		o.Poll = time.Second
	}
	if o.LookBack <= 0 {
		o.LookBack = 5 * time.Second
	}
	if o.MaxResources <= 0 {
		o.MaxResources = 16
	}
}

// MethodListen is the method of a listen stream's request.
const MethodListen = "subscriptions/listen"

// metaSubscriptionID is the _meta member every message of a listen stream
// carries: the listen request's id.
const metaSubscriptionID = "io.modelcontextprotocol/subscriptionId"

// ListenFilter is an extension's member of a listen request's
// notifications (package tasks': "taskIds"), which an interceptor
// provides ([Provides.ListenFilters]): the server hands the member's
// value to Honour, which says what of it is honoured (the value
// acknowledged; nil honours nothing) and the topics of the events that
// deliver it. What the caller may not see it leaves out, as if absent.
type ListenFilter struct {
	Member string
	Honour func(ctx context.Context, c *Call, value json.RawMessage) (ack any, topics []string, err error)
}

type listenParams struct {
	baseParams
	Notifications span `json:"notifications"`
}

// listenNotifications are what a listen request asks for; others holds
// every member, for the extensions' filters to find theirs.
type listenNotifications struct {
	ToolsListChanged      bool     `json:"toolsListChanged"`
	PromptsListChanged    bool     `json:"promptsListChanged"`
	ResourcesListChanged  bool     `json:"resourcesListChanged"`
	ResourceSubscriptions []string `json:"resourceSubscriptions"`
	others                map[string]jsontext.Value
}

// parseNotifications reads a listen request's notifications object.
func parseNotifications(raw span) (*listenNotifications, error) {
	if !isObject(raw) {
		return nil, errors.New("notifications is not an object")
	}
	n := &listenNotifications{}
	if err := jsonv2.Unmarshal(raw, n); err != nil {
		return nil, err
	}
	if err := jsonv2.Unmarshal(raw, &n.others); err != nil {
		return nil, err
	}
	return n, nil
}

// listens reports whether the request can be answered with a listen
// stream: the server serves them, and the door streams.
func (x *exchange) listens() bool { return x.streams && !x.s.opts.Listen.Off }

// serveListen answers subscriptions/listen: the acknowledgement of what
// is honoured, then each event of its topics as it is published here or
// read from the log, then, at its end, the result.
func (x *exchange) serveListen(ctx context.Context, p *listenParams) Answer {
	n, err := parseNotifications(p.Notifications)
	if err != nil {
		return refused(mcperr.Wrap(mcperr.KindMalformedParams, err))
	}
	if x.call.live == nil {
		// The door streams, but the client does not accept a stream.
		return refused(mcperr.New(mcperr.KindNotAcceptable))
	}
	lo := &x.s.opts.Listen
	if len(n.ResourceSubscriptions) > lo.MaxResources {
		return refused(mcperr.Wrap(mcperr.KindMalformedParams, fmt.Errorf("%d resource subscriptions, more than %d", len(n.ResourceSubscriptions), lo.MaxResources)))
	}
	ack, topics, a := x.honour(ctx, n)
	if a != nil {
		return *a
	}
	id := json.RawMessage(x.d.id)
	l := &listener{topics: map[string]bool{}, owner: x.call.Principal, wake: make(chan struct{}, 1)}
	for _, t := range topics {
		l.topics[t] = true
	}
	x.s.hub.add(l)
	defer x.s.hub.remove(l)
	start := time.Now()
	msg, err := listenMessage("notifications/subscriptions/acknowledged", mustMarshal(map[string]any{"notifications": ack}), id)
	if err != nil {
		return refusedBy(mcperr.New(mcperr.KindInternal), err, false)
	}
	live := x.call.live
	live.event(msg)

	end := x.listenEnd(ctx)
	endTimer := time.NewTimer(time.Until(end))
	defer endTimer.Stop()
	var tick <-chan time.Time
	if x.s.opts.Events != nil && len(topics) > 0 {
		t := time.NewTicker(lo.Poll)
		defer t.Stop()
		tick = t.C
	}
	// The stream reaches LookBack before its acknowledgement, so that a
	// client that listens again (its stream ended, or was cut) misses
	// nothing recorded between its streams: at least once across
	// streams, once within one. The first read is at once.
	st := listenState{x: x, id: id, topics: topics, sent: map[string]time.Time{}, readFrom: start, since: start.Add(-lo.LookBack)}
	if tick != nil {
		st.poll(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			return cancelled(ctx, context.Cause(ctx))
		case <-endTimer.C:
			if tick != nil && !st.last(ctx, x.listenLast(ctx, end)) {
				return cancelled(ctx, context.Cause(ctx))
			}
			return x.result(struct{}{}, &resultFields{meta: Meta{metaSubscriptionID: id}})
		case <-l.wake:
			st.send(l.take())
		case <-tick:
			st.poll(ctx)
		}
		if live.broken() {
			return cancelled(ctx, errors.New("the listen stream's client went away"))
		}
	}
}

// listenEnd is when a listen stream opened now ends: MaxDuration from
// now, or the DeadlineMargin before its context's deadline (a Lambda
// invocation's), whichever comes first.
func (x *exchange) listenEnd(ctx context.Context) time.Time {
	end := time.Now().Add(x.s.opts.Listen.MaxDuration)
	if d, ok := ctx.Deadline(); ok && d.Add(-x.s.opts.DeadlineMargin).Before(end) {
		end = d.Add(-x.s.opts.DeadlineMargin)
	}
	return end
}

// listenLast is how long a listen stream whose reads of the log fail may
// stay open past its end, end, trying again: until the DeadlineMargin
// before its context's deadline, and at most another MaxDuration.
func (x *exchange) listenLast(ctx context.Context, end time.Time) time.Time {
	last := end.Add(x.s.opts.Listen.MaxDuration)
	if d, ok := ctx.Deadline(); ok && d.Add(-x.s.opts.DeadlineMargin).Before(last) {
		last = d.Add(-x.s.opts.DeadlineMargin)
	}
	return last
}

// honour works out what of n the server honours: the acknowledged subset
// and the topics it listens to. A list is honoured when the server has
// the feature; a resource when the caller could read it now; an
// extension's member as its filter says.
func (x *exchange) honour(ctx context.Context, n *listenNotifications) (map[string]any, []string, *Answer) {
	ack := map[string]any{}
	var topics []string
	for _, f := range [...]struct {
		asked   bool
		feature string
		member  string
		topic   string
	}{
		{n.ToolsListChanged, "tools", "toolsListChanged", TopicToolsList},
		{n.PromptsListChanged, "prompts", "promptsListChanged", TopicPromptsList},
		{n.ResourcesListChanged, "resources", "resourcesListChanged", TopicResourcesList},
	} {
		if f.asked && x.reg.has(f.feature) {
			ack[f.member] = true
			topics = append(topics, f.topic)
		}
	}
	var uris []string
	for _, uri := range n.ResourceSubscriptions {
		if !slices.Contains(uris, uri) && x.readable(ctx, uri) {
			uris = append(uris, uri)
			topics = append(topics, ResourceTopic(uri))
		}
	}
	if len(uris) > 0 {
		ack["resourceSubscriptions"] = uris
	}
	for _, f := range x.s.listenFilters {
		v, ok := n.others[f.Member]
		if !ok {
			continue
		}
		a, ts, err := f.Honour(ctx, &x.call, json.RawMessage(v))
		if err != nil {
			var me *mcperr.Error
			if errors.As(err, &me) {
				r := refused(me)
				return nil, nil, &r
			}
			r := refusedBy(mcperr.NewRetryable(mcperr.KindDependencyFailure, time.Second, err), err, false)
			return nil, nil, &r
		}
		if a != nil {
			ack[f.Member] = a
			topics = append(topics, ts...)
		}
	}
	return ack, topics, nil
}

// readable reports whether a resources/read of uri by the caller would
// answer contents now: a resource that is absent, hidden from the
// caller, or whose handler refuses it (a note of someone else's) is not
// subscribable, and is left out of the acknowledgement as an absent one
// is.
func (x *exchange) readable(ctx context.Context, uri string) bool {
	h, vars := x.findResource(ctx, uri)
	if h == nil {
		return false
	}
	rctx, cancel := context.WithDeadline(ctx, x.deadline)
	defer cancel()
	res, err := safeRead(rctx, h, &ResourceRequest{Call: &Call{Principal: x.call.Principal, Address: x.call.Address,
		ProtocolVersion: x.call.ProtocolVersion, capsRaw: x.call.capsRaw}, URI: uri, Vars: vars})
	return err == nil && res != nil && len(res.Contents) > 0
}

// safeRead runs a resource's handler, a panic counted as a refusal.
func safeRead(ctx context.Context, h ResourceHandler, r *ResourceRequest) (res *ReadResourceResult, err error) {
	defer func() {
		if p := recover(); p != nil {
			res, err = nil, fmt.Errorf("stateless: a resource handler panicked")
		}
	}()
	return h(ctx, r)
}

// listenState is what an open listen stream remembers: the events it
// sent (by ID, with their At, so that a read that returns them again
// sends nothing), and where its next read of the log starts.
type listenState struct {
	x      *exchange
	id     json.RawMessage
	topics []string
	sent   map[string]time.Time
	// since is LookBack before the stream's start: no earlier event is
	// sent; readFrom the time of the last read of every topic that
	// succeeded.
	since, readFrom time.Time
}

// maxReadPages bounds the pages of one topic one poll reads.
const (
	readPage     = 100
	maxReadPages = 10
)

// last reads the log once more as the stream ends, so that what was
// recorded since its last read goes out with it rather than waiting for
// the client's next stream, which a deleted resource is no longer part
// of. While reads fail it tries again each Poll, until one succeeds or
// until is reached: a fault of the log holds the stream open rather than
// ending it with events unread. It reports false if ctx ended first.
func (st *listenState) last(ctx context.Context, until time.Time) bool {
	for !st.poll(ctx) && time.Now().Add(st.x.s.opts.Listen.Poll).Before(until) {
		t := time.NewTimer(st.x.s.opts.Listen.Poll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
		if st.x.call.live.broken() {
			return false
		}
	}
	return ctx.Err() == nil
}

// poll reads the stream's topics from the log, from LookBack before the
// last read that succeeded (never before the stream's start), and sends
// what it has not sent. A read that fails is not moved past: the next
// poll reaches back to the last one that succeeded, so that a fault of
// the log delays events rather than losing them.
func (st *listenState) poll(ctx context.Context) bool {
	x := st.x
	lo := &x.s.opts.Listen
	began := time.Now()
	from := st.readFrom.Add(-lo.LookBack)
	if from.Before(st.since) {
		from = st.since
	}
	rctx, cancel := context.WithTimeout(ctx, lo.Poll+time.Second)
	defer cancel()
	results := make([][]Event, len(st.topics))
	errs := make([]error, len(st.topics))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8)
	for i, topic := range st.topics {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i], errs[i] = readTopic(rctx, x.s.opts.Events, topic, from)
		}()
	}
	wg.Wait()
	var all []Event
	failed := false
	for i := range results {
		all = append(all, results[i]...)
		failed = failed || errs[i] != nil
	}
	slices.SortStableFunc(all, func(a, b Event) int { return a.At.Compare(b.At) })
	st.send(all)
	if failed {
		x.s.log.LogAttrs(ctx, slog.LevelWarn, "listen stream: reading the event log failed; the next read reaches back further",
			slogString("error", errors.Join(errs...).Error()))
		return false
	}
	st.readFrom = began
	// What the next read cannot return again need not be remembered.
	horizon := began.Add(-lo.LookBack - time.Second)
	for id, at := range st.sent {
		if at.Before(horizon) {
			delete(st.sent, id)
		}
	}
	return true
}

// readTopic reads topic's events from since, page after page while pages
// come back full.
func readTopic(ctx context.Context, log EventLog, topic string, since time.Time) ([]Event, error) {
	var all []Event
	for range maxReadPages {
		evs, err := log.Read(ctx, topic, since, readPage)
		if err != nil {
			return all, err
		}
		all = append(all, evs...)
		if len(evs) < readPage {
			break
		}
		since = evs[len(evs)-1].At
	}
	return all, nil
}

// send writes each event the stream may have and has not sent.
func (st *listenState) send(events []Event) {
	x := st.x
	for i := range events {
		e := &events[i]
		if _, dup := st.sent[e.ID]; dup || e.At.Before(st.since) || !slices.Contains(st.topics, e.Topic) ||
			e.Owner != "" && e.Owner != x.call.Principal {
			continue
		}
		msg, err := listenMessage(e.Method, e.Params, st.id)
		if err != nil {
			continue // CheckEvent let it be recorded: a log that returns another
		}
		st.sent[e.ID] = e.At
		x.call.live.event(msg)
	}
}

// listenMessage is the notification method with params (an object
// without _meta, or nil), carrying the subscription's id in its _meta.
func listenMessage(method string, params json.RawMessage, id json.RawMessage) ([]byte, error) {
	b := make([]byte, 0, 96+len(method)+len(params)+len(id))
	b = append(b, `{"jsonrpc":"2.0","method":`...)
	b = appendString(b, method)
	b = append(b, `,"params":{"_meta":{"`+metaSubscriptionID+`":`...)
	b = append(b, id...)
	b = append(b, '}')
	if len(params) > 0 {
		inner, err := objectMembers(params)
		if err != nil {
			return nil, err
		}
		if len(inner) > 0 {
			b = append(b, ',')
			b = append(b, inner...)
		}
	}
	return append(b, "}}"...), nil
}

// objectMembers is the members of the JSON object obj, without its
// braces, compacted; an error if obj is not an object or has _meta.
func objectMembers(obj json.RawMessage) ([]byte, error) {
	var members struct {
		Meta jsontext.Value `json:"_meta"`
	}
	if err := jsonv2.Unmarshal(obj, &members); err != nil {
		return nil, fmt.Errorf("stateless: an event's params: %w", err)
	}
	if members.Meta != nil {
		return nil, errors.New("stateless: an event's params carry _meta")
	}
	v := jsontext.Value(slices.Clone(obj))
	if err := v.Compact(); err != nil {
		return nil, err
	}
	return v[1 : len(v)-1], nil
}
