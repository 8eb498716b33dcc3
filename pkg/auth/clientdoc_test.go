package auth

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// These tests are inside the package for the address check, the dialer's
// control and the freshness rules; the rest goes through the exported
// API as the proxy does. Their helpers are prefixed cimd, so as not to
// meet the names of the package's other files.

// cimdMarker is planted in the hostile parts of the tests' documents: no
// error text may repeat it.
const cimdMarker = "<script>MARKER-cimd"

// cimdClock is a settable clock (the proxy's tests share it with their
// sealer and metadata-document cache).
type cimdClock struct {
	mu sync.Mutex
	t  time.Time
}

func newCIMDClock() *cimdClock { return &cimdClock{t: time.Unix(1_900_000_000, 0)} }

func (c *cimdClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *cimdClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// cimdServer is a TLS server on 127.0.0.1 that counts the requests and
// the connections it sees.
type cimdServer struct {
	*httptest.Server
	requests, conns atomic.Int32
}

func newCIMDServer(t *testing.T, h http.HandlerFunc) *cimdServer {
	t.Helper()
	s := &cimdServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		h(w, r)
	}))
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes'
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			s.conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// docURL is the URL of the server's document, the client id.
func (s *cimdServer) docURL() string { return s.URL + "/client.json" }

func (s *cimdServer) port() string {
	_, p, _ := net.SplitHostPort(s.Listener.Addr().String())
	return p
}

func (s *cimdServer) roots() *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

// docs is a ClientMetadataDocuments allowed to fetch from s, on clk.
func (s *cimdServer) docs(t *testing.T, clk *cimdClock) *ClientMetadataDocuments {
	c := &ClientMetadataDocuments{PrivateHosts: []string{"127.0.0.1"}, RootCAs: s.roots(), Now: clk.Now}
	t.Cleanup(func() { cimdCloseIdle(c) })
	return c
}

func cimdCloseIdle(c *ClientMetadataDocuments) {
	if c.client != nil {
		c.client.CloseIdleConnections()
	}
}

// cimdDoc is a valid document for clientID, with changes (a nil value
// deletes the member); its client_name carries the marker.
func cimdDoc(clientID string, changes map[string]any) []byte {
	m := map[string]any{
		"client_id":     clientID,
		"client_name":   cimdMarker,
		"client_uri":    "https://app.example.com/",
		"redirect_uris": []string{"http://127.0.0.1:33418/callback", "https://app.example.com/oauth/callback"},
		"grant_types":   []string{"authorization_code", "refresh_token"},
	}
	for k, v := range changes {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		panic(err)
	}
	return b
}

// serveDoc answers with body as JSON, with header.
func serveDoc(body []byte, header map[string]string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for k, v := range header {
			w.Header().Set(k, v)
		}
		_, _ = w.Write(body)
	}
}

// serveOwnDoc serves a valid document for the URL it is fetched at.
func serveOwnDoc(header map[string]string, changes map[string]any) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		serveDoc(cimdDoc("https://"+r.Host+r.URL.RequestURI(), changes), header)(w, r)
	}
}

// wantRefused checks that err is a refusal and repeats nothing of the
// document.
func wantRefused(t *testing.T, err error, body []byte) {
	t.Helper()
	if !errors.Is(err, ErrClientMetadata) || errors.Is(err, ErrClientMetadataUnavailable) {
		t.Fatalf("error %v: want ErrClientMetadata only", err)
	}
	cimdClean(t, err, body)
}

func wantUnavailable(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, ErrClientMetadataUnavailable) || errors.Is(err, ErrClientMetadata) {
		t.Fatalf("error %v: want ErrClientMetadataUnavailable only", err)
	}
	cimdClean(t, err, nil)
}

func cimdClean(t *testing.T, err error, body []byte) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "MARKER") || len(body) > 0 && strings.Contains(msg, string(body)) {
		t.Fatalf("error text repeats the document: %s", msg)
	}
}

func TestClientMetadataFetch(t *testing.T) {
	var accept atomic.Value
	s := newCIMDServer(t, func(w http.ResponseWriter, r *http.Request) {
		accept.Store(r.Header.Get("Accept"))
		serveOwnDoc(map[string]string{"Content-Type": "application/json; charset=utf-8"}, map[string]any{"grant_types": nil})(w, r)
	})
	c := s.docs(t, newCIMDClock())
	doc, err := c.Get(context.Background(), s.docURL())
	if err != nil {
		t.Fatal(err)
	}
	want := &ClientMetadataDocument{
		ClientID:      s.docURL(),
		ClientName:    cimdMarker,
		ClientURI:     "https://app.example.com/",
		RedirectURIs:  []string{"http://127.0.0.1:33418/callback", "https://app.example.com/oauth/callback"},
		GrantTypes:    []string{"authorization_code"},
		ResponseTypes: []string{"code"},
	}
	if !cimdEqual(doc, want) {
		t.Fatalf("document %+v, want %+v", doc, want)
	}
	if got := accept.Load(); got != "application/json" {
		t.Errorf("Accept %q, want application/json", got)
	}
}

