package stateless

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Topics of the events a listen stream (subscriptions/listen) delivers.
// A resource's topic is [ResourceTopic] of its URI; an extension names
// its own (package tasks: one per task).
const (
	TopicToolsList     = "list:tools"
	TopicPromptsList   = "list:prompts"
	TopicResourcesList = "list:resources"
)

// ResourceTopic is the topic of the notifications/resources/updated
// events of the resource at uri.
func ResourceTopic(uri string) string { return "resource:" + uri }

// MaxEventParams bounds an event's params as it is stored: an event is a
// notice that something changed, which a client then reads, not the
// change itself.
const MaxEventParams = 8 << 10

// Event is one change a listen stream may deliver: a notification, the
// topic it is filed under, and who may receive it. Events are recorded
// in the server's [EventLog], so that a listen stream on any instance
// serving the endpoint delivers an event made on any other.
type Event struct {
	// Topic is what the event is about (TopicToolsList, ResourceTopic(uri),
	// an extension's).
	Topic string
	// ID identifies the change: the same change recorded twice (a retry
	// of a call that recorded it) has the same ID, and a listen stream
	// sends it once.
	ID string
	// At is when the change was recorded, by its writer's clock.
	At time.Time
	// Owner, when set, is the only principal whose listen streams receive
	// the event (a task's status goes to the task's owner alone).
	Owner string
	// Method is the notification's method; Params its params object
	// without _meta (nil for none), at most MaxEventParams bytes. A listen
	// stream adds the subscription's id to params._meta.
	Method string
	Params json.RawMessage
}

// EventLog carries the events of one endpoint between the instances that
// serve it. Package events keeps one in DynamoDB and one in memory; a
// server without one delivers the events made in its own process only.
type EventLog interface {
	// Append records events, each under its topic. An event whose ID is
	// already recorded may be recorded again: readers suppress the
	// duplicate.
	Append(ctx context.Context, events []Event) error
	// Read returns topic's events recorded at or after since (by their
	// At), oldest first, at most limit of them. It may be eventually
	// consistent: an event appended a moment ago may not be returned yet.
	Read(ctx context.Context, topic string, since time.Time, limit int) ([]Event, error)
	// RecordCatalog records each digest as the catalog its key names
	// (the server's "tools", "prompts", "resources"), at once, and
	// reports the names whose digest differs from the one recorded
	// before; a name recorded for the first time has not changed.
	RecordCatalog(ctx context.Context, digests map[string]string) (changed []string, err error)
}

// ErrEventTooLarge is the error of an event whose params exceed
// MaxEventParams.
var ErrEventTooLarge = errors.New("stateless: an event's params exceed MaxEventParams")

// CheckEvent reports whether e can be recorded: a topic, an ID, a method,
// params that are nil or a JSON object of at most MaxEventParams bytes.
// An EventLog checks what it is given with it.
func CheckEvent(e *Event) error {
	switch {
	case e.Topic == "":
		return errors.New("stateless: an event has no topic")
	case e.ID == "":
		return errors.New("stateless: an event has no ID")
	case e.Method == "":
		return errors.New("stateless: an event has no method")
	case len(e.Params) > MaxEventParams:
		return ErrEventTooLarge
	case e.Params != nil && !paramsObject(e.Params):
		return errors.New("stateless: an event's params are not a JSON object")
	}
	return nil
}

// NewEventID returns a random event ID, for a change that is made once.
func NewEventID() string {
	var b [16]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// DerivedEventID returns the ID of a change named by parts (a call's
// principal, tool and idempotency key, and the change's place among the
// call's), so that a retry of the same call records the same event.
func DerivedEventID(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d:%s", len(p), p)
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// Publish records events in the server's EventLog and hands them at once
// to the listen streams open in this process, whose topics they match:
// a tool's handler does it through [Call.NotifyResourceUpdated] and its
// kin, an extension (package tasks' status changes) and a deploy hook
// call it directly. An event without an ID gets a random one, without an
// At the time now. The error is the log's: the streams of this process
// have the events whatever it says.
func (s *Server) Publish(ctx context.Context, events ...Event) error {
	if len(events) == 0 {
		return nil
	}
	now := time.Now()
	for i := range events {
		e := &events[i]
		if e.ID == "" {
			e.ID = NewEventID()
		}
		if e.At.IsZero() {
			e.At = now
		}
		if err := CheckEvent(e); err != nil {
			return err
		}
	}
	s.hub.deliver(events)
	if s.opts.Events == nil {
		return nil
	}
	if err := s.opts.Events.Append(ctx, events); err != nil {
		return fmt.Errorf("stateless: recording %d events: %w", len(events), err)
	}
	return nil
}

// hub hands the events published in this process to the listen streams
// open in it, at once: a change reaches a listener on its own instance
// without waiting for the next read of the log.
type hub struct {
	mu        sync.Mutex
	listeners map[*listener]struct{}
}

// listener is one listen stream's inbox: the topics it reads, and the
// events published to them since it last took them.
type listener struct {
	topics map[string]bool
	owner  string
	wake   chan struct{} // one pending wake-up at most
	mu     sync.Mutex
	inbox  []Event
}

func (h *hub) add(l *listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.listeners == nil {
		h.listeners = map[*listener]struct{}{}
	}
	h.listeners[l] = struct{}{}
}

func (h *hub) remove(l *listener) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.listeners, l)
}

