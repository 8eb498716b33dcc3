package chaos

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/serverless-mcp/mcp-lambda/e2e/internal/harness"
)

// Summary is what the report needs besides the checks.
type Summary struct {
	Title     string
	Instances int
	Workers   int
	Load      time.Duration // the load phase
	Total     time.Duration // load and recovery
	Faults    map[string]int
	Timeline  []string
	Ops       map[string]int
	// Pool is what the front saw; Events the function's asynchronous
	// invocations of itself (task workers) the Invoke API's stand-in
	// accepted, Duplicated of them delivered twice, Deliveries the runs
	// it made of them (duplicates and retries included), DeliveryFailed
	// of which failed.
	Pool                                           PoolStats
	Events, Duplicated, Deliveries, DeliveryFailed int64
}

// Stats are the load's request counts and latencies.
type Stats struct {
	Requests int
	Classes  map[Class]int
	// Streamed are the requests through the streaming door, by class.
	Streamed map[Class]int
	P50, P99 time.Duration
}

// Stats returns the requests sent and their latencies.
func (l *Load) Stats() Stats {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Stats{Classes: maps.Clone(l.classes), Streamed: maps.Clone(l.streamed)}
	for _, n := range l.classes {
		s.Requests += n
	}
	lat := slices.Clone(l.latency)
	slices.Sort(lat)
	s.P50, s.P99 = harness.Percentile(lat, 0.50), harness.Percentile(lat, 0.99)
	return s
}

// Ops returns the operations started, by kind.
func (l *Load) Ops() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]int{}
	for k, v := range l.opCounts {
		out[k] = v
	}
	return out
}