func cimdEqual(a, b *ClientMetadataDocument) bool {
	return a.ClientID == b.ClientID && a.ClientName == b.ClientName && a.ClientURI == b.ClientURI &&
		a.TokenEndpointAuthMethod == b.TokenEndpointAuthMethod && slices.Equal(a.RedirectURIs, b.RedirectURIs) &&
		slices.Equal(a.GrantTypes, b.GrantTypes) && slices.Equal(a.ResponseTypes, b.ResponseTypes)
}

// TestClientMetadataCache: a document is fetched once while its
// max-age lasts, and again after; what a caller does with the document it
// got does not change the cache's.
func TestClientMetadataCache(t *testing.T) {
	s := newCIMDServer(t, serveOwnDoc(map[string]string{"Cache-Control": "public, max-age=60"}, nil))
	clk := newCIMDClock()
	c := s.docs(t, clk)
	ctx := context.Background()
	doc, err := c.Get(ctx, s.docURL())
	if err != nil {
		t.Fatal(err)
	}
	doc.RedirectURIs[0] = "https://evil.example/cb"
	clk.Advance(59 * time.Second)
	doc, err = c.Get(ctx, s.docURL())
	if err != nil {
		t.Fatal(err)
	}
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("%d requests while fresh, want 1", n)
	}
	if doc.RedirectURIs[0] != "http://127.0.0.1:33418/callback" {
		t.Fatalf("the cached document changed with a caller's copy: %q", doc.RedirectURIs[0])
	}
	clk.Advance(2 * time.Second)
	if _, err := c.Get(ctx, s.docURL()); err != nil {
		t.Fatal(err)
	}
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("%d requests after expiry, want 2", n)
	}
}

// TestClientMetadataNoStore: a response that may not be stored, or must
// be revalidated, is fetched on every Get.
func TestClientMetadataNoStore(t *testing.T) {
	for _, cc := range []string{"no-store", "No-Cache", "max-age=600, no-store", "max-age=0", "max-age=soon"} {
		t.Run(cc, func(t *testing.T) {
			s := newCIMDServer(t, serveOwnDoc(map[string]string{"Cache-Control": cc}, nil))
			c := s.docs(t, newCIMDClock())
			for range 3 {
				if _, err := c.Get(context.Background(), s.docURL()); err != nil {
					t.Fatal(err)
				}
			}
			if n := s.requests.Load(); n != 3 {
				t.Fatalf("%d requests, want 3", n)
			}
		})
	}
}

func TestClientMetadataFreshness(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) string { return now.Add(d).Format(http.TimeFormat) }
	for _, c := range []struct {
		name   string
		header map[string][]string
		want   time.Duration
	}{
		{"nothing: the default", nil, 5 * time.Minute},
		{"max-age", map[string][]string{"Cache-Control": {"max-age=120"}}, 2 * time.Minute},
		{"max-age quoted", map[string][]string{"Cache-Control": {`max-age="120"`}}, 2 * time.Minute},
		{"max-age upper case, among others", map[string][]string{"Cache-Control": {"public, MAX-AGE=90, must-revalidate"}}, 90 * time.Second},
		{"the lower of two max-ages", map[string][]string{"Cache-Control": {"max-age=300", "max-age=30"}}, 30 * time.Second},
		{"s-maxage is a shared cache's", map[string][]string{"Cache-Control": {"s-maxage=3600"}}, 5 * time.Minute},
		{"max-age capped at a day", map[string][]string{"Cache-Control": {"max-age=31536000"}}, 24 * time.Hour},
		{"max-age beyond any integer", map[string][]string{"Cache-Control": {"max-age=999999999999999999999999"}}, 24 * time.Hour},
		{"a negative max-age is invalid: stale", map[string][]string{"Cache-Control": {"max-age=-5"}}, 0},
		{"an empty max-age is invalid: stale", map[string][]string{"Cache-Control": {"max-age="}}, 0},
		{"no-store", map[string][]string{"Cache-Control": {"max-age=60, no-store"}}, 0},
		{"no-cache with field names", map[string][]string{"Cache-Control": {`no-cache="set-cookie", max-age=60`}}, 0},
		{"max-age over Expires", map[string][]string{"Cache-Control": {"max-age=60"}, "Expires": {at(time.Hour)}}, time.Minute},
		{"Expires less Date", map[string][]string{"Expires": {at(time.Hour)}, "Date": {at(30 * time.Minute)}}, 30 * time.Minute},
		{"Expires less now without Date", map[string][]string{"Expires": {at(10 * time.Minute)}}, 10 * time.Minute},
		{"Expires in the past", map[string][]string{"Expires": {at(-time.Hour)}}, 0},
		{"an invalid Expires is in the past", map[string][]string{"Expires": {"0"}}, 0},
		{"Expires capped at a day", map[string][]string{"Expires": {at(30 * 24 * time.Hour)}}, 24 * time.Hour},
		{"Age is subtracted", map[string][]string{"Cache-Control": {"max-age=600"}, "Age": {"100"}}, 500 * time.Second},
		{"an Age beyond freshness", map[string][]string{"Cache-Control": {"max-age=60"}, "Age": {"100"}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.Header{}
			for k, vs := range c.header {
				for _, v := range vs {
					h.Add(k, v)
				}
			}
			if got := clientDocFreshness(h, now); got != c.want {
				t.Fatalf("freshness %v, want %v", got, c.want)
			}
		})
	}
}

