package syncbuf

import (
	"strings"
	"sync"
	"testing"
)

func TestConcurrentWritersAndTake(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				b.Write([]byte("line\n"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := strings.Count(b.Take(), "line\n"); got != 800 {
		t.Errorf("%d lines, want 800", got)
	}
	if b.String() != "" {
		t.Errorf("Take left %q", b.String())
	}
}
