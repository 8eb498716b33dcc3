//go:build unix

// Package oauthmock runs a real third-party OAuth 2 authorization server
// on loopback for the authorization tests: oauth2-mock-server, pinned in
// tools/package.json, started by tools/oauth-server.mjs on the Node 22
// runtime that tools/ pins. Tokens come from its token endpoint with the
// client_credentials grant and are signed with its RS256 key, which it
// publishes at its jwks_uri; the endpoint under test finds both through
// the issuer's metadata, as it would in production.
//
// It is a test tool, not part of the deployed product. A machine without
// the tools skips the tests that use it, saying how to run them, unless
// make runs them (package need): then they fail.
package oauthmock

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/serverless-mcp/mcp-lambda/internal/testenv/need"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// Variant makes a token wrong in one way, for the refusal tests; the
// server still signs it for real (see tools/oauth-server.mjs).
type Variant string

// The token variants the server mints.
const (
	// Expired: exp half an hour in the past.
	Expired Variant = "expired"
	// NotYetValid: nbf half an hour in the future.
	NotYetValid Variant = "not-yet-valid"
	// OtherIssuer: iss is not this issuer (its URL with "/other").
	OtherIssuer Variant = "other-issuer"
	// NoSubject: no sub claim.
	NoSubject Variant = "no-sub"
	// BadSignature: the published kid, signed with a key that is not
	// published.
	BadSignature Variant = "bad-signature"
	// UnknownKid: signed with a key that is not published, under a kid
	// that is in no key set.
	UnknownKid Variant = "unknown-kid"
	// AlgNone: an unsecured JWT (alg none, empty signature).
	AlgNone Variant = "alg-none"
	// HS256PublicKey: HS256 with the published RSA public key (PEM) as
	// the HMAC secret, the algorithm-confusion attack.
	HS256PublicKey Variant = "hs256-pubkey"
)

// Limits of the helper's own waits.
const (
	startTimeout = 20 * time.Second
	stopTimeout  = 5 * time.Second
	httpTimeout  = 10 * time.Second
)

// Server is a running authorization server.
type Server struct {
	// Issuer is the issuer identifier, http://127.0.0.1:<port>, which
	// tokens carry as iss and from which its metadata is discovered.
	Issuer string
	// Port is the port it listens on, on 127.0.0.1.
	Port int

	node, script, state string
	opts                Options
	client              *http.Client
	log                 *syncbuf.Buffer

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has ended
}

// ErrNotInstalled is Start's error, wrapped, when the npm test tools are
// not installed.
var ErrNotInstalled = errors.New("the npm test tools are not installed")

// Options shape the server as one provider behaves (see
// tools/oauth-server.mjs).
type Options struct {
	// ClientID, when set, is the only client its authorization endpoint
	// knows, as at a provider where clients are registered by hand.
	ClientID string
	// Profile shapes its access tokens: "" or "plain" (aud is the
	// token request's resource), "cognito" (no aud; client_id and
	// token_use claims, as Amazon Cognito's), "entra" (Entra ID v2.0's:
	// aud is Audience, scp the scopes without AppIDURI's prefix, azp the
	// client; a resource that does not prefix the scopes is refused).
	Profile string
	// Audience and AppIDURI: with Profile "entra", the app registration's
	// id and its Application ID URI.
	Audience, AppIDURI string
	// Registration turns on dynamic client registration (RFC 7591): its
	// metadata names a registration endpoint that issues client ids, and
	// its authorization endpoint knows only the clients registered so.
	Registration bool
	// RedirectURIs, with ClientID, are that client's registered
	// callbacks: the only redirect_uri values its authorization endpoint
	// accepts, compared as strings, exactly, as Amazon Cognito and Entra
	// ID (web and SPA redirect URIs) compare them. Another is answered 400
	// redirect_mismatch with no Location, so that a test sees a proxy's
	// wrong callback as the provider's refusal and never as a redirect.
	// Empty: any redirect_uri for the client.
	RedirectURIs []string
	// RefuseResource, with Profile "entra", refuses every request that
	// carries an RFC 8707 resource parameter, as a tenant does whose
	// Application ID URI is api://<app id> rather than the MCP endpoint's
	// URL: the authorization endpoint redirects with error=invalid_target
	// (AADSTS9010010), the token endpoint answers 400 invalid_target.
	RefuseResource bool
}

