// Package soak holds what the soak run (make soak, docs/soak.md)
// measures with: a process's resident memory from /proc, the children
// of a process (the function under the runtime emulator is the
// emulator's child), a least-squares slope, and the goroutines in a Go
// program's SIGQUIT dump. The run itself is soak_integration_test.go. It
// is a test tool, not part of the deployed product.
package soak

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// RSS returns a process's resident set size in KiB (VmRSS in
// /proc/<pid>/status).
func RSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("soak: reading the status of %d: %w", pid, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			f := strings.Fields(v)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("soak: VmRSS of %d: %q", pid, v)
			}
			return strconv.ParseInt(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("soak: no VmRSS for %d (a zombie?)", pid)
}

// Children returns the pids of a process's children
// (/proc/<pid>/task/*/children).
func Children(pid int) ([]int, error) {
	tasks, err := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		return nil, fmt.Errorf("soak: process %d has no tasks (ended?)", pid)
	}
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue // the task ended
		}
		for _, f := range strings.Fields(string(b)) {
			if c, err := strconv.Atoi(f); err == nil {
				out = append(out, c)
			}
		}
	}
	return out, nil
}

// OnlyChild returns the one child of a process.
func OnlyChild(pid int) (int, error) {
	cs, err := Children(pid)
	if err != nil {
		return 0, err
	}
	if len(cs) != 1 {
		return 0, fmt.Errorf("soak: process %d has %d children, want 1", pid, len(cs))
	}
	return cs[0], nil
}

// Sample is one measurement.
type Sample struct {
	At  time.Duration // since sampling began
	KiB int64
}

// Slope is the least-squares slope of the samples in KiB per minute, and
// whether there were enough (two distinct times) to fit one.
func Slope(s []Sample) (float64, bool) {
	n := float64(len(s))
	if n < 2 {
		return 0, false
	}
	var sx, sy float64
	for _, p := range s {
		sx += p.At.Minutes()
		sy += float64(p.KiB)
	}
	mx, my := sx/n, sy/n
	var sxx, sxy float64
	for _, p := range s {
		dx := p.At.Minutes() - mx
		sxx += dx * dx
		sxy += dx * (float64(p.KiB) - my)
	}
	if sxx == 0 {
		return 0, false
	}
	return sxy / sxx, true
}

// goroutineHeader is the first line of each goroutine in a Go traceback:
// "goroutine 18 [select]:" or "goroutine 1 gp=0x... m=nil [running]:".
var goroutineHeader = regexp.MustCompile(`(?m)^goroutine \d+ (?:gp=\S+ m=\S+ (?:mp=\S+ )?)?\[`)

// CountGoroutines counts the goroutines in a SIGQUIT dump (with
// GOTRACEBACK=all every goroutine is listed; the runtime's own are left
// out at that level, as they are from runtime.NumGoroutine).
func CountGoroutines(dump []byte) (int, error) {
	if !bytes.Contains(dump, []byte("SIGQUIT")) {
		return 0, errors.New("soak: no SIGQUIT dump in the output")
	}
	return len(goroutineHeader.FindAllIndex(dump, -1)), nil
}