// TestClientMetadataRefusals: every way a response or a document is
// refused, each the document's fault, none repeating it in the error;
// and the good neighbours of each.
func TestClientMetadataRefusals(t *testing.T) {
	const limit = 1 << 10
	padded := func(id string, n int) []byte { // a valid document n bytes long
		b := cimdDoc(id, nil)
		return append(b[:len(b)-1], append([]byte(strings.Repeat(" ", n-len(b))), '}')...)
	}
	for _, c := range []struct {
		name string
		// body is the document for the client id; nil: handler answers.
		body    func(id string) []byte
		header  map[string]string
		handler http.HandlerFunc
		ok      bool
		reason  string // in the error text
	}{
		{name: "a valid document", body: func(id string) []byte { return cimdDoc(id, nil) }, ok: true},
		{name: "a +json content type", body: func(id string) []byte { return cimdDoc(id, nil) }, header: map[string]string{"Content-Type": "application/oauth-client+json"}, ok: true},
		{name: "exactly MaxBytes", body: func(id string) []byte { return padded(id, limit) }, ok: true},
		{name: "client_id of another URL", body: func(id string) []byte {
			return cimdDoc("https://evil.example/"+cimdMarker, nil)
		}, reason: "client_id"},
		{name: "client_id of another spelling", body: func(id string) []byte { return cimdDoc(strings.Replace(id, "https", "HTTPS", 1), nil) }, reason: "client_id"},
		{name: "no client_id", body: func(id string) []byte { return cimdDoc(id, map[string]any{"client_id": nil}) }, reason: "client_id"},
		{name: "one byte over MaxBytes", body: func(id string) []byte { return padded(id, limit+1) }, reason: "over 1024 bytes"},
		{name: "over MaxBytes without a length", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			for range limit + 1 {
				_, _ = w.Write([]byte(" "))
				w.(http.Flusher).Flush()
			}
		}, reason: "over 1024 bytes"},
		{name: "text/html", body: func(id string) []byte { return cimdDoc(id, nil) }, header: map[string]string{"Content-Type": "text/html"}, reason: "content type"},
		{name: "no content type", body: func(id string) []byte { return cimdDoc(id, nil) }, header: map[string]string{"Content-Type": ""}, reason: "content type"},
		{name: "application/jsonp", body: func(id string) []byte { return cimdDoc(id, nil) }, header: map[string]string{"Content-Type": "application/jsonp"}, reason: "content type"},
		{name: "404", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write(cimdDoc("https://"+r.Host+r.URL.Path, nil))
		}, reason: "status is 404"},
		{name: "503", handler: func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }, reason: "status is 503"},
		{name: "not JSON", body: func(string) []byte { return []byte("<html>" + cimdMarker + "</html>") }, reason: "not a JSON object"},
		{name: "a JSON array", body: func(id string) []byte { return []byte(`["` + cimdMarker + `"]`) }, reason: "not a JSON object"},
		{name: "trailing data", body: func(id string) []byte { return append(cimdDoc(id, nil), `{"x":"`+cimdMarker+`"}`...) }, reason: "not a JSON object"},
		{name: "a duplicate member", body: func(id string) []byte {
			return []byte(`{"client_id":"` + id + `","redirect_uris":["https://app.example.com/cb"],"client_name":"a","client_name":"` + cimdMarker + `"}`)
		}, reason: "twice"},
		{name: "a duplicate unknown member", body: func(id string) []byte {
			return []byte(`{"client_id":"` + id + `","redirect_uris":["https://app.example.com/cb"],"x` + cimdMarker + `":1,"x` + cimdMarker + `":2}`)
		}, reason: "twice"},
		{name: "invalid UTF-8", body: func(id string) []byte {
			return []byte(`{"client_id":"` + id + `","redirect_uris":["https://app.example.com/cb"],"client_name":"` + cimdMarker + "\xff\"}")
		}, reason: "UTF-8"},
		{name: "a member of the wrong type", body: func(id string) []byte {
			return cimdDoc(id, map[string]any{"redirect_uris": "https://app.example.com/" + cimdMarker})
		}, reason: "wrong type"},
		{name: "no redirect_uris", body: func(id string) []byte { return cimdDoc(id, map[string]any{"redirect_uris": nil}) }, reason: "redirect_uris"},
		{name: "empty redirect_uris", body: func(id string) []byte { return cimdDoc(id, map[string]any{"redirect_uris": []string{}}) }, reason: "redirect_uris"},
		{name: "a confidential client", body: func(id string) []byte {
			return cimdDoc(id, map[string]any{"token_endpoint_auth_method": "client_secret_basic"})
		}, reason: "token_endpoint_auth_method"},
		{name: "a client secret", body: func(id string) []byte { return cimdDoc(id, map[string]any{"client_secret": cimdMarker}) }, reason: "client_secret"},
		{name: "the implicit grant", body: func(id string) []byte { return cimdDoc(id, map[string]any{"response_types": []string{"token"}}) }, reason: "response_types"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var body []byte
			h := c.handler
			if h == nil {
				h = func(w http.ResponseWriter, r *http.Request) {
					body = c.body("https://" + r.Host + r.URL.RequestURI())
					hdr := map[string]string{"Content-Type": "application/json"}
					for k, v := range c.header {
						hdr[k] = v
					}
					serveDoc(body, hdr)(w, r)
				}
			}
			s := newCIMDServer(t, h)
			cd := s.docs(t, newCIMDClock())
			cd.MaxBytes = limit
			doc, err := cd.Get(context.Background(), s.docURL())
			if c.ok {
				if err != nil || doc.ClientID != s.docURL() {
					t.Fatalf("Get: %v, %v", doc, err)
				}
				return
			}
			wantRefused(t, err, body)
			if doc != nil {
				t.Fatal("a document with the refusal")
			}
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("error %q does not name %q", err, c.reason)
			}
		})
	}
}