// New starts a server on a port the system chooses and stops it when t
// ends, failing t if it cannot start (skipping it when the tools are not
// installed, outside make: package need).
func New(t testing.TB) *Server { return NewWith(t, Options{}) }

// NewWith is New for a server shaped by o.
func NewWith(t testing.TB, o Options) *Server {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	s, err := StartWith(ctx, "", 0, o)
	if errors.Is(err, ErrNotInstalled) {
		need.Tool(t, "the npm test tools", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Close()
		if t.Failed() {
			t.Logf("authorization server output:\n%s", s.Log())
		}
	})
	return s
}

// Start starts a server on port (0: one the system chooses) from the npm
// tools in toolsDir ("" finds tools/ in the working directory or one of
// its parents). The caller must Stop it.
func Start(ctx context.Context, toolsDir string, port int) (*Server, error) {
	return StartWith(ctx, toolsDir, port, Options{})
}

// StartWith is Start for a server shaped by o.
func StartWith(ctx context.Context, toolsDir string, port int, o Options) (*Server, error) {
	dir, err := findTools(toolsDir)
	if err != nil {
		return nil, err
	}
	node := filepath.Join(dir, "node_modules", ".bin", "node")
	for _, file := range []string{node, filepath.Join(dir, "node_modules", "oauth2-mock-server", "package.json")} {
		if _, err := os.Stat(file); err != nil {
			return nil, fmt.Errorf("oauthmock: %w: %v", ErrNotInstalled, err)
		}
	}
	stateDir, err := os.MkdirTemp("", "oauthmock")
	if err != nil {
		return nil, err
	}
	s := &Server{node: node, script: filepath.Join(dir, "oauth-server.mjs"), state: filepath.Join(stateDir, "keys.json"), opts: o,
		client: &http.Client{Timeout: httpTimeout}, log: &syncbuf.Buffer{}}
	if err := s.start(ctx, port); err != nil {
		os.RemoveAll(stateDir)
		return nil, err
	}
	return s, nil
}

// findTools returns the absolute tools directory: dir, or the first
// tools/ holding oauth-server.mjs in the working directory or a parent.
func findTools(dir string) (string, error) {
	if dir != "" {
		return filepath.Abs(dir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "tools", "oauth-server.mjs")); err == nil {
			return filepath.Join(d, "tools"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("oauthmock: no tools/oauth-server.mjs in %s or its parents", wd)
		}
	}
}

// start runs the script and waits for the line it prints when it listens.
func (s *Server) start(ctx context.Context, port int) error {
	args := []string{s.script, "--port", strconv.Itoa(port), "--state", s.state}
	if s.opts.ClientID != "" {
		args = append(args, "--client-id", s.opts.ClientID)
	}
	if s.opts.Profile != "" {
		args = append(args, "--profile", s.opts.Profile)
	}
	if s.opts.Audience != "" {
		args = append(args, "--audience", s.opts.Audience)
	}
	if s.opts.AppIDURI != "" {
		args = append(args, "--app-id-uri", s.opts.AppIDURI)
	}
	if s.opts.Registration {
		args = append(args, "--registration")
	}
	for _, u := range s.opts.RedirectURIs {
		args = append(args, "--redirect-uri", u)
	}
	if s.opts.RefuseResource {
		args = append(args, "--refuse-resource")
	}
	cmd := exec.Command(s.node, args...)
	cmd.Dir = filepath.Dir(s.script)
	cmd.Stderr = s.log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("oauthmock: starting node: %w", err)
	}
	done := make(chan struct{})
	s.mu.Lock()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()

	type ready struct {
		Issuer string `json:"issuer"`
		Port   int    `json:"port"`
	}
	got := make(chan ready, 1)
	failed := make(chan error, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		var rd ready
		if err == nil {
			err = json.Unmarshal([]byte(line), &rd)
		}
		if err != nil {
			failed <- fmt.Errorf("oauthmock: no readiness line (%q): %v", line, err)
		} else {
			got <- rd
		}
		// Keep reading so that the script never blocks on a full pipe;
		// Wait only after the pipe is drained (os/exec's rule).
		io.Copy(s.log, r)
		cmd.Wait()
		close(done)
	}()
	limit := time.NewTimer(startTimeout)
	defer limit.Stop()
	select {
	case rd := <-got:
		s.Issuer, s.Port = rd.Issuer, rd.Port
		return nil
	case err = <-failed:
	case <-ctx.Done():
		err = ctx.Err()
	case <-limit.C:
		err = errors.New("oauthmock: not ready in time")
	}
	s.Stop()
	return fmt.Errorf("%w\n%s", err, s.log.String())
}

