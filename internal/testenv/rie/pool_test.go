package rie

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"
)

// named is an instance that answers its name.
type named string

func (n named) InvokeStream(context.Context, []byte) (io.ReadCloser, error) {
	return io.NopCloser(strings.NewReader(string(n))), nil
}

func read(t *testing.T, rc io.ReadCloser) string {
	t.Helper()
	b, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestPool: an invocation goes to an idle instance; with every instance
// busy it waits until one is let go, or its context ends.
func TestPool(t *testing.T) {
	p := &Pool{Instances: []Streamer{named("a"), named("b")}}
	ctx := context.Background()
	held, err := p.InvokeStream(ctx, nil)
	if err != nil || read(t, held) != "a" {
		t.Fatal("the first invocation did not go to a", err)
	}
	second, err := p.InvokeStream(ctx, nil)
	if err != nil || read(t, second) != "b" {
		t.Fatal("with a held, the second did not go to b", err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := p.InvokeStream(short, nil); err == nil {
		t.Fatal("a third ran with both instances busy")
	}
	got := make(chan string)
	go func() {
		third, err := p.InvokeStream(ctx, nil)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(third)
		third.Close()
		got <- string(b)
	}()
	time.Sleep(50 * time.Millisecond)
	second.Close()
	if g := <-got; g != "b" {
		t.Fatalf("the waiting invocation got %q, want b once it was let go", g)
	}
	held.Close()
}
