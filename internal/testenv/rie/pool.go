package rie

import (
	"context"
	"errors"
	"io"
	"sync"
)

// Pool is a function's instances as Lambda scales it out: an invocation
// goes to an instance that is not busy with another, and waits for one
// when all are (where Lambda would start another instance, up to its
// concurrency). A listen stream holds its instance for as long as it is
// open, so a call made while it is held runs on another instance, which
// is what a test of delivery across instances needs.
type Pool struct {
	Instances []Streamer

	mu   sync.Mutex
	busy map[int]bool
	free chan struct{} // closed (and replaced) when an instance is let go
}

// InvokeStream implements Streamer: the invocation runs on the first idle
// instance, which stays busy until the body is closed.
func (p *Pool) InvokeStream(ctx context.Context, payload []byte) (io.ReadCloser, error) {
	if len(p.Instances) == 0 {
		return nil, errors.New("rie: a pool without instances")
	}
	i, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	out, err := p.Instances[i].InvokeStream(ctx, payload)
	if err != nil {
		p.release(i)
		return nil, err
	}
	return &pooledBody{ReadCloser: out, release: func() { p.release(i) }}, nil
}

func (p *Pool) acquire(ctx context.Context) (int, error) {
	for {
		p.mu.Lock()
		if p.busy == nil {
			p.busy, p.free = map[int]bool{}, make(chan struct{})
		}
		for i := range p.Instances {
			if !p.busy[i] {
				p.busy[i] = true
				p.mu.Unlock()
				return i, nil
			}
		}
		free := p.free
		p.mu.Unlock()
		select {
		case <-free:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

func (p *Pool) release(i int) {
	p.mu.Lock()
	delete(p.busy, i)
	close(p.free) // every waiter looks again
	p.free = make(chan struct{})
	p.mu.Unlock()
}

type pooledBody struct {
	io.ReadCloser
	release func()
	once    sync.Once
}

func (b *pooledBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.release)
	return err
}