// Stop ends the server's process group and waits for it. It may be
// called more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil || cmd.Process == nil {
		return
	}
	pgid := cmd.Process.Pid // Setpgid: the group is the process's id
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
}

// Restart starts the server again after Stop, on the same port with the
// same keys: the same issuer, back from an outage.
func (s *Server) Restart(ctx context.Context) error {
	s.Stop()
	// The port was ours a moment ago; retry briefly in case the system
	// has not released it yet.
	var err error
	for range 20 {
		if err = s.start(ctx, s.Port); err == nil || ctx.Err() != nil {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// Close stops the server and removes its key file.
func (s *Server) Close() {
	s.Stop()
	os.RemoveAll(filepath.Dir(s.state))
}

// Log returns what the server printed on stderr (and stdout after its
// readiness line).
func (s *Server) Log() string { return s.log.String() }

// TokenEndpoint is the URL of the token endpoint.
func (s *Server) TokenEndpoint() string { return s.Issuer + "/token" }

// Token gets an access token from the token endpoint with the
// client_credentials grant: sub and client_id are clientID, scope the
// scopes, aud the resource (RFC 8707; none when resource is "").
func (s *Server) Token(ctx context.Context, clientID string, scopes []string, resource string) (string, error) {
	return s.TokenVariant(ctx, "", clientID, scopes, resource)
}

// TokenVariant is Token for a token made wrong as v says ("" for none).
func (s *Server) TokenVariant(ctx context.Context, v Variant, clientID string, scopes []string, resource string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	if len(scopes) > 0 {
		form.Set("scope", strings.Join(scopes, " "))
	}
	if resource != "" {
		form.Set("resource", resource)
	}
	if v != "" {
		form.Set("mock_variant", string(v))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.TokenEndpoint(), strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(clientID), "secret-of-"+url.QueryEscape(clientID))
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
	}
	if err := s.do(req, &out); err != nil {
		return "", fmt.Errorf("oauthmock: token for %q: %w", clientID, err)
	}
	if out.AccessToken == "" || !strings.EqualFold(out.TokenType, "Bearer") {
		return "", fmt.Errorf("oauthmock: token response without a bearer token: %+v", out)
	}
	return out.AccessToken, nil
}

// Rotate publishes a new signing key next to the old ones and signs the
// next tokens with it; it returns the new key's id.
func (s *Server) Rotate(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Issuer+"/_mock/rotate", nil)
	if err != nil {
		return "", err
	}
	var out struct {
		Kid string `json:"kid"`
	}
	if err := s.do(req, &out); err != nil {
		return "", fmt.Errorf("oauthmock: rotate: %w", err)
	}
	return out.Kid, nil
}

// Requests returns how many requests the server has served at each path
// since it (last) started: "/jwks", "/token",
// "/.well-known/openid-configuration" and so on.
func (s *Server) Requests(ctx context.Context) (map[string]int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.Issuer+"/_mock/stats", nil)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	if err := s.do(req, &out); err != nil {
		return nil, fmt.Errorf("oauthmock: stats: %w", err)
	}
	return out, nil
}

// do sends req and decodes a 200 JSON answer into out.
func (s *Server) do(req *http.Request, out any) error {
	resp, err := s.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s %s answered %d: %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}
