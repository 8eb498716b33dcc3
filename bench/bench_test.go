package bench

import (
	"bytes"
	"net/http/httptest"
	"testing"
)

// benchCase measures every implementation answering c, as sub-benchmarks
// impl=<name> so that benchstat can compare them (-col /impl). Each answer
// is verified once before timing; an answer covered by a finding is
// skipped, naming it.
func benchCase(b *testing.B, c *Case) {
	for _, im := range Impls {
		b.Run("impl="+im.Name, func(b *testing.B) {
			if f := FindingFor(im.Name, c); f != nil {
				b.Skipf("finding %s: %s", f.ID, f.Summary)
			}
			h := im.New()
			first := c.Do(h)
			if err := c.Check(first); err != nil {
				b.Fatalf("wrong answer, not measured: %v\n%s", err, first.Body)
			}
			want, wantBody := first.Status, first.Body
			b.ReportAllocs()
			for b.Loop() {
				w := httptest.NewRecorder()
				h.ServeHTTP(w, c.NewRequest())
				if w.Code != want {
					b.Fatalf("status %d, want %d", w.Code, want)
				}
				// Every timed answer is the verified one: byte for byte, or
				// (an implementation whose bytes vary) checked again.
				if !bytes.Equal(w.Body.Bytes(), wantBody) {
					a := &Answer{Status: w.Code, Header: w.Header(), Body: w.Body.Bytes()}
					a.Msg, a.DecodeErr = decodeResponse(a.Header, a.Body)
					if err := c.Check(a); err != nil {
						b.Fatalf("wrong answer: %v\n%s", err, w.Body.Bytes())
					}
				}
			}
		})
	}
}

// BenchmarkDiscover measures server/discover.
func BenchmarkDiscover(b *testing.B) { benchCase(b, Discover) }

// BenchmarkToolsList measures tools/list of the two tools.
func BenchmarkToolsList(b *testing.B) { benchCase(b, ToolsList) }

// BenchmarkToolsCallEcho measures tools/call of echo with a 100-byte text.
func BenchmarkToolsCallEcho(b *testing.B) { benchCase(b, ToolsCallEcho) }

// BenchmarkToolsCallAdd measures tools/call of add.
func BenchmarkToolsCallAdd(b *testing.B) { benchCase(b, ToolsCallAdd) }

// BenchmarkUnsupportedVersion measures the refusal of a request for
// protocol version 1999-01-01.
func BenchmarkUnsupportedVersion(b *testing.B) { benchCase(b, Unsupported) }

// BenchmarkHarness measures what every benchmark above pays besides the
// server: a fresh request, a recorder and an empty 200 answer. Subtract it
// to compare servers alone.
func BenchmarkHarness(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		w := httptest.NewRecorder()
		r := ToolsCallEcho.NewRequest()
		w.WriteHeader(200)
		_ = r
	}
}

// benchLambda measures every implementation on the Lambda path answering
// c: the event payload in, the response payload out, as the Lambda
// runtime hands them over (sub-benchmarks impl=<name>). Each answer is
// verified once before timing; findings are skipped as over HTTP.
func benchLambda(b *testing.B, c *Case) {
	for _, im := range LambdaImpls {
		b.Run("impl="+im.Name, func(b *testing.B) {
			if f := FindingFor(im.Name, c); f != nil {
				b.Skipf("finding %s: %s", f.ID, f.Summary)
			}
			h := im.New()
			first, err := c.Invoke(h)
			if err != nil {
				b.Fatal(err)
			}
			if err := c.Check(first); err != nil {
				b.Fatalf("wrong answer, not measured: %v\n%s", err, first.Body)
			}
			ctx := b.Context()
			b.ReportAllocs()
			for b.Loop() {
				out, err := h.Invoke(ctx, c.Event)
				if err != nil || len(out) == 0 {
					b.Fatalf("invoke: %v, %d bytes", err, len(out))
				}
			}
		})
	}
}

// BenchmarkLambdaDiscover measures server/discover on the Lambda path.
func BenchmarkLambdaDiscover(b *testing.B) { benchLambda(b, Discover) }

// BenchmarkLambdaToolsList measures tools/list on the Lambda path.
func BenchmarkLambdaToolsList(b *testing.B) { benchLambda(b, ToolsList) }

// BenchmarkLambdaToolsCallEcho measures tools/call of echo on the Lambda
// path.
func BenchmarkLambdaToolsCallEcho(b *testing.B) { benchLambda(b, ToolsCallEcho) }

// BenchmarkLambdaToolsCallAdd measures tools/call of add on the Lambda
// path.
func BenchmarkLambdaToolsCallAdd(b *testing.B) { benchLambda(b, ToolsCallAdd) }

// BenchmarkLambdaUnsupportedVersion measures the refusal of version
// 1999-01-01 on the Lambda path.
func BenchmarkLambdaUnsupportedVersion(b *testing.B) { benchLambda(b, Unsupported) }

// BenchmarkNew measures building each implementation's handler with its
// two tools: work every cold start pays once, before the first answer.
func BenchmarkNew(b *testing.B) {
	for _, im := range Impls {
		b.Run("impl="+im.Name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = im.New()
			}
		})
	}
}
