package soak

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func TestSlope(t *testing.T) {
	var s []Sample
	for i := range 11 {
		// 1,000 KiB plus 30 KiB a minute, sampled every 30 s.
		at := time.Duration(i) * 30 * time.Second
		s = append(s, Sample{At: at, KiB: 1000 + int64(30*at.Minutes())})
	}
	if got, ok := Slope(s); !ok || got < 29.999 || got > 30.001 {
		t.Errorf("Slope = %v, %v; want 30", got, ok)
	}
	if _, ok := Slope(s[:1]); ok {
		t.Error("a slope from one sample")
	}
	if _, ok := Slope([]Sample{{At: time.Second, KiB: 1}, {At: time.Second, KiB: 2}}); ok {
		t.Error("a slope from one instant")
	}
}

func TestCountGoroutines(t *testing.T) {
	dump := `SIGQUIT: quit
PC=0x47d3a1 m=0 sigcode=0

goroutine 0 gp=0x15455a0 m=0 mp=0x1546b80 [idle]:
runtime.futex(...)

goroutine 1 gp=0x31df32d921e0 m=nil [select]:
main.main()

goroutine 7 [chan receive, 3 minutes]:
main.worker()
`
	if n, err := CountGoroutines([]byte(dump)); err != nil || n != 3 {
		t.Errorf("CountGoroutines = %d, %v; want 3", n, err)
	}
	if _, err := CountGoroutines([]byte("goroutine 1 [running]:\n")); err == nil {
		t.Error("a panic's traceback taken for a SIGQUIT dump")
	}
}

// TestProc: this process's memory, and a child found as such.
func TestProc(t *testing.T) {
	kb, err := RSS(os.Getpid())
	if err != nil || kb <= 0 {
		t.Fatalf("RSS = %d, %v", kb, err)
	}
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	cs, err := Children(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range cs {
		found = found || c == cmd.Process.Pid
	}
	if !found {
		t.Errorf("children %v lack %d", cs, cmd.Process.Pid)
	}
	if _, err := RSS(1 << 30); err == nil || !strings.Contains(err.Error(), "status") {
		t.Errorf("RSS of no process: %v", err)
	}
}
