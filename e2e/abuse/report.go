package abuse

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// Summary is what the report needs besides each target's figures.
type Summary struct {
	Title string
	// Load is the load phase; Total the run from the load's start to the
	// checks.
	Load, Total time.Duration
	// Instances are the fleet's instances started, Busy the most busy at
	// once.
	Instances, Busy int
}

// WriteReport writes the run's table, one column per target, then its
// breaker openings and violations.
func WriteReport(w io.Writer, s Summary, figs []*Figures) {
	fmt.Fprintf(w, "%s\n\n", s.Title)
	head := []string{"what"}
	for _, f := range figs {
		head = append(head, f.Target.Name)
	}
	var rows [][]string
	row := func(what string, cell func(f *Figures) string) {
		r := []string{what}
		for _, f := range figs {
			r = append(r, cell(f))
		}
		rows = append(rows, r)
	}
	row("load phase / whole run", func(*Figures) string {
		return fmt.Sprintf("%s / %s", s.Load.Round(time.Second), s.Total.Round(time.Second))
	})
	row("how callers are named", func(f *Figures) string {
		if f.Target.Lambda {
			return "authorizer principal, or anonymous by source address"
		}
		return "anonymous, by address"
	})
	row("MCP_QUOTAS / MCP_CIRCUIT_BREAKER", func(f *Figures) string {
		return fmt.Sprintf("`%s` / `%s`", f.Target.Quotas.Setting(), f.Target.Breaker)
	})
	row("state", func(f *Figures) string {
		switch {
		case f.Target.Lambda:
			return fmt.Sprintf("DynamoDB Local; %d instances (at most %d busy)", s.Instances, s.Busy)
		case f.Target.Table:
			return "DynamoDB Local; one local server"
		}
		return "memory; one local server"
	})
	row("actors: honest / hostile", func(f *Figures) string {
		var h, x []string
		for _, a := range f.Target.Actors {
			if a.Hostile {
				x = append(x, a.Name)
			} else {
				h = append(h, a.Name)
			}
		}
		return strings.Join(h, ", ") + " / " + strings.Join(x, ", ")
	})
	row("honest requests served (of)", func(f *Figures) string { return fmt.Sprintf("%d (%d)", f.HonestServed, f.HonestRequests) })
	row("honest calls served (of)", func(f *Figures) string {
		return fmt.Sprintf("%d (%d)", f.HonestCallsServed, f.HonestCalls)
	})
	row("honest latency p50 / p99; calls' p99", func(f *Figures) string {
		return fmt.Sprintf("%s / %s; %s", ms(f.HonestP50), ms(f.HonestP99), ms(f.HonestCallP99))
	})
	row("honest tasks completed (of)", func(f *Figures) string {
		return fmt.Sprintf("%d (%d)", f.HonestTasksCompleted, f.HonestTasks)
	})
	var keys []string
	for _, f := range figs {
		for k := range f.Hostile {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		row("hostile "+k+": admitted / refused / hung up / failed", func(f *Figures) string {
			t := f.Hostile[k]
			if t == nil {
				return "—"
			}
			return fmt.Sprintf("%d / %d / %d / %d", t.Admitted, t.Refused, t.HungUp, t.Failed)
		})
	}
	var causes []string
	for _, f := range figs {
		for c := range f.RefusedBy {
			if !slices.Contains(causes, c) {
				causes = append(causes, c)
			}
		}
	}
	slices.Sort(causes)
	row("hostile refusals by cause", func(f *Figures) string {
		var out []string
		for _, c := range causes {
			if n := f.RefusedBy[c]; n > 0 {
				out = append(out, fmt.Sprintf("%s %d", c, n))
			}
		}
		return orDash(strings.Join(out, ", "))
	})
	row("hang-ups, as the function logged them", func(f *Figures) string { return orDash(countList(f.HungUpLines)) })
	row("hostile calls admitted in one window, most (quota)", func(f *Figures) string {
		var out []string
		for _, n := range slices.Sorted(maps.Keys(f.MostInWindow)) {
			out = append(out, fmt.Sprintf("%s %d", n, f.MostInWindow[n]))
		}
		return orDash(strings.Join(out, ", ")) + fmt.Sprintf(" (%d)", f.Target.Quotas.Calls)
	})
	row("table writes per refused request", func(f *Figures) string {
		switch {
		case !f.Target.Table:
			return "no table"
		case !f.Target.Exact:
			return "not attributed per request"
		case f.RefusedKnown == 0:
			return "no refusal"
		}
		return fmt.Sprintf("%.3f (%d writes, %d refusals)", float64(f.WritesRefused)/float64(f.RefusedKnown), f.WritesRefused, f.RefusedKnown)
	})
	row("  of which: calls charged / window found used up / other", func(f *Figures) string {
		if !f.Target.Exact {
			return "—"
		}
		return fmt.Sprintf("%d / %d / %d", f.ChargeWrites, f.ExhaustingWrites, f.OtherRefusalWrites)
	})
	row("write requests rejected on their condition: by refused requests / all", func(f *Figures) string {
		switch {
		case !f.Target.Table:
			return "—"
		case !f.Target.Exact:
			return fmt.Sprintf("— / %d", f.Rejected)
		}
		return fmt.Sprintf("%d / %d", f.RejectedRefused, f.Rejected)
	})
	row("writes that found a window used up (principal·window·instance groups)", func(f *Figures) string {
		if !f.Target.Table {
			return "—"
		}
		return fmt.Sprintf("%d (%d)", f.ExhaustingWrites, f.ExhaustingGroups)
	})
	row("table writes: all / by admitted requests / by task runs / by instance starts / not attributed", func(f *Figures) string {
		if !f.Target.Table {
			return "—"
		}
		return fmt.Sprintf("%d / %d / %d / %d / %d", f.Writes, f.WritesAdmitted, f.WritesTasks, f.WritesStart, f.WritesUnknown)
	})
	row("hostile tasks started; most live at once (quota)", func(f *Figures) string {
		var out []string
		for _, n := range slices.Sorted(maps.Keys(f.HostileTasks)) {
			out = append(out, fmt.Sprintf("%s %d; %d", n, f.HostileTasks[n], f.LiveMost[n]))
		}
		return orDash(strings.Join(out, ", ")) + fmt.Sprintf(" (%d)", f.Target.Quotas.Tasks)
	})
	row("breaker openings (causes)", func(f *Figures) string {
		if len(f.Openings) == 0 {
			return "0"
		}
		var out []string
		for _, o := range f.Openings {
			out = append(out, fmt.Sprintf("%s %s: %s", o.Source, o.Tool, strings.Join(o.Causes, ", ")))
		}
		return fmt.Sprintf("%d (%s)", len(f.Openings), strings.Join(out, "; "))
	})
	row("fault lines written: hostile's / honest's / other", func(f *Figures) string {
		return fmt.Sprintf("%d / %d / %d", f.FaultLines["hostile"], f.FaultLines["honest"], f.FaultLines["other"])
	})
	for _, c := range Checks {
		row("violations: "+c, func(f *Figures) string {
			n := 0
			for _, v := range f.Violations {
				if v.Check == c {
					n++
				}
			}
			return fmt.Sprint(n)
		})
	}
	writeTable(w, head, rows)
	for _, f := range figs {
		for _, th := range f.Thin {
			fmt.Fprintf(w, "\nTOO LITTLE (%s): %s\n", f.Target.Name, th)
		}
	}
}

// WriteViolations writes at most max violations with their log lines.
func WriteViolations(w io.Writer, figs []*Figures, max int) {
	n := 0
	for _, f := range figs {
		for _, v := range f.Violations {
			if n == max {
				fmt.Fprintf(w, "\n... and more violations\n")
				return
			}
			n++
			fmt.Fprintf(w, "\nVIOLATION %s (%s): %s\n  %s\n", v.Check, v.Target, v.Subject, v.Detail)
			for _, l := range v.Lines {
				fmt.Fprintf(w, "    %.600s\n", l)
			}
		}
	}
}

// writeTable writes a Markdown table, its columns padded.
func writeTable(w io.Writer, head []string, rows [][]string) {
	width := make([]int, len(head))
	for _, r := range append([][]string{head}, rows...) {
		for i, c := range r {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	line := func(r []string) {
		var b strings.Builder
		for i, c := range r {
			fmt.Fprintf(&b, "| %s%s ", c, strings.Repeat(" ", width[i]-len([]rune(c))))
		}
		fmt.Fprintln(w, b.String()+"|")
	}
	line(head)
	sep := make([]string, len(head))
	for i := range sep {
		sep[i] = strings.Repeat("-", width[i])
	}
	line(sep)
	for _, r := range rows {
		line(r)
	}
}

func ms(d time.Duration) string {
	if d < 10*time.Millisecond {
		return d.Round(10 * time.Microsecond).String()
	}
	return d.Round(time.Millisecond).String()
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}

func countList(m map[string]int) string {
	var out []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(out, ", ")
}