// TestClientMetadataRedirect: a redirect is refused, not followed, even
// to a valid document of the same client id.
func TestClientMetadataRedirect(t *testing.T) {
	var target atomic.Int32
	s := newCIMDServer(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere.json" {
			target.Add(1)
			serveDoc(cimdDoc("https://"+r.Host+"/client.json", nil), nil)(w, r)
			return
		}
		http.Redirect(w, r, "/elsewhere.json", http.StatusFound)
	})
	_, err := s.docs(t, newCIMDClock()).Get(context.Background(), s.docURL())
	wantRefused(t, err, nil)
	if !strings.Contains(err.Error(), "redirect") {
		t.Fatalf("error %q does not name the redirect", err)
	}
	if n := target.Load(); n != 0 {
		t.Fatalf("the redirect was followed (%d requests)", n)
	}
}

// TestClientMetadataRefusalRemembered: a refusal is remembered for a
// while, so that a hostile client id cannot make the endpoint fetch on
// every request; unavailability is not.
func TestClientMetadataRefusalRemembered(t *testing.T) {
	s := newCIMDServer(t, http.NotFound)
	clk := newCIMDClock()
	c := s.docs(t, clk)
	for range 3 {
		_, err := c.Get(context.Background(), s.docURL())
		wantRefused(t, err, nil)
	}
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("%d requests for a refused document, want 1", n)
	}
	clk.Advance(clientDocRefusalTTL + time.Second)
	_, err := c.Get(context.Background(), s.docURL())
	wantRefused(t, err, nil)
	if n := s.requests.Load(); n != 2 {
		t.Fatalf("%d requests once the refusal expired, want 2", n)
	}
}

// TestClientMetadataTimeout: a server that does not answer within
// Timeout makes the document unavailable, which a retry tries again.
func TestClientMetadataTimeout(t *testing.T) {
	// The server answers nothing until the test ends, whatever its
	// request's context says: a server that gave up early would answer
	// an empty 200, which is no timeout.
	release := make(chan struct{})
	s := newCIMDServer(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	t.Cleanup(func() { close(release) }) // before the server's Close, which waits for handlers
	c := s.docs(t, newCIMDClock())
	c.Timeout = 100 * time.Millisecond
	for i := range 2 {
		start := time.Now()
		_, err := c.Get(context.Background(), s.docURL())
		wantUnavailable(t, err)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %v does not wrap its cause", err)
		}
		if d := time.Since(start); d > 3*time.Second {
			t.Fatalf("Get took %v, Timeout is 100ms", d)
		}
		if n := s.requests.Load(); n != int32(i+1) {
			t.Fatalf("%d requests after %d Gets: unavailability was cached", n, i+1)
		}
	}
}

// TestClientMetadataLoopbackRefused is the SSRF test: a document on
// 127.0.0.1, its host not among PrivateHosts, is refused before any
// connection is made, whether the port is the https port or not.
func TestClientMetadataLoopbackRefused(t *testing.T) {
	s := newCIMDServer(t, serveOwnDoc(nil, nil))
	const address, port = "non-public address", "not on port"
	for _, c := range []struct {
		name   string
		docs   *ClientMetadataDocuments
		url    string
		reason string
	}{
		{"on the https port", &ClientMetadataDocuments{RootCAs: s.roots(), port: s.port()}, s.docURL(), address},
		{"on the https port, named in another spelling", &ClientMetadataDocuments{RootCAs: s.roots(), port: s.port(), PrivateHosts: []string{"localhost"}},
			"https://[::ffff:127.0.0.1]:" + s.port() + "/client.json", address},
		{"on another port", &ClientMetadataDocuments{RootCAs: s.roots()}, s.docURL(), port},
		{"a name that resolves to loopback", &ClientMetadataDocuments{RootCAs: s.roots(), port: s.port(), lookup: cimdResolve("127.0.0.1")},
			"https://docs.example.com:" + s.port() + "/client.json", address},
		{"a name that resolves to a public and a loopback address", &ClientMetadataDocuments{RootCAs: s.roots(), port: s.port(), lookup: cimdResolve("8.8.8.8", "127.0.0.1")},
			"https://docs.example.com:" + s.port() + "/client.json", address},
		{"the metadata service", &ClientMetadataDocuments{}, "https://169.254.169.254/latest/meta-data/", address},
		{"a name that resolves to the metadata service", &ClientMetadataDocuments{lookup: cimdResolve("169.254.169.254")}, "https://metadata.example.com/latest/meta-data/", address},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer cimdCloseIdle(c.docs)
			_, err := c.docs.Get(context.Background(), c.url)
			wantRefused(t, err, nil)
			if !strings.Contains(err.Error(), c.reason) {
				t.Errorf("error %q does not name %q", err, c.reason)
			}
			if r, n := s.requests.Load(), s.conns.Load(); r != 0 || n != 0 {
				t.Fatalf("the server saw %d requests on %d connections", r, n)
			}
		})
	}
}

