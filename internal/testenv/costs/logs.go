package costs

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/emfcheck"
)

// The widths variable values are counted at, so that a line's or an
// answer's size is the same in every run: what varies from call to call
// is counted at a fixed width, not as it happened to be written.
const (
	// TimeWidth is a line's "time": RFC 3339 with nanoseconds, as the
	// function writes it (its trailing zeroes, which Go trims, counted).
	TimeWidth = len("2006-01-02T15:04:05.000000000Z")
	// TimingWidth is a timing in milliseconds with microseconds, as a
	// call of 10 to 99 ms writes it ("12.345").
	TimingWidth = len("12.345")
	// StampWidth is a timestamp in an answer: RFC 3339 with milliseconds,
	// as the note book and the tasks write them.
	StampWidth = len("2006-01-02T15:04:05.000Z")
)

var (
	timeMember = regexp.MustCompile(`"time":"([^"]*)"`)
	// A timestamp that is a whole JSON string, in an answer or in a JSON
	// text inside one (its quotes escaped).
	stamp = regexp.MustCompile(`\\?"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,9})?Z)\\?"`)
)

// LineBytes is the size of a log line the function wrote (without its
// newline), its variable values counted at their fixed widths: its
// "time" at TimeWidth, its "duration_ms" and every metric it declares in
// milliseconds at TimingWidth. add is added (a member the line lacks
// here and has in the cloud).
func LineBytes(line string, add int) (int, error) {
	n := len(line) + add
	if m := timeMember.FindStringSubmatchIndex(line); m != nil {
		n += TimeWidth - (m[3] - m[2])
	}
	timings := []string{"duration_ms"}
	if strings.Contains(line, `"_aws"`) {
		metrics, err := emfcheck.Check([]byte(line))
		if err != nil {
			return 0, fmt.Errorf("not an EMF line CloudWatch would read: %w", err)
		}
		for _, m := range metrics {
			if m.Unit == "Milliseconds" && !slices.Contains(timings, m.Name) {
				timings = append(timings, m.Name)
			}
		}
	}
	for _, name := range timings {
		re := regexp.MustCompile(`"` + regexp.QuoteMeta(name) + `":(-?[0-9][0-9.eE+-]*)`)
		for _, m := range re.FindAllStringSubmatchIndex(line, -1) {
			n += TimingWidth - (m[3] - m[2])
		}
	}
	return n, nil
}

// AnswerBytes is the size of an answer's body, each timestamp in it (a
// JSON string that is one) counted at StampWidth.
func AnswerBytes(body []byte) int {
	n := len(body)
	for _, m := range stamp.FindAllSubmatchIndex(body, -1) {
		n += StampWidth - (m[3] - m[2])
	}
	return n
}

// Series is one CloudWatch metric series: a metric name and the values of
// one of its dimension sets.
type Series struct {
	Namespace, Name string
	Dimensions      map[string]string
}

// Key names the series.
func (s Series) Key() string {
	names := make([]string, 0, len(s.Dimensions))
	for k := range s.Dimensions {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString(s.Namespace + "/" + s.Name)
	for _, k := range names {
		b.WriteString(" " + k + "=" + s.Dimensions[k])
	}
	return b.String()
}

// SeriesOf are the metric series the EMF lines among lines put data in,
// by Key.
func SeriesOf(lines []string) (map[string]Series, error) {
	out := map[string]Series{}
	for _, l := range lines {
		if !strings.Contains(l, `"_aws"`) {
			continue
		}
		metrics, err := emfcheck.Check([]byte(l))
		if err != nil {
			return nil, fmt.Errorf("not an EMF line CloudWatch would read: %w: %s", err, l)
		}
		for _, m := range metrics {
			s := Series{Namespace: m.Namespace, Name: m.Name, Dimensions: m.Dimensions}
			out[s.Key()] = s
		}
	}
	return out, nil
}
