package auth

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Client ID metadata documents (the MCP authorization spec of 2026-07-28,
// after draft-ietf-oauth-client-id-metadata-document): a client that has
// not registered names itself by an https URL, and the authorization
// server fetches the JSON document at that URL to learn the client's
// redirect URIs. The fetch is made to a URL any client chooses, from
// inside the deployment's network, so it is the textbook server-side
// request forgery: everything below exists to keep a client id from
// reaching what the endpoint can reach and the client cannot (the
// Lambda or EC2 metadata service at 169.254.169.254, a VPC's private
// hosts, the loopback interface), from making the endpoint wait or read
// without bound, and from making it fetch on every request.

// MaxClientIDBytes bounds a client ID metadata document URL. Real ones
// are a few dozen bytes; the bound keeps a hostile one out of the cache
// keys and the error texts.
const MaxClientIDBytes = 2048

// ErrClientMetadata is wrapped by every refusal that is the client's
// document's fault or its URL's: the client id is refused (the proxy
// answers invalid_client, or invalid_request for a redirect URI), and a
// retry would be refused alike. Such refusals are remembered for a short
// while, so that a hostile client id does not make the endpoint fetch on
// every request.
var ErrClientMetadata = errors.New("auth: client metadata document refused")

// ErrClientMetadataUnavailable is wrapped when the document could not be
// had at all (a timeout, a name that does not resolve, a connection that
// fails): nothing is known about the client, and a retry may succeed, so
// it is neither the client's fault nor remembered.
var ErrClientMetadataUnavailable = errors.New("auth: client metadata document unavailable")

// The defaults of ClientMetadataDocuments, and the bounds it keeps.
const (
	clientDocDefaultMaxBytes   = 5 << 10
	clientDocDefaultTimeout    = 5 * time.Second
	clientDocDefaultMaxEntries = 256
	// clientDocDefaultFreshness is a document's freshness when its
	// response says nothing about caching: long enough that an
	// authorization flow's several requests fetch once, short enough that
	// a client's change of redirect URIs is seen soon.
	clientDocDefaultFreshness = 5 * time.Minute
	// clientDocMaxFreshness caps what a response may ask for, so that a
	// document is re-read at least daily.
	clientDocMaxFreshness = 24 * time.Hour
	// clientDocRefusalTTL is how long a refusal is remembered.
	clientDocRefusalTTL = 30 * time.Second
	// clientDocMaxHeaderBytes bounds the response's header, which
	// MaxBytes does not cover.
	clientDocMaxHeaderBytes = 16 << 10
	// clientDocHTTPSPort is the only port of a host not in PrivateHosts:
	// other ports of public hosts are where services that were never
	// meant to be web servers answer.
	clientDocHTTPSPort = "443"
)

// IsClientMetadataURL reports whether clientID is a client ID metadata
// document URL: https, a host, a path other than "" or "/", no fragment,
// no user info, no dot segments, printable ASCII only (no backslash,
// which some servers read as a slash), at most
// MaxClientIDBytes long. A query is allowed. The proxy uses it to tell a
// metadata document's client id from a pre-registered one; the URL is
// compared with the document's client_id as a string, so it is not
// normalised, and a spelling that would be (an upper-case scheme, dot
// segments) is refused rather than guessed at.
func IsClientMetadataURL(clientID string) bool {
	if len(clientID) > MaxClientIDBytes || !strings.HasPrefix(clientID, "https://") {
		return false
	}
	for i := 0; i < len(clientID); i++ {
		if b := clientID[i]; b <= ' ' || b >= 0x7f || b == '#' || b == '\\' {
			return false
		}
	}
	u, err := url.Parse(clientID)
	if err != nil || u.Scheme != "https" || u.Opaque != "" || u.User != nil {
		return false
	}
	host := u.Hostname()
	if host == "" || strings.Contains(host, "%") || strings.HasSuffix(u.Host, ":") {
		return false // no host, an IPv6 zone, an empty port
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.ParseUint(p, 10, 16); err != nil || n == 0 {
			return false
		}
	}
	if u.Path == "" || u.Path == "/" {
		return false
	}
	for seg := range strings.SplitSeq(u.Path, "/") {
		if seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

// ClientMetadataDocument is what the proxy uses from a client's metadata
// document, checked: its other members are ignored.
type ClientMetadataDocument struct {
	// ClientID is the document's client_id, equal to the URL it was
	// fetched from: a document cannot speak for another client.
	ClientID string
	// ClientName may be "". It is the client's own say, never to be shown
	// without escaping (the caller escapes), nor trusted as an identity.
	ClientName string
	// ClientURI is "" or an absolute http or https URL with a host and no
	// user info: safe to link to, not proof of anything.
	ClientURI string
	// RedirectURIs are the only redirect URIs an authorization request of
	// this client may name, each compared whole: non-empty, each an
	// absolute URI of printable ASCII without a fragment, and not of a
	// scheme a browser would run (javascript, data, ...); an http or https
	// one has a host and no user info.
	RedirectURIs []string
	// TokenEndpointAuthMethod is "" or "none": a client identified by a
	// URL has no secret to keep, and proves itself with PKCE.
	TokenEndpointAuthMethod string
	// GrantTypes are authorization_code (always) and maybe refresh_token;
	// ["authorization_code"] when the document names none.
	GrantTypes []string
	// ResponseTypes is ["code"].
	ResponseTypes []string
}

// clone is a copy that shares no slice with d, so that what one caller
// does with a document does not change the cache's.
func (d *ClientMetadataDocument) clone() *ClientMetadataDocument {
	c := *d
	c.RedirectURIs = slices.Clone(d.RedirectURIs)
	c.GrantTypes = slices.Clone(d.GrantTypes)
	c.ResponseTypes = slices.Clone(d.ResponseTypes)
	return &c
}

// ClientMetadataDocuments fetches client ID metadata documents with a
// bounded client and caches them by their own caching headers. The zero
// value is usable, with the defaults below; the fields are read on the
// first Get and must not change after it. Safe for concurrent use; not
// to be copied after first use.
//
// What is fetched is bounded on every side: only https; for a host not
// in PrivateHosts, only port 443 and only public addresses (every
// address a name resolves to is checked before any connection, and the
// connection is made to a checked address, so a name that resolves
// otherwise the second time gains nothing); no redirect followed, no proxy from the
// environment, a body of at most MaxBytes, the whole fetch within
// Timeout. Concurrent Gets of one URL share one fetch.
//
// A document is kept as long as its response allows (Cache-Control
// max-age, else Expires, else 5 minutes; no-store and no-cache: not
// kept; never beyond 24 hours), a refusal for 30 seconds, an
// unavailability not at all.
type ClientMetadataDocuments struct {
	// MaxBytes bounds the document's body: 5 KiB when 0 or less. A longer
	// body is refused; at most MaxBytes+1 bytes are read.
	MaxBytes int64
	// Timeout bounds a whole fetch, from the name's resolution to the
	// body's last byte: 5 s when 0 or less. It runs whatever the caller's
	// context, so that a caller that gives up does not fail the others
	// waiting for the same document.
	Timeout time.Duration
	// MaxEntries bounds the cache: 256 when 0 or less. When it is full,
	// the entry that would expire soonest, the one being added included,
	// is not kept, so that a flood of refused client ids does not push
	// out the documents of the clients in use.
	MaxEntries int
	// PrivateHosts are host names (exact, case-insensitive) that may
	// resolve to non-public addresses, on any port: for a deployment whose
	// clients' documents live inside its network, and for tests on
	// loopback. Empty: every address is checked.
	PrivateHosts []string
	// RootCAs, when set, replaces the system roots for the fetch (tests).
	// nil: the system roots (which honour SSL_CERT_FILE on Linux).
	RootCAs *x509.CertPool
	// Now is the cache's clock; nil: time.Now.
	Now func() time.Time

	// lookup resolves a host name not in PrivateHosts; nil:
	// net.DefaultResolver.LookupNetIP. Tests put names where they want.
	lookup func(ctx context.Context, network, host string) ([]netip.Addr, error)
	// port is the only port of a host not in PrivateHosts; "":
	// clientDocHTTPSPort. Tests move it to their server's.
	port string

	once    sync.Once
	private map[string]bool // PrivateHosts, lower case
	client  *http.Client
	checked net.Dialer // for addresses that were checked, checking again
	plain   net.Dialer // for PrivateHosts

	mu       sync.Mutex
	entries  map[string]*clientDocEntry
	inflight map[string]*clientDocFetch
}

// clientDocEntry is a cached outcome: a document or a refusal.
type clientDocEntry struct {
	doc     *ClientMetadataDocument
	err     error
	expires time.Time
}

// clientDocFetch is a fetch under way, which every Get of its URL waits
// for; doc and err are set before done is closed.
type clientDocFetch struct {
	done chan struct{}
	doc  *ClientMetadataDocument
	err  error
}

func (c *ClientMetadataDocuments) maxBytes() int64 {
	if c.MaxBytes > 0 {
		return c.MaxBytes
	}
	return clientDocDefaultMaxBytes
}

func (c *ClientMetadataDocuments) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return clientDocDefaultTimeout
}

func (c *ClientMetadataDocuments) maxEntries() int {
	if c.MaxEntries > 0 {
		return c.MaxEntries
	}
	return clientDocDefaultMaxEntries
}

func (c *ClientMetadataDocuments) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

func (c *ClientMetadataDocuments) httpsPort() string {
	if c.port != "" {
		return c.port
	}
	return clientDocHTTPSPort
}

// setup builds, once, what the fields configure: the set of private
// hosts and the HTTP client.
func (c *ClientMetadataDocuments) setup() {
	c.once.Do(func() {
		c.private = make(map[string]bool, len(c.PrivateHosts))
		for _, h := range c.PrivateHosts {
			c.private[strings.ToLower(h)] = true
		}
		c.checked.Control = c.control
		c.client = &http.Client{
			Transport: &http.Transport{
				Proxy:                  nil, // never HTTPS_PROXY: the proxy would connect where the checks cannot see
				DialContext:            c.dial,
				TLSClientConfig:        &tls.Config{RootCAs: c.RootCAs, MinVersion: tls.VersionTLS12},
				TLSHandshakeTimeout:    c.timeout(),
				ResponseHeaderTimeout:  c.timeout(),
				MaxResponseHeaderBytes: clientDocMaxHeaderBytes,
				MaxIdleConns:           16,
				IdleConnTimeout:        30 * time.Second,
			},
			// A redirect is answered, not followed: the URL is the client's
			// identity, and a redirect could lead anywhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	})
}

func (c *ClientMetadataDocuments) isPrivate(host string) bool {
	return c.private[strings.ToLower(host)]
}

// Get returns the document clientID names, from the cache while it is
// fresh, else fetched (and cached as its response says). The document
// returned is the caller's own copy.
//
// A refusal wraps ErrClientMetadata: clientID is not a metadata document
// URL, not on port 443, its host has a non-public address or an invalid
// certificate, the response is a redirect, not 200, not JSON or too big,
// or the document is not valid for clientID (ParseClientMetadataDocument).
// When the document cannot be had (a timeout, a name that does not
// resolve, a failed connection, the caller's context done) the error
// wraps ErrClientMetadataUnavailable instead. Error texts never contain
// the document's bytes or values from it; they name the URL only quoted
// (strconv.Quote), so they are safe to log.
func (c *ClientMetadataDocuments) Get(ctx context.Context, clientID string) (*ClientMetadataDocument, error) {
	if !IsClientMetadataURL(clientID) {
		return nil, clientDocRefused(clientID, "not a client ID metadata document URL (https, a host and a path, without fragment, user info or dot segments)")
	}
	c.setup()
	u, err := url.Parse(clientID)
	if err != nil {
		return nil, clientDocRefused(clientID, "not a URL") // IsClientMetadataURL parsed it: unreachable
	}
	if p := u.Port(); p != "" && p != c.httpsPort() && !c.isPrivate(u.Hostname()) {
		return nil, clientDocRefused(clientID, "not on port "+c.httpsPort())
	}

	c.mu.Lock()
	if e, ok := c.entries[clientID]; ok {
		if c.now().Before(e.expires) {
			c.mu.Unlock()
			return clientDocResult(e.doc, e.err)
		}
		delete(c.entries, clientID)
	}
	f, ok := c.inflight[clientID]
	if !ok {
		f = &clientDocFetch{done: make(chan struct{})}
		if c.inflight == nil {
			c.inflight = make(map[string]*clientDocFetch)
		}
		c.inflight[clientID] = f
		go c.run(context.WithoutCancel(ctx), clientID, f)
	}
	c.mu.Unlock()

	select {
	case <-f.done:
		return clientDocResult(f.doc, f.err)
	case <-ctx.Done():
		return nil, clientDocUnavailable(clientID, "the caller stopped waiting for the client's metadata document", ctx.Err())
	}
}

func clientDocResult(doc *ClientMetadataDocument, err error) (*ClientMetadataDocument, error) {
	if err != nil {
		return nil, err
	}
	return doc.clone(), nil
}

// run fetches clientID for f, caches the outcome and publishes it.
// Unavailability is not cached: the next Get tries again.
func (c *ClientMetadataDocuments) run(ctx context.Context, clientID string, f *clientDocFetch) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	doc, fresh, err := c.fetch(ctx, clientID)
	c.mu.Lock()
	now := c.now()
	switch {
	case err == nil && fresh > 0:
		c.store(clientID, &clientDocEntry{doc: doc, expires: now.Add(fresh)}, now)
	case errors.Is(err, ErrClientMetadata):
		c.store(clientID, &clientDocEntry{err: err, expires: now.Add(clientDocRefusalTTL)}, now)
	}
	f.doc, f.err = doc, err
	delete(c.inflight, clientID)
	c.mu.Unlock()
	close(f.done)
}

// store caches e under clientID, within MaxEntries: when the cache is
// full, expired entries go first, then the entries expiring soonest, e
// itself if none expires sooner. c.mu is held.
func (c *ClientMetadataDocuments) store(clientID string, e *clientDocEntry, now time.Time) {
	if c.entries == nil {
		c.entries = make(map[string]*clientDocEntry)
	}
	if _, ok := c.entries[clientID]; !ok && len(c.entries) >= c.maxEntries() {
		for k, old := range c.entries {
			if !now.Before(old.expires) {
				delete(c.entries, k)
			}
		}
		for len(c.entries) >= c.maxEntries() {
			soonest := ""
			for k, old := range c.entries {
				if soonest == "" || old.expires.Before(c.entries[soonest].expires) {
					soonest = k
				}
			}
			if !c.entries[soonest].expires.Before(e.expires) {
				return // e would be the first to go
			}
			delete(c.entries, soonest)
		}
	}
	c.entries[clientID] = e
}

// fetch gets and checks the document at clientID, and says how long it
// stays fresh.
func (c *ClientMetadataDocuments) fetch(ctx context.Context, clientID string) (*ClientMetadataDocument, time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, clientID, nil)
	if err != nil {
		return nil, 0, clientDocRefused(clientID, "not a URL a request can be made to")
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.client.Do(req)
	if err != nil {
		return nil, 0, clientDocFailure(ctx, clientID, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		return nil, 0, clientDocRefused(clientID, "the response is a redirect, which is not followed")
	case resp.StatusCode != http.StatusOK:
		return nil, 0, clientDocRefused(clientID, fmt.Sprintf("the response's status is %d, not 200", resp.StatusCode))
	}
	if !isJSONMediaType(resp.Header.Get("Content-Type")) {
		return nil, 0, clientDocRefused(clientID, "the response's content type is not JSON (application/json or application/*+json)")
	}
	limit := c.maxBytes()
	tooBig := clientDocRefused(clientID, fmt.Sprintf("the document is over %d bytes", limit))
	if resp.ContentLength > limit {
		return nil, 0, tooBig
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, 0, clientDocFailure(ctx, clientID, err)
	}
	if int64(len(body)) > limit {
		return nil, 0, tooBig
	}
	doc, err := ParseClientMetadataDocument(clientID, body)
	if err != nil {
		return nil, 0, err
	}
	return doc, clientDocFreshness(resp.Header, c.now()), nil
}

// errNonPublicAddress is the dialer's refusal of an address or a port;
// it never leaves the package unwrapped.
var errNonPublicAddress = errors.New("not a public address on the https port")

// clientDocFailure classifies an error of the round trip: the URL's
// fault (a refused address, a certificate that is not the host's, a host
// that does not speak TLS), or unavailability. The cause is kept for
// errors.Is and errors.As but not in the text: a *net.DNSError or a
// *url.Error would repeat the host or the URL unquoted.
func clientDocFailure(ctx context.Context, clientID string, err error) error {
	var (
		certErr   *tls.CertificateVerificationError
		recordErr tls.RecordHeaderError
		dnsErr    *net.DNSError
	)
	switch {
	case errors.Is(err, errNonPublicAddress):
		return clientDocRefused(clientID, "its host has a non-public address (loopback, private, link-local, shared, reserved or multicast) or the port is not "+clientDocHTTPSPort)
	case errors.As(err, &certErr):
		return clientDocRefused(clientID, "its host's TLS certificate is not valid for it")
	case errors.Is(err, http.ErrSchemeMismatch) || errors.As(err, &recordErr):
		return clientDocRefused(clientID, "its host does not speak TLS")
	case ctx.Err() != nil:
		return clientDocUnavailable(clientID, "the fetch timed out or was cancelled", err)
	case errors.As(err, &dnsErr):
		return clientDocUnavailable(clientID, "its host name does not resolve", err)
	default:
		return clientDocUnavailable(clientID, "the fetch failed (connection or transfer)", err)
	}
}

// dial is the transport's: a host in PrivateHosts is dialled as asked;
// any other must be on the https port and resolve to public addresses
// only (one that does not makes the host refused, not merely skipped),
// and is dialled at those very addresses, so nothing is resolved again
// between check and connection.
func (c *ClientMetadataDocuments) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if c.isPrivate(host) {
		return c.plain.DialContext(ctx, network, addr)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	if err != nil || port != c.httpsPort() {
		return nil, errNonPublicAddress
	}
	ipNetwork := "ip"
	switch network {
	case "tcp4":
		ipNetwork = "ip4"
	case "tcp6":
		ipNetwork = "ip6"
	}
	lookup := c.lookup
	if lookup == nil {
		lookup = net.DefaultResolver.LookupNetIP
	}
	addrs, err := lookup(ctx, ipNetwork, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no addresses", Name: host, IsNotFound: true}
	}
	for _, a := range addrs {
		if !isPublicAddress(a) {
			return nil, errNonPublicAddress
		}
	}
	var first error
	for _, a := range addrs {
		conn, err := c.checked.DialContext(ctx, network, netip.AddrPortFrom(a.Unmap(), uint16(n)).String())
		if err == nil {
			return conn, nil
		}
		if first == nil {
			first = err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, first
}

// control is the checked dialer's, run on the address about to be
// connected to: the check dial made, made again where nothing can come
// between it and the connection, so that no change to dial can open a
// way around it.
func (c *ClientMetadataDocuments) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil || !isPublicAddress(ap.Addr()) || strconv.Itoa(int(ap.Port())) != c.httpsPort() {
		return errNonPublicAddress
	}
	return nil
}

// refusedPrefixes are the special-purpose ranges (the IANA registries of
// RFC 6890) that netip's predicates do not cover and no public web
// server lives in. IPv4-mapped addresses are unmapped before the check;
// NAT64 and 6to4 addresses are checked by the IPv4 address they embed.
var refusedPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),       // "this network"
	netip.MustParsePrefix("100.64.0.0/10"),   // shared address space (CGNAT, RFC 6598)
	netip.MustParsePrefix("192.0.0.0/24"),    // IETF protocol assignments
	netip.MustParsePrefix("192.0.2.0/24"),    // TEST-NET-1
	netip.MustParsePrefix("192.88.99.0/24"),  // 6to4 relay anycast
	netip.MustParsePrefix("198.18.0.0/15"),   // benchmarking
	netip.MustParsePrefix("198.51.100.0/24"), // TEST-NET-2
	netip.MustParsePrefix("203.0.113.0/24"),  // TEST-NET-3
	netip.MustParsePrefix("240.0.0.0/4"),     // reserved, and the limited broadcast address
	netip.MustParsePrefix("::/8"),            // unspecified, loopback, IPv4-compatible, 64:ff9b:1::/48 local NAT64
	netip.MustParsePrefix("100::/64"),        // discard-only
	netip.MustParsePrefix("2001::/23"),       // IETF protocol assignments (Teredo, benchmarking, ORCHID)
	netip.MustParsePrefix("2001:db8::/32"),   // documentation
	netip.MustParsePrefix("3fff::/20"),       // documentation (RFC 9637)
	netip.MustParsePrefix("5f00::/16"),       // SRv6 SIDs
	netip.MustParsePrefix("fec0::/10"),       // deprecated site-local
}

var (
	nat64Prefix     = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourPrefix = netip.MustParsePrefix("2002::/16")
)

// isPublicAddress reports whether a is an address a client's metadata
// document may be fetched from: a global unicast address, not private
// (RFC 1918, fc00::/7), loopback, link-local (169.254/16, where the
// cloud metadata services answer, and fe80::/10), unspecified,
// multicast, broadcast, shared (100.64/10), documentation or otherwise
// reserved; in IPv4-mapped, NAT64 (64:ff9b::/96) or 6to4 form, by the
// IPv4 address it stands for. An address with a zone is refused.
func isPublicAddress(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is6() {
		b := a.As16()
		switch {
		case nat64Prefix.Contains(a):
			return isPublicAddress(netip.AddrFrom4([4]byte(b[12:16])))
		case sixToFourPrefix.Contains(a):
			return isPublicAddress(netip.AddrFrom4([4]byte(b[2:6])))
		}
	}
	if !a.IsGlobalUnicast() || a.IsPrivate() {
		return false // also loopback, link-local, multicast, unspecified, 255.255.255.255
	}
	for _, p := range refusedPrefixes {
		if p.Contains(a) {
			return false
		}
	}
	return true
}

// isJSONMediaType reports whether a Content-Type is JSON's:
// application/json or a structured syntax suffix, parameters allowed.
func isJSONMediaType(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	sub, ok := strings.CutPrefix(mt, "application/")
	return ok && (sub == "json" || len(sub) > len("+json") && strings.HasSuffix(sub, "+json"))
}

// clientDocFreshness is how long a response stays fresh (RFC 9111
// section 4.2.1, as a private cache): Cache-Control's no-store or
// no-cache make it 0 (not cached), else its max-age (the lowest of
// several; an invalid one makes the response stale), else Expires less
// Date (an invalid Expires is in the past), else
// clientDocDefaultFreshness; less Age; within [0, clientDocMaxFreshness].
func clientDocFreshness(h http.Header, now time.Time) time.Duration {
	fresh, have := time.Duration(0), false
	for _, line := range h.Values("Cache-Control") {
		for directive := range strings.SplitSeq(line, ",") {
			name, value, _ := strings.Cut(strings.TrimSpace(directive), "=")
			switch strings.ToLower(strings.TrimSpace(name)) {
			case "no-store", "no-cache":
				return 0
			case "max-age":
				d, ok := deltaSeconds(value)
				if !ok {
					return 0
				}
				if !have || d < fresh {
					fresh = d
				}
				have = true
			}
		}
	}
	if !have {
		fresh = clientDocDefaultFreshness
		if exp := h.Get("Expires"); exp != "" {
			t, err := http.ParseTime(exp)
			if err != nil {
				return 0
			}
			date := now
			if d, err := http.ParseTime(h.Get("Date")); err == nil {
				date = d
			}
			fresh = t.Sub(date)
		}
	}
	if age, ok := deltaSeconds(h.Get("Age")); ok {
		fresh -= age
	}
	return min(max(fresh, 0), clientDocMaxFreshness)
}

// deltaSeconds parses RFC 9111's delta-seconds (quoted too, as section
// 5.2 asks recipients to accept); one beyond the freshness cap is the
// cap, as the RFC's 2^31 rule would have it.
func deltaSeconds(v string) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if v == "" || strings.TrimLeft(v, "0123456789") != "" {
		return 0, false
	}
	if len(v) > 9 {
		return clientDocMaxFreshness, true
	}
	n, _ := strconv.Atoi(v) // nine digits at most: cannot fail
	return min(time.Duration(n)*time.Second, clientDocMaxFreshness), true
}

// clientDocWire is a document's members that are read; others are
// ignored, as RFC 7591 allows. client_secret and
// client_secret_expires_at are read only to refuse a document that has
// them.
type clientDocWire struct {
	ClientID                string         `json:"client_id"`
	ClientName              string         `json:"client_name"`
	ClientURI               string         `json:"client_uri"`
	RedirectURIs            []string       `json:"redirect_uris"`
	TokenEndpointAuthMethod string         `json:"token_endpoint_auth_method"`
	GrantTypes              []string       `json:"grant_types"`
	ResponseTypes           []string       `json:"response_types"`
	ClientSecret            jsontext.Value `json:"client_secret"`
	ClientSecretExpiresAt   jsontext.Value `json:"client_secret_expires_at"`
}

// ParseClientMetadataDocument validates a document's bytes for clientID,
// the URL it was fetched from: a JSON object (strictly: valid UTF-8, no
// member name twice in an object, members of the right types; member
// names are case-sensitive) whose client_id is clientID exactly, with
// the redirect URIs, auth method, grant and response types of a public
// client of the authorization code grant (see ClientMetadataDocument),
// and no client_secret. A refusal wraps ErrClientMetadata and names the
// member at fault, never a value. It does not bound len(body); Get does.
// Exported for the proxy's tests and the fuzz target.
func ParseClientMetadataDocument(clientID string, body []byte) (*ClientMetadataDocument, error) {
	if !IsClientMetadataURL(clientID) {
		return nil, clientDocRefused(clientID, "not a client ID metadata document URL")
	}
	if !utf8.Valid(body) {
		return nil, clientDocRefused(clientID, "the document is not valid UTF-8")
	}
	if t := bytes.TrimLeft(body, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		return nil, clientDocRefused(clientID, "the document is not a JSON object")
	}
	var w clientDocWire
	if err := jsonv2.Unmarshal(body, &w); err != nil {
		// Not wrapped: jsonv2's errors quote member names and offending
		// bytes of the document.
		if errors.Is(err, jsontext.ErrDuplicateName) {
			return nil, clientDocRefused(clientID, "a member name appears twice in one object of the document")
		}
		return nil, clientDocRefused(clientID, "the document is not a JSON object of client metadata (malformed, or a member of the wrong type)")
	}
	if w.ClientID != clientID {
		return nil, clientDocRefused(clientID, "the document's client_id is not the URL it was fetched from")
	}
	if w.ClientSecret != nil || w.ClientSecretExpiresAt != nil {
		return nil, clientDocRefused(clientID, "the document has a client_secret, which a client identified by a URL cannot keep")
	}
	if m := w.TokenEndpointAuthMethod; m != "" && m != "none" {
		return nil, clientDocRefused(clientID, "token_endpoint_auth_method is not none: only public clients, which prove themselves with PKCE, are accepted")
	}
	if len(w.RedirectURIs) == 0 {
		return nil, clientDocRefused(clientID, "redirect_uris is missing or empty: the authorization code grant needs one")
	}
	for i, r := range w.RedirectURIs {
		if problem := redirectURIProblem(r); problem != "" {
			return nil, clientDocRefused(clientID, fmt.Sprintf("redirect_uris[%d] %s", i, problem))
		}
	}
	if w.ClientURI != "" && !isLinkURL(w.ClientURI) {
		return nil, clientDocRefused(clientID, "client_uri is not an absolute http or https URL with a host and no user info")
	}
	if w.GrantTypes == nil {
		w.GrantTypes = []string{"authorization_code"}
	}
	for _, g := range w.GrantTypes {
		if g != "authorization_code" && g != "refresh_token" {
			return nil, clientDocRefused(clientID, "grant_types: only authorization_code and refresh_token are accepted")
		}
	}
	if !slices.Contains(w.GrantTypes, "authorization_code") {
		return nil, clientDocRefused(clientID, "grant_types does not name authorization_code, the grant the client is for")
	}
	if w.ResponseTypes == nil {
		w.ResponseTypes = []string{"code"}
	}
	if len(w.ResponseTypes) == 0 || slices.ContainsFunc(w.ResponseTypes, func(r string) bool { return r != "code" }) {
		return nil, clientDocRefused(clientID, "response_types: only code is accepted, and is needed")
	}
	return &ClientMetadataDocument{
		ClientID:                w.ClientID,
		ClientName:              w.ClientName,
		ClientURI:               w.ClientURI,
		RedirectURIs:            w.RedirectURIs,
		TokenEndpointAuthMethod: w.TokenEndpointAuthMethod,
		GrantTypes:              w.GrantTypes,
		ResponseTypes:           w.ResponseTypes,
	}, nil
}

// scriptSchemes are the schemes of URIs a browser runs or reads locally
// rather than navigates to: never a redirect URI.
var scriptSchemes = []string{"javascript", "data", "vbscript", "file", "blob", "about"}

// redirectURIProblem says what is wrong with a redirect URI, "" when
// nothing. It is phrased to follow "redirect_uris[i]".
func redirectURIProblem(r string) string {
	for i := 0; i < len(r); i++ {
		if b := r[i]; b <= ' ' || b >= 0x7f {
			return "has a space, a control character or a byte that is not ASCII"
		}
	}
	if strings.Contains(r, "#") {
		return "has a fragment"
	}
	u, err := url.Parse(r)
	switch {
	case err != nil:
		return "is not a URI"
	case !u.IsAbs():
		return "is not an absolute URI"
	case slices.Contains(scriptSchemes, u.Scheme):
		return "has a scheme that is not navigated to (javascript, data, file, ...)"
	case (u.Scheme == "http" || u.Scheme == "https") && (u.Host == "" || u.User != nil):
		return "is an http or https URI without a host, or with user info"
	}
	return ""
}

// isLinkURL reports whether s may be linked to as the client's home
// page: an absolute http or https URL with a host and no user info.
func isLinkURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" && u.User == nil && !strings.ContainsFunc(s, func(r rune) bool { return r <= ' ' || r == 0x7f })
}

// clientDocError is a refusal or an unavailability: its text is chosen
// here, and what it wraps (the class, and maybe a cause) is for
// errors.Is and errors.As only.
type clientDocError struct {
	msg  string
	errs []error
}

func (e *clientDocError) Error() string   { return e.msg }
func (e *clientDocError) Unwrap() []error { return e.errs }

// clientDocName is how an error names clientID: quoted, or described
// when it is too long to repeat.
func clientDocName(clientID string) string {
	if len(clientID) > MaxClientIDBytes {
		return "the client's metadata document"
	}
	return strconv.Quote(clientID)
}

func clientDocRefused(clientID, reason string) error {
	return &clientDocError{
		msg:  ErrClientMetadata.Error() + ": " + clientDocName(clientID) + ": " + reason,
		errs: []error{ErrClientMetadata},
	}
}

func clientDocUnavailable(clientID, reason string, cause error) error {
	return &clientDocError{
		msg:  ErrClientMetadataUnavailable.Error() + ": " + clientDocName(clientID) + ": " + reason,
		errs: []error{ErrClientMetadataUnavailable, cause},
	}
}