// WriteReport writes the run's table.
func WriteReport(w io.Writer, s Summary, st Stats, r *Result) {
	fmt.Fprintf(w, "%s\n", s.Title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	row := func(k string, v any) { fmt.Fprintf(tw, "| %s\t| %v\t|\n", k, v) }
	fmt.Fprintf(tw, "| %s\t| %s\t|\n", "what", "count")
	fmt.Fprintf(tw, "|%s\t|%s\t|\n", "---", "---")
	row("instances / workers", fmt.Sprintf("%d / %d", s.Instances, s.Workers))
	row("load phase / whole run", fmt.Sprintf("%s / %s", s.Load.Round(time.Second), s.Total.Round(time.Second)))
	row("requests (HTTP exchanges)", st.Requests)
	for _, c := range []Class{OK, ToolRetryable, ToolError, RefusedRetryable, Refused, Transport, Injected, Gateway} {
		row("  answered "+c.String(), st.Classes[c])
	}
	streamed, streamedOK := 0, st.Streamed[OK]
	for _, n := range st.Streamed {
		streamed += n
	}
	row("  through the streaming door (answered ok)", fmt.Sprintf("%d (%d)", streamed, streamedOK))
	row("task worker invocations (delivered twice)", fmt.Sprintf("%d (%d)", s.Events, s.Duplicated))
	row("  worker runs on the fleet (failed, killed)", fmt.Sprintf("%d (%d, %d)", s.Deliveries, s.DeliveryFailed, s.Pool.KilledWorkers))
	row("latency p50 / p99", fmt.Sprintf("%s / %s", st.P50.Round(100*time.Microsecond), st.P99.Round(time.Millisecond)))
	for _, op := range slices.Sorted(maps.Keys(s.Ops)) {
		row("operations: "+op, s.Ops[op])
	}
	for _, f := range FaultOrder {
		row("fault: "+f, s.Faults[f])
	}
	row("notes_add keys (pursued to success)", fmt.Sprintf("%d (%d)", r.Keys, r.KeysSucceeded))
	for _, k := range slices.Sorted(maps.Keys(r.KeysByKind)) {
		row("  keys "+k, r.KeysByKind[k])
	}
	row("keys executed 0 / 1 / 2+ times", fmt.Sprintf("%d / %d / %d", r.Executions[0], r.Executions[1], r.Executions[2]))
	row("  keys committed in one request (one-step / claim-first transactions sent)", fmt.Sprintf("%d (%d / %d)", r.KeysOneStep, r.OneStepCommits, r.ClaimFirstCommits))
	row("note books (counted right)", fmt.Sprintf("%d (%d)", r.Books, r.BooksCounted))
	row("confirmed deletes (succeeded)", fmt.Sprintf("%d (%d)", r.Deletes, r.DeletesSucceeded))
	row("  second redemptions refused", r.SecondRefused)
	row("  notes gone after a redemption killed mid-call, no answer telling", r.DeletesUnknown)
	row("  notes deleted 0 / 1 / 2+ times, by their deletion records", fmt.Sprintf("%d / %d / %d",
		r.DeleteExecutions[0], r.DeleteExecutions[1], r.DeleteExecutions[2]))
	row("  deleted notes whose change is in the event log", r.ChangesRecorded)
	row("task keys (answered with a task)", fmt.Sprintf("%d (%d)", r.TaskKeys, r.TasksCreated))
	for _, k := range slices.Sorted(maps.Keys(r.TaskKeysByKind)) {
		row("  keys "+k, r.TaskKeysByKind[k])
	}
	row("  tasks ended completed / cancelled / failed / not seen to end", fmt.Sprintf("%d / %d / %d / %d",
		r.TaskEnds["completed"], r.TaskEnds["cancelled"], r.TaskEnds["failed"], r.TaskEnds[""]))
	row("  tasks/get polls", r.TaskPolls)
	row("  tasks asking for input (tasks/update sent)", fmt.Sprintf("%d (%d)", r.TasksAsked, r.TaskUpdates))
	row("  keys whose export ran 0 / 1 / 2+ times, by the export records", fmt.Sprintf("%d / %d / %d",
		r.TaskExecutions[0], r.TaskExecutions[1], r.TaskExecutions[2]))
	row("  keys whose task's worker was killed mid-run (re-runs)", fmt.Sprintf("%d (%d)", r.TasksKilled, r.TaskReruns))
	row("reads", r.Reads)
	lr := r.Listen
	row("listen streams (ended with their result)", fmt.Sprintf("%d (%d)", lr.Streams, lr.Ended))
	row("  notifications/resources/updated received", lr.Notifications)
	row("  watched notes deleted: learned by notification / by acknowledgement", fmt.Sprintf("%d: %d / %d", lr.Deleted, lr.ByNotification, lr.ByAcknowledgement))
	row("  deletions a stream open long enough owed (all delivered unless a violation says)", lr.Owed)
	row("  deletions with a redemption killed under it (owed by a stream)", fmt.Sprintf("%d (%d)", lr.CutDeletes, lr.CutOwed))
	bc := r.ByCheck()
	for _, c := range Checks {
		row("violations: "+c, bc[c])
	}
	tw.Flush()
	if len(s.Timeline) > 0 {
		fmt.Fprintf(w, "\nfaults, from the start of the load:\n")
		for _, t := range s.Timeline {
			fmt.Fprintf(w, "  %s\n", t)
		}
	}
}

// LogIndex finds the instances' log lines of a request: the function
// writes one JSON line per request with the front's request id as
// gateway_request_id.
type LogIndex struct {
	byID map[string][]string
	// Errors are the ERROR lines, by instance log file.
	Errors map[string]int
	// Orphans are functions that tried to answer after their emulator
	// was gone: a kill that missed the function.
	Orphans int
}

// IndexLogs reads the instances' log files.
func IndexLogs(files []string) (*LogIndex, error) {
	ix := &LogIndex{byID: map[string][]string{}, Errors: map[string]int{}}
	for _, f := range files {
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		name := filepath.Base(f)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, `"level":"ERROR"`) {
				ix.Errors[name]++
			}
			if strings.Contains(line, "sending the function functionResponse to the API") {
				ix.Orphans++
			}
			i := strings.Index(line, `"gateway_request_id":"`)
			if i < 0 {
				continue
			}
			rest := line[i+len(`"gateway_request_id":"`):]
			if j := strings.IndexByte(rest, '"'); j > 0 {
				ix.byID[rest[:j]] = append(ix.byID[rest[:j]], name+": "+line)
			}
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("chaos: reading %s: %w", f, err)
		}
	}
	return ix, nil
}

// Lines are the log lines of a request id.
func (ix *LogIndex) Lines(id string) []string { return ix.byID[id] }

// WriteViolations writes each violation with its attempts and, for each
// attempt, the instance's log lines; at most max violations.
func WriteViolations(w io.Writer, vs []Violation, ix *LogIndex, max int) {
	for i, v := range vs {
		if i == max {
			fmt.Fprintf(w, "... and %d more violations\n", len(vs)-max)
			return
		}
		fmt.Fprintf(w, "\nVIOLATION %s: %s\n  %s\n", v.Check, v.Subject, v.Detail)
		for _, a := range v.Attempts {
			fmt.Fprintf(w, "  t=%6.2fs %s\n", a.At.Seconds(), a.Detail)
			if ix == nil || a.RequestID == "" {
				continue
			}
			lines := ix.Lines(a.RequestID)
			if len(lines) == 0 {
				fmt.Fprintf(w, "      (no log line: the instance was killed before it wrote one)\n")
			}
			for _, l := range lines {
				fmt.Fprintf(w, "      %s\n", l)
			}
		}
	}
}
