package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/loopback"
)

// TestLocalTaskCallsStayBounded: the function as `make run` runs it
// (tasks and claims in memory), sent 40 task calls of 3 MB each — the
// size in capabilities, which a task keeps with its call — refuses each
// -32602 before anything is stored, and its resident memory stays under
// 200 MB, at its peak as after.
func TestLocalTaskCallsStayBounded(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("needs /proc to read a process's resident memory")
	}
	bin := filepath.Join(t.TempDir(), "mcp")
	if b, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("building: %v\n%s", err, b)
	}
	port, err := loopback.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := loopback.Addr(port)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "MCP_ADDR="+addr, "LOG_LEVEL=error")
	ctx := context.Background()
	p, err := loopback.Start(ctx, cmd, addr, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	pad := strings.Repeat("<", 3<<20)
	caps := `{"extensions":{"io.modelcontextprotocol/tasks":{},"x":{"pad":"` + pad + `"}}}`
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"notes_export","arguments":{"seconds":0},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":` + caps + `}}}`)
	client := &http.Client{Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	var mu sync.Mutex
	codes := map[string]int{}
	work := make(chan struct{}, 40)
	for range 40 {
		work <- struct{}{}
	}
	close(work)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/mcp", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "notes_export")
				resp, err := client.Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				var out struct {
					Error *struct {
						Code int `json:"code"`
						Data struct {
							Reason    string `json:"reason"`
							Retryable bool   `json:"retryable"`
						} `json:"data"`
					} `json:"error"`
				}
				_ = json.Unmarshal(raw, &out)
				key := fmt.Sprintf("status %d", resp.StatusCode)
				if out.Error != nil {
					key = fmt.Sprintf("%d %s retryable=%v", out.Error.Code, out.Error.Data.Reason, out.Error.Data.Retryable)
				}
				mu.Lock()
				codes[key]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if codes["-32602 task_call_too_large retryable=false"] != 40 {
		t.Fatalf("answers: %v; want 40 refusals as too large", codes)
	}
	rss, peak := residentMB(t, p.Pid())
	t.Logf("after 40 calls of 3 MB: %d MB resident, %d MB at the peak", rss, peak)
	if rss >= 200 || peak >= 200 {
		t.Fatalf("%d MB resident, %d MB at the peak: over 200 MB", rss, peak)
	}
}

// residentMB reads a process's resident memory and its peak, in MB.
func residentMB(t *testing.T, pid int) (rss, peak int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.Atoi(f[1])
		switch f[0] {
		case "VmRSS:":
			rss = kb >> 10
		case "VmHWM:":
			peak = kb >> 10
		}
	}
	if rss == 0 || peak == 0 {
		t.Fatalf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return rss, peak
}
