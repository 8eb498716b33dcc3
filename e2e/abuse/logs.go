package abuse

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Line is one of the function's request lines (pkg/observe: one JSON
// line per request, msg "request").
type Line struct {
	// Source is the log file it is in: an instance's, or a local
	// server's.
	Source string
	Time   time.Time
	Level  string
	Method string
	// Outcome is "ok", or the refusal's or failure's kind (rate_limited,
	// circuit_open, cancelled, ...).
	Outcome string
	Tool    string
	Fault   bool
	Cause   string
	// Trace is the trace id of the request's traceparent ("" for none:
	// a task's run); GatewayID the front's request id.
	Trace, GatewayID string
	Raw              string
}

// Faulty reports whether the line is a fault line: the server's own
// fault, logged at ERROR.
func (l Line) Faulty() bool { return l.Fault || l.Level == "ERROR" }

// ReadLines reads the request lines of every file.
func ReadLines(files []string) ([]Line, error) {
	var out []Line
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("abuse: %w", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 64<<10), 8<<20)
		for sc.Scan() {
			if l, ok := parseLine(sc.Text()); ok {
				l.Source = filepath.Base(f)
				out = append(out, l)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("abuse: reading %s: %w", f, err)
		}
	}
	return out, nil
}

// parseLine reads a request line; other lines (the emulator's, the
// function's other records) are not.
func parseLine(s string) (Line, bool) {
	if !strings.Contains(s, `"msg":"request"`) {
		return Line{}, false
	}
	var v struct {
		Time        time.Time `json:"time"`
		Level       string    `json:"level"`
		Msg         string    `json:"msg"`
		Method      string    `json:"Method"`
		Outcome     string    `json:"Outcome"`
		Tool        string    `json:"Tool"`
		Fault       bool      `json:"fault"`
		Cause       string    `json:"cause"`
		Traceparent string    `json:"traceparent"`
		GatewayID   string    `json:"gateway_request_id"`
	}
	// The emulator may put its own prefix before the function's line.
	i := strings.IndexByte(s, '{')
	if i < 0 || json.Unmarshal([]byte(s[i:]), &v) != nil || v.Msg != "request" {
		return Line{}, false
	}
	l := Line{Time: v.Time, Level: v.Level, Method: v.Method, Outcome: v.Outcome, Tool: v.Tool, Fault: v.Fault, Cause: v.Cause,
		GatewayID: v.GatewayID, Raw: s[i:]}
	if parts := strings.Split(v.Traceparent, "-"); len(parts) == 4 {
		l.Trace = parts[1]
	}
	return l, true
}