// cimdResolve is a lookup that resolves every name to addrs.
func cimdResolve(addrs ...string) func(context.Context, string, string) ([]netip.Addr, error) {
	return func(context.Context, string, string) ([]netip.Addr, error) {
		var out []netip.Addr
		for _, a := range addrs {
			out = append(out, netip.MustParseAddr(a))
		}
		return out, nil
	}
}

// TestClientMetadataNameNotResolved: a name that does not resolve is
// unavailability (DNS may be failing), not remembered.
func TestClientMetadataNameNotResolved(t *testing.T) {
	var lookups atomic.Int32
	c := &ClientMetadataDocuments{lookup: func(_ context.Context, _, host string) ([]netip.Addr, error) {
		lookups.Add(1)
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}}
	for range 2 {
		_, err := c.Get(context.Background(), "https://gone.example.com/client.json")
		wantUnavailable(t, err)
		if strings.Contains(err.Error(), "no such host") {
			t.Fatalf("error %q repeats the resolver's, which names the host unquoted", err)
		}
	}
	if n := lookups.Load(); n != 2 {
		t.Fatalf("%d lookups for 2 Gets", n)
	}
}

// TestClientMetadataUntrustedCertificate: a certificate the roots do not
// vouch for is the URL's fault.
func TestClientMetadataUntrustedCertificate(t *testing.T) {
	s := newCIMDServer(t, serveOwnDoc(nil, nil))
	c := &ClientMetadataDocuments{PrivateHosts: []string{"127.0.0.1"}, RootCAs: x509.NewCertPool()}
	defer cimdCloseIdle(c)
	_, err := c.Get(context.Background(), s.docURL())
	wantRefused(t, err, nil)
	if !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("error %q does not name the certificate", err)
	}
}

// TestClientMetadataPlainServer: a host that answers https in plain
// HTTP is the URL's fault.
func TestClientMetadataPlainServer(t *testing.T) {
	s := httptest.NewServer(serveOwnDoc(nil, nil))
	defer s.Close()
	c := &ClientMetadataDocuments{PrivateHosts: []string{"127.0.0.1"}}
	defer cimdCloseIdle(c)
	_, err := c.Get(context.Background(), "https://"+s.Listener.Addr().String()+"/client.json")
	wantRefused(t, err, nil)
	if !strings.Contains(err.Error(), "TLS") {
		t.Fatalf("error %q does not name TLS", err)
	}
}

// TestClientMetadataURLs: what is not a metadata document URL is refused
// before anything is fetched.
func TestClientMetadataURLs(t *testing.T) {
	s := newCIMDServer(t, serveOwnDoc(nil, nil))
	c := s.docs(t, newCIMDClock())
	long := "https://app.example.com/" + strings.Repeat("a", MaxClientIDBytes)
	for _, c2 := range []struct {
		id string
		ok bool
	}{
		{"https://app.example.com/client.json", true},
		{"https://app.example.com/oauth/client?v=2", true},
		{"https://app.example.com:443/client.json", true},
		{"https://[2001:db8::1]/client.json", true},
		{long[:MaxClientIDBytes], true},
		{long[:MaxClientIDBytes+1], false},
		{"http://app.example.com/client.json", false},
		{"HTTPS://app.example.com/client.json", false},
		{"https://app.example.com", false},
		{"https://app.example.com/", false},
		{"https://app.example.com?x=1", false},
		{"https://app.example.com/client.json#x", false},
		{"https://app.example.com/client.json#", false},
		{"https://user@app.example.com/client.json", false},
		{"https://user:pw@app.example.com/client.json", false},
		{"https://app.example.com/a/../client.json", false},
		{"https://app.example.com/./client.json", false},
		{"https://app.example.com/a/%2e%2e/client.json", false},
		{"https://app.example.com/a/..", false},
		{"https:///client.json", false},
		{"https://:443/client.json", false},
		{"https://app.example.com:/client.json", false},
		{"https://app.example.com:0/client.json", false},
		{"https://app.example.com:70000/client.json", false},
		{"https://[fe80::1%25eth0]/client.json", false},
		{"https://app.example.com/client json", false},
		{"https://app.example.com/client\\..\\x", false},
		{"https://app.exämple.com/client.json", false},
		{"https://app.example.com/client\x00.json", false},
		{"https:app.example.com/client.json", false},
		{"client-1", false},
		{"", false},
	} {
		if got := IsClientMetadataURL(c2.id); got != c2.ok {
			t.Errorf("IsClientMetadataURL(%q) = %v", c2.id, got)
		}
	}
	for _, id := range []string{
		"http://127.0.0.1:" + s.port() + "/client.json",
		strings.Replace(s.docURL(), "/client.json", "/a/../client.json", 1),
		s.docURL() + "#frag",
		long + "<script>MARKER",
	} {
		_, err := c.Get(context.Background(), id)
		wantRefused(t, err, nil)
	}
	// Another port than 443 is refused for a host not in PrivateHosts,
	// before any lookup.
	c3 := &ClientMetadataDocuments{lookup: func(context.Context, string, string) ([]netip.Addr, error) {
		t.Error("a lookup for a URL refused by its port")
		return nil, errors.New("no")
	}}
	_, err := c3.Get(context.Background(), "https://app.example.com:8443/client.json")
	wantRefused(t, err, nil)
	if r := s.requests.Load(); r != 0 {
		t.Fatalf("the server saw %d requests", r)
	}
}

