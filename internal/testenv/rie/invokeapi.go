package rie

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// InvokeAPI is a loopback stand-in for the Lambda Invoke API: the one
// call a function makes to run itself asynchronously (a worker of the
// tasks extension). Point the function's Lambda client at it with
// AWS_ENDPOINT_URL_LAMBDA. An Event invocation is answered 202 at once
// and run on one of Workers, each an emulator of the same function that
// serves one invocation at a time; a failed one is retried Retries times,
// a second apart, as Lambda retries asynchronous invocations. A
// RequestResponse invocation is run and answered. It is a test tool, not
// part of the deployed product.
type InvokeAPI struct {
	Workers []*Emulator
	// Invoke, if set, runs every invocation instead of Workers: a fleet's
	// front that gives it to an idle instance (a chaos run's pool, whose
	// instances it kills).
	Invoke  func(ctx context.Context, payload []byte) ([]byte, error)
	Retries int
	// RetryDelay is the wait before a failed Event invocation's first
	// retry, doubled before each next one (Lambda waits one minute, then
	// two); zero is a second before every retry.
	RetryDelay time.Duration
	// Duplicate delivers every Event invocation twice, as Lambda may: a
	// test of the worker's fence.
	Duplicate bool
	// DuplicateIf, if set, decides for each Event invocation whether it
	// is delivered twice (Duplicate is then not read).
	DuplicateIf func() bool
	// Restart, if set, replaces a worker that has exited (a test killed
	// it), as Lambda starts a new instance.
	Restart func() (*Emulator, error)

	once       sync.Once
	free       chan *Emulator
	wg         sync.WaitGroup
	accepted   atomic.Int64 // Event invocations accepted
	duplicated atomic.Int64 // of which delivered twice
	delivered  atomic.Int64 // Event invocations run, retries and duplicates included
	failed     atomic.Int64 // of which failed
}

func (a *InvokeAPI) init() {
	a.once.Do(func() {
		a.free = make(chan *Emulator, len(a.Workers))
		for _, w := range a.Workers {
			a.free <- w
		}
	})
}

// ServeHTTP implements http.Handler for POST
// /2015-03-31/functions/{name}/invocations.
func (a *InvokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.init()
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") || !strings.HasSuffix(r.URL.Path, "/invocations") {
		http.Error(w, `{"message":"not the Invoke API"}`, http.StatusNotFound)
		return
	}
	payload, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 256<<10))
	if err != nil {
		http.Error(w, `{"message":"payload too large"}`, http.StatusRequestEntityTooLarge)
		return
	}
	if r.Header.Get("X-Amz-Invocation-Type") == "Event" {
		n := 1
		if a.DuplicateIf != nil && a.DuplicateIf() || a.DuplicateIf == nil && a.Duplicate {
			n = 2
			a.duplicated.Add(1)
		}
		a.accepted.Add(1)
		for range n {
			a.wg.Add(1)
			go a.deliver(payload)
		}
		w.WriteHeader(http.StatusAccepted)
		return
	}
	out, err := a.run(r.Context(), payload)
	if err != nil {
		http.Error(w, `{"message":"invocation failed"}`, http.StatusBadGateway)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(out)
}

// deliver runs one Event invocation, retrying a failed one.
func (a *InvokeAPI) deliver(payload []byte) {
	defer a.wg.Done()
	wait := a.RetryDelay
	for attempt := 0; attempt <= a.Retries; attempt++ {
		switch {
		case attempt > 0 && wait == 0:
			time.Sleep(time.Second)
		case attempt > 0:
			time.Sleep(wait)
			wait *= 2
		}
		a.delivered.Add(1)
		out, err := a.run(context.Background(), payload)
		if err == nil && !functionError(out) {
			return
		}
		a.failed.Add(1)
	}
}

// run invokes the function on a free worker.
func (a *InvokeAPI) run(ctx context.Context, payload []byte) ([]byte, error) {
	if a.Invoke != nil {
		ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
		defer cancel()
		return a.Invoke(ctx, payload)
	}
	e := <-a.free
	select {
	case <-e.Exited():
		if a.Restart != nil {
			if n, err := a.Restart(); err == nil {
				e = n
			}
		}
	default:
	}
	defer func() { a.free <- e }()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	defer cancel()
	return e.Invoke(ctx, payload)
}

// functionError reports whether an invocation's response is the error
// payload of a function that returned an error.
func functionError(out []byte) bool {
	return bytes.HasPrefix(bytes.TrimSpace(out), []byte(`{"errorMessage"`)) || bytes.Contains(out, []byte(`"errorType"`))
}

// Wait waits until every Event invocation accepted so far has run.
func (a *InvokeAPI) Wait() { a.wg.Wait() }

// Delivered returns how many Event invocations ran (retries and
// duplicates included) and how many of them failed.
func (a *InvokeAPI) Delivered() (runs, failed int64) { return a.delivered.Load(), a.failed.Load() }

// Accepted returns how many Event invocations were accepted and how many
// of them were delivered twice.
func (a *InvokeAPI) Accepted() (events, duplicated int64) {
	return a.accepted.Load(), a.duplicated.Load()
}
