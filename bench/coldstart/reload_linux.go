package main

import (
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// reload evicts the bootstrap from the page cache and reads it back, so
// that every cold start execs a freshly loaded file, as a Lambda cold
// start does, rather than whatever one load left. It matters here: the
// kernel caches a file in folios whose sizes depend on how it was written
// or read ahead, and a page fault maps the file a folio at a time, so the
// same binary started 25 to 35 more faults in one load than in another
// (a file fault costs about 24 µs on this machine: up to 0.8 ms a start),
// and a go build output, written through the linker's mapping, faulted
// more than a copy of it. Reloaded before each start, a subject's median
// is over many loads, and no subject keeps a lucky or unlucky one.
func reload(bin string) error {
	f, err := os.Open(bin)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil { // dirty pages are not evicted
		return fmt.Errorf("reload %s: %w", bin, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("reload %s: %w", bin, err)
	}
	if _, err := io.Copy(io.Discard, f); err != nil {
		return fmt.Errorf("reload %s: %w", bin, err)
	}
	return nil
}