// TestClientMetadataAddresses is the address check's table.
func TestClientMetadataAddresses(t *testing.T) {
	for _, c := range []struct {
		addr string
		ok   bool
	}{
		{"169.254.169.254", false}, // the EC2 and Lambda metadata services
		{"169.254.170.2", false},   // the ECS task metadata endpoint
		{"10.0.0.1", false},
		{"192.168.1.1", false},
		{"172.16.0.1", false},
		{"172.31.255.255", false},
		{"100.64.0.1", false},
		{"100.127.255.254", false},
		{"127.0.0.1", false},
		{"127.1.2.3", false},
		{"0.0.0.0", false},
		{"0.1.2.3", false},
		{"224.0.0.1", false},
		{"239.255.255.250", false},
		{"255.255.255.255", false},
		{"240.0.0.1", false},
		{"192.0.0.170", false},
		{"192.0.2.1", false},
		{"198.18.0.1", false},
		{"198.51.100.7", false},
		{"203.0.113.9", false},
		{"::", false},
		{"::1", false},
		{"fe80::1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fec0::1", false},
		{"ff02::1", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:169.254.169.254", false},
		{"::ffff:10.0.0.1", false},
		{"::127.0.0.1", false}, // IPv4-compatible
		{"64:ff9b::a00:1", false},
		{"64:ff9b::7f00:1", false},
		{"64:ff9b::a9fe:a9fe", false},
		{"64:ff9b:1::808:808", false}, // local-use NAT64
		{"2002:a00:1::1", false},      // 6to4 of 10.0.0.1
		{"2002:7f00:1::1", false},     // 6to4 of 127.0.0.1
		{"2001::1", false},            // Teredo
		{"2001:db8::1", false},
		{"3fff::1", false},
		{"100::1", false},
		{"fe80::1%eth0", false},
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"172.32.0.1", true},
		{"100.128.0.1", true},
		{"2001:4860:4860::8888", true},
		{"2606:4700:4700::1111", true},
		{"::ffff:8.8.8.8", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"2002:808:808::1", true},  // 6to4 of 8.8.8.8
	} {
		if got := isPublicAddress(netip.MustParseAddr(c.addr)); got != c.ok {
			t.Errorf("isPublicAddress(%s) = %v, want %v", c.addr, got, c.ok)
		}
	}
	if isPublicAddress(netip.Addr{}) {
		t.Error("the zero Addr is public")
	}
}

// TestClientMetadataControl: the dialer checks the address it connects
// to once more, however it came to it.
func TestClientMetadataControl(t *testing.T) {
	c := &ClientMetadataDocuments{}
	for _, a := range []string{"127.0.0.1:443", "[::1]:443", "[::ffff:169.254.169.254]:443", "10.0.0.1:443", "8.8.8.8:80", "8.8.8.8", "nonsense"} {
		if err := c.control("tcp", a, nil); !errors.Is(err, errNonPublicAddress) {
			t.Errorf("control(%s) = %v", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8:443", "[2001:4860:4860::8888]:443"} {
		if err := c.control("tcp", a, nil); err != nil {
			t.Errorf("control(%s) = %v", a, err)
		}
	}
}

// TestClientMetadataConcurrent: concurrent Gets of one URL share one
// fetch, and a caller that gives up does not fail the others.
func TestClientMetadataConcurrent(t *testing.T) {
	gate := make(chan struct{})
	s := newCIMDServer(t, func(w http.ResponseWriter, r *http.Request) {
		<-gate
		serveOwnDoc(nil, nil)(w, r)
	})
	c := s.docs(t, newCIMDClock())
	impatient, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 1)
	go func() {
		_, err := c.Get(impatient, s.docURL())
		errs <- err
	}()
	for s.requests.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	err := <-errs
	wantUnavailable(t, err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v does not wrap the cancellation", err)
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			if _, err := c.Get(context.Background(), s.docURL()); err != nil {
				t.Error(err)
			}
		})
	}
	time.Sleep(20 * time.Millisecond)
	close(gate)
	wg.Wait()
	if n := s.requests.Load(); n != 1 {
		t.Fatalf("%d requests, want 1", n)
	}
}