// maxInbox bounds the events a listener holds between two deliveries;
// past it the oldest are dropped (the log still has them).
const maxInbox = 256

func (h *hub) deliver(events []Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		took := false
		l.mu.Lock()
		for _, e := range events {
			if l.topics[e.Topic] && (e.Owner == "" || e.Owner == l.owner) {
				if len(l.inbox) == maxInbox {
					l.inbox = l.inbox[1:]
				}
				l.inbox = append(l.inbox, e)
				took = true
			}
		}
		l.mu.Unlock()
		if took {
			select {
			case l.wake <- struct{}{}:
			default:
			}
		}
	}
}

// take returns the listener's inbox and empties it.
func (l *listener) take() []Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	in := l.inbox
	l.inbox = nil
	return in
}

// paramsObject reports whether p is a JSON object without _meta, which a
// listen stream can add the subscription's id to.
func paramsObject(p json.RawMessage) bool {
	_, err := objectMembers(p)
	return err == nil
}

// Catalogs are the names AnnounceCatalog records the server's lists
// under, with the topic a change of each is published to.
var catalogs = [...]struct{ name, topic, method string }{
	{"tools", TopicToolsList, "notifications/tools/list_changed"},
	{"prompts", TopicPromptsList, "notifications/prompts/list_changed"},
	{"resources", TopicResourcesList, "notifications/resources/list_changed"},
}

// AnnounceCatalog records a digest of each of the server's lists — its
// tools, prompts and resources with their templates, as registered now —
// in the EventLog, and publishes a list-changed event for each whose
// digest differs from the one recorded before: an instance started with
// a new deploy's tools tells the listen streams open on instances of the
// old one. The event's ID is the digest's, so the many instances a deploy
// starts announce it as one event. A server without an EventLog records
// nothing. Call it once the registry is complete, at start (package
// endpoint does, in the function's initialization).
func (s *Server) AnnounceCatalog(ctx context.Context) error {
	log := s.opts.Events
	if log == nil {
		return nil
	}
	digests := s.reg.Load().catalogDigests()
	byName := make(map[string]string, len(catalogs))
	for i, c := range catalogs {
		byName[c.name] = digests[i]
	}
	names, err := log.RecordCatalog(ctx, byName)
	if err != nil {
		return fmt.Errorf("recording the catalogs: %w", err)
	}
	var changed []Event
	var errs []error
	for i, c := range catalogs {
		if slices.Contains(names, c.name) {
			changed = append(changed, Event{Topic: c.topic, Method: c.method, ID: DerivedEventID("catalog", c.name, digests[i])})
		}
	}
	if err := s.Publish(ctx, changed...); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// catalogDigests are the digests of the registry's lists, in the order
// of catalogs: each definition as registered, and for a typed tool whose
// schemas are inferred the Go types they are inferred from (the schemas
// themselves are made on first use, not at start).
func (r *registry) catalogDigests() [len(catalogs)]string {
	var out [len(catalogs)]string
	digest := func(parts func(add func(b []byte))) string {
		h := sha256.New()
		parts(func(b []byte) {
			fmt.Fprintf(h, "%d:", len(b))
			h.Write(b)
		})
		return base64.RawURLEncoding.EncodeToString(h.Sum(nil))
	}
	out[0] = digest(func(add func([]byte)) {
		for _, t := range r.tools {
			add(mustMarshal(&t.def))
			for _, typ := range [...]reflect.Type{t.inType, t.outType} {
				if typ != nil {
					add(typeShape(nil, typ, map[reflect.Type]bool{}))
				}
			}
		}
	})
	out[1] = digest(func(add func([]byte)) {
		for _, p := range r.prompts {
			add(mustMarshal(&p.def))
		}
	})
	out[2] = digest(func(add func([]byte)) {
		for _, res := range r.resources {
			add(mustMarshal(&res.def))
		}
		for _, t := range r.templates {
			add(mustMarshal(&t.def))
		}
	})
	return out
}

// typeShape appends what a schema inferred from t depends on: its kind,
// and a struct's fields with their names, tags and types, recursively
// (a type met again is named, not expanded).
func typeShape(b []byte, t reflect.Type, seen map[reflect.Type]bool) []byte {
	b = append(b, t.String()...)
	if seen[t] {
		return b
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array:
		b = append(b, '[')
		b = typeShape(b, t.Elem(), seen)
		b = append(b, ']')
	case reflect.Map:
		b = append(b, '[')
		b = typeShape(b, t.Key(), seen)
		b = append(b, ',')
		b = typeShape(b, t.Elem(), seen)
		b = append(b, ']')
	case reflect.Struct:
		b = append(b, '{')
		for i := range t.NumField() {
			f := t.Field(i)
			b = append(b, f.Name...)
			b = append(b, ' ')
			b = append(b, f.Tag...)
			b = append(b, ' ')
			b = typeShape(b, f.Type, seen)
			b = append(b, ';')
		}
		b = append(b, '}')
	}
	return b
}