// TestClientMetadataEviction: a full cache keeps the entries expiring
// last; an entry that would expire first is not kept.
func TestClientMetadataEviction(t *testing.T) {
	counts := map[string]*atomic.Int32{"/a": {}, "/b": {}, "/c": {}, "/d": {}}
	ages := map[string]string{"/a": "max-age=100", "/b": "max-age=300", "/c": "max-age=200", "/d": "max-age=50"}
	s := newCIMDServer(t, func(w http.ResponseWriter, r *http.Request) {
		counts[r.URL.Path].Add(1)
		serveOwnDoc(map[string]string{"Cache-Control": ages[r.URL.Path]}, nil)(w, r)
	})
	c := s.docs(t, newCIMDClock())
	c.MaxEntries = 2
	get := func(p string) {
		t.Helper()
		if _, err := c.Get(context.Background(), s.URL+p); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"/a", "/b", "/c", "/d", "/a", "/b", "/c", "/d"} {
		get(p)
	}
	// /a is pushed out by /c, /d is never kept; /b and /c stay.
	want := map[string]int32{"/a": 2, "/b": 1, "/c": 1, "/d": 2}
	for p, n := range want {
		if got := counts[p].Load(); got != n {
			t.Errorf("%s fetched %d times, want %d", p, got, n)
		}
	}
	if len(c.entries) > 2 {
		t.Fatalf("%d entries, MaxEntries 2", len(c.entries))
	}
}

func TestParseClientMetadataDocument(t *testing.T) {
	const id = "https://app.example.com/client.json"
	for _, c := range []struct {
		name    string
		changes map[string]any
		raw     string // instead of cimdDoc(id, changes)
		reason  string // "" accepted
		check   func(t *testing.T, d *ClientMetadataDocument)
	}{
		{name: "valid", check: func(t *testing.T, d *ClientMetadataDocument) {
			if d.ClientID != id || d.ClientName != cimdMarker || len(d.RedirectURIs) != 2 || !slices.Equal(d.ResponseTypes, []string{"code"}) {
				t.Fatalf("%+v", d)
			}
		}},
		{name: "minimal", raw: `{"client_id":"` + id + `","redirect_uris":["com.example.app:/callback"]}`, check: func(t *testing.T, d *ClientMetadataDocument) {
			if !slices.Equal(d.GrantTypes, []string{"authorization_code"}) || d.TokenEndpointAuthMethod != "" || d.ClientName != "" {
				t.Fatalf("%+v", d)
			}
		}},
		{name: "unknown members ignored", changes: map[string]any{"logo_uri": "https://x/logo.png", "software_id": map[string]any{"a": []any{1, 2}}}},
		{name: "null members are absent", raw: `{"client_id":"` + id + `","redirect_uris":["https://a.example/cb"],"grant_types":null,"client_name":null}`},
		{name: "auth method none", changes: map[string]any{"token_endpoint_auth_method": "none"}},
		{name: "auth method private_key_jwt", changes: map[string]any{"token_endpoint_auth_method": "private_key_jwt"}, reason: "token_endpoint_auth_method"},
		{name: "client_secret_expires_at", changes: map[string]any{"client_secret_expires_at": 0}, reason: "client_secret"},
		{name: "a null client_secret", raw: `{"client_id":"` + id + `","redirect_uris":["https://a.example/cb"],"client_secret":null}`, reason: "client_secret"},
		{name: "member names are case-sensitive", raw: `{"Client_ID":"` + id + `","redirect_uris":["https://a.example/cb"]}`, reason: "client_id"},
		{name: "a password grant", changes: map[string]any{"grant_types": []string{"authorization_code", "password"}}, reason: "grant_types"},
		{name: "refresh_token alone", changes: map[string]any{"grant_types": []string{"refresh_token"}}, reason: "authorization_code"},
		{name: "no grant types", changes: map[string]any{"grant_types": []string{}}, reason: "authorization_code"},
		{name: "no response types", changes: map[string]any{"response_types": []string{}}, reason: "response_types"},
		{name: "code and token", changes: map[string]any{"response_types": []string{"code", "token"}}, reason: "response_types"},
		{name: "a fragment", changes: map[string]any{"redirect_uris": []string{"https://a.example/cb#" + cimdMarker}}, reason: "redirect_uris[0] has a fragment"},
		{name: "an empty fragment", changes: map[string]any{"redirect_uris": []string{"https://a.example/cb", "https://a.example/cb#"}}, reason: "redirect_uris[1] has a fragment"},
		{name: "a relative URI", changes: map[string]any{"redirect_uris": []string{"/cb"}}, reason: "absolute"},
		{name: "an empty URI", changes: map[string]any{"redirect_uris": []string{""}}, reason: "absolute"},
		{name: "javascript", changes: map[string]any{"redirect_uris": []string{"javascript:alert('" + cimdMarker + "')"}}, reason: "scheme"},
		{name: "JavaScript", changes: map[string]any{"redirect_uris": []string{"JavaScript:alert(1)"}}, reason: "scheme"},
		{name: "data", changes: map[string]any{"redirect_uris": []string{"data:text/html,x"}}, reason: "scheme"},
		{name: "https without a host", changes: map[string]any{"redirect_uris": []string{"https:/cb"}}, reason: "host"},
		{name: "user info", changes: map[string]any{"redirect_uris": []string{"https://app.example.com@evil.example/cb"}}, reason: "user info"},
		{name: "a space", changes: map[string]any{"redirect_uris": []string{"https://a.example/c b"}}, reason: "space"},
		{name: "not ASCII", changes: map[string]any{"redirect_uris": []string{"https://a.example/cb/é"}}, reason: "ASCII"},
		{name: "a bad port", changes: map[string]any{"redirect_uris": []string{"https://a.example:x/cb"}}, reason: "not a URI"},
		{name: "client_uri javascript", changes: map[string]any{"client_uri": "javascript:alert(1)"}, reason: "client_uri"},
		{name: "client_uri with user info", changes: map[string]any{"client_uri": "https://u@a.example/"}, reason: "client_uri"},
		{name: "a client_id that is no metadata URL", raw: `{"client_id":"client-1","redirect_uris":["https://a.example/cb"]}`, reason: "client_id"},
		{name: "empty", raw: " \n", reason: "not a JSON object"},
		{name: "null", raw: `null`, reason: "not a JSON object"},
		{name: "deep", raw: `{"client_id":"` + id + `","redirect_uris":["https://a.example/cb"],"x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`, reason: "not a JSON object"},
	} {
		t.Run(c.name, func(t *testing.T) {
			body := []byte(c.raw)
			if c.raw == "" {
				body = cimdDoc(id, c.changes)
			}
			d, err := ParseClientMetadataDocument(id, body)
			if c.reason == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.check != nil {
					c.check(t, d)
				}
				return
			}
			wantRefused(t, err, body)
			if !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("error %q does not name %q", err, c.reason)
			}
		})
	}
	if _, err := ParseClientMetadataDocument("client-1", []byte(`{"client_id":"client-1","redirect_uris":["https://a.example/cb"]}`)); !errors.Is(err, ErrClientMetadata) {
		t.Fatalf("a document for a client id that is no URL: %v", err)
	}
}

// maxFuzzClientDoc bounds the inputs FuzzClientMetadataDocument looks
// at while fuzzing (a fuzz worker; go test runs every seed whole): the
// engine minimizes every input that brings new coverage, trying up to
// n²/2 shorter ones for n bytes, and executes nothing else meanwhile,
// so a few KB-long inputs stall it for minutes.
const maxFuzzClientDoc = 1024

// FuzzClientMetadataDocument: ParseClientMetadataDocument never panics;
// a refusal is ErrClientMetadata, its text the quoted client id and a
// reason of the package's own words (none of the characters a JSON
// value or markup would bring); an accepted document is for the client
// id, with redirect URIs each absolute and without a fragment, and the
// grants of a public client of the authorization code grant.
func FuzzClientMetadataDocument(f *testing.F) {
	const id = "https://app.example.com/client.json"
	f.Add(id, cimdDoc(id, nil))
	fuzzing := flag.Lookup("test.fuzzworker")
	f.Fuzz(func(t *testing.T, clientID string, body []byte) {
		if fuzzing != nil && fuzzing.Value.String() == "true" && len(clientID)+len(body) > maxFuzzClientDoc {
			t.Skip("longer than the fuzzer's bound; the seeds are run whole by go test")
		}
		doc, err := ParseClientMetadataDocument(clientID, body)
		if err != nil {
			if !errors.Is(err, ErrClientMetadata) || errors.Is(err, ErrClientMetadataUnavailable) {
				t.Fatalf("refusal %v is not ErrClientMetadata", err)
			}
			reason, ok := strings.CutPrefix(err.Error(), ErrClientMetadata.Error()+": "+clientDocName(clientID)+": ")
			if !ok {
				t.Fatalf("refusal %q does not begin with the quoted client id", err)
			}
			if strings.ContainsAny(reason, "\"<>{}\\") || strings.ContainsFunc(reason, func(r rune) bool { return r < ' ' || r > '~' }) {
				t.Fatalf("refusal %q has a reason that could repeat the document", err)
			}
			return
		}
		if doc.ClientID != clientID || !IsClientMetadataURL(clientID) {
			t.Fatalf("accepted a document for client id %q, not %q", doc.ClientID, clientID)
		}
		if len(doc.RedirectURIs) == 0 {
			t.Fatal("accepted without redirect URIs")
		}
		for _, r := range doc.RedirectURIs {
			u, err := url.Parse(r)
			if err != nil || !u.IsAbs() || u.Fragment != "" || strings.Contains(r, "#") {
				t.Fatalf("accepted redirect URI %q", r)
			}
		}
		if m := doc.TokenEndpointAuthMethod; m != "" && m != "none" {
			t.Fatalf("accepted auth method %q", m)
		}
		if !slices.Contains(doc.GrantTypes, "authorization_code") || slices.ContainsFunc(doc.GrantTypes, func(g string) bool { return g != "authorization_code" && g != "refresh_token" }) {
			t.Fatalf("accepted grant types %q", doc.GrantTypes)
		}
		if len(doc.ResponseTypes) == 0 || slices.ContainsFunc(doc.ResponseTypes, func(r string) bool { return r != "code" }) {
			t.Fatalf("accepted response types %q", doc.ResponseTypes)
		}
	})
}
