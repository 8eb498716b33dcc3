//go:build unix

// Package cdp drives a real headless Chromium over the Chrome DevTools
// Protocol, for tests of pages that run no script of ours: a consent page
// behind a strict Content-Security-Policy, a form that posts, a redirect
// chain that ends at a loopback redirect_uri, the cookies it leaves.
// Evaluation through the protocol is the debugger's, not the page's, so
// it runs where the page's CSP forbids every script.
//
// The browser is spoken to over --remote-debugging-pipe rather than a
// debugging port: it reads protocol messages from its file descriptor 3
// and writes them to its descriptor 4, each ended by a NUL byte. No port
// is opened, so no other process on the machine can drive it, and nothing
// has to be discovered or polled before the first message. It uses the
// standard library only.
//
// Chromium is found as the other browser tests find it ($CHROMIUM, the
// repository's .tools/bin, or chromium on PATH, which `make tools`
// installs); without it a test is skipped outside make, failed under make
// (package need). It is a test tool, not part of the deployed product.
package cdp

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/repo"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/syncbuf"
)

// Limits of the package's own waits; a caller's context bounds the rest.
const (
	// startTimeout bounds Start's first exchange with the browser.
	startTimeout = 30 * time.Second
	// closeTimeout bounds each step of the shutdown: the browser's own
	// exit after Browser.close, its group's after the kill.
	closeTimeout = 10 * time.Second
	// clickSettle is how long Click waits for a navigation to begin
	// after a click that neither submitted a form nor followed a link
	// before it takes the click for one that causes none (a page's
	// script may still navigate on a click, a moment later).
	clickSettle = 500 * time.Millisecond
	// clickStart is how long Click waits for the navigation of a form
	// submitted or a link followed to begin: the page plans it during the
	// click and requests it after, in a moment, unless it is lost.
	clickStart = 5 * time.Second
	// urlPoll is how often WaitURL asks for the URL again when no event
	// says it changed.
	urlPoll = 100 * time.Millisecond
)

// Browser is one headless Chromium driven over a CDP pipe. Its methods
// and its pages' may be called from several goroutines.
type Browser struct {
	cmd     *exec.Cmd
	profile string
	log     *syncbuf.Buffer
	exited  chan struct{} // closed when cmd.Wait has returned

	toBrowser   *os.File // our end of its fd 3
	fromBrowser *os.File // our end of its fd 4
	writeMu     sync.Mutex

	mu       sync.Mutex
	nextID   int64
	pending  map[int64]chan reply
	sessions map[string]*Page
	readErr  error         // why the reader stopped, once it has
	gone     chan struct{} // closed when the reader has stopped

	closeOnce sync.Once
	closeErr  error
}

// Option shapes the browser Start starts.
type Option func(*config) error

type config struct {
	ignoreCerts bool
	spki        []string
	hosts       []string
}

// IgnoreCertificateErrors makes the browser accept any certificate, as
// a page on an httptest TLS server needs when the test does not hand the
// browser its certificate (--ignore-certificate-errors).
func IgnoreCertificateErrors() Option {
	return func(c *config) error {
		c.ignoreCerts = true
		return nil
	}
}

// WithCertificate makes the browser accept der, an X.509 certificate
// (an httptest TLS server's Certificate().Raw), and no other that it
// would refuse: Chromium trusts the certificate's public key by its
// SHA-256 hash (--ignore-certificate-errors-spki-list), so a test can
// still see a wrong certificate refused.
func WithCertificate(der []byte) Option {
	return func(c *config) error {
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			return fmt.Errorf("cdp: WithCertificate: %w", err)
		}
		sum := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
		c.spki = append(c.spki, base64.StdEncoding.EncodeToString(sum[:]))
		return nil
	}
}

// ResolveToLoopback makes the browser resolve the host names that match
// patterns (Chromium's host rules: "proxy.test", "*.test") to 127.0.0.1,
// for pages that must not be on a loopback name: a cookie's Domain, an
// origin an allow-list decides on. Every other name resolves to nothing,
// as it does without this option: the browser reaches loopback only.
func ResolveToLoopback(patterns ...string) Option {
	return func(c *config) error {
		for _, p := range patterns {
			if p == "" || strings.ContainsAny(p, ", ") {
				return fmt.Errorf("cdp: ResolveToLoopback: bad pattern %q", p)
			}
		}
		c.hosts = append(c.hosts, patterns...)
		return nil
	}
}

// reply is the answer to one command.
type reply struct {
	result json.RawMessage
	err    error
}

// message is any message on the pipe: a command's answer (ID set), or an
// event (Method set), of the browser or of a page's session (SessionID).
type message struct {
	ID        int64           `json:"id,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *protocolError  `json:"error,omitempty"`
	SessionID string          `json:"sessionId,omitempty"`
}

// protocolError is a command's refusal.
type protocolError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    string `json:"data,omitempty"`
}

// ErrClosed is what a command gets, wrapped, once the browser has ended.
var ErrClosed = errors.New("cdp: the browser has ended")

// Start starts Chromium, headless, on a profile of its own, and stops it
// when t ends. Without Chromium it skips t, or fails it under make
// (package need). When t fails, Chromium's output is logged.
func Start(t testing.TB, opts ...Option) *Browser {
	t.Helper()
	var c config
	for _, o := range opts {
		if err := o(&c); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := chromiumBinary()
	if err != nil {
		need.Tool(t, "chromium", err)
	}
	b, err := start(bin, c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			t.Logf("chromium output:\n%s", b.log.String())
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	var version struct {
		Product string `json:"product"`
	}
	if err := b.call(ctx, "", "Browser.getVersion", nil, &version); err != nil {
		t.Fatalf("cdp: chromium does not answer: %v", err)
	}
	return b
}

// chromiumBinary finds Chromium: $CHROMIUM, else the repository's
// .tools/bin/chromium, else chromium on PATH (Debian's package, which
// `make tools` installs).
func chromiumBinary() (string, error) {
	if p := os.Getenv("CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", err
		}
		return p, nil
	}
	if root, err := repo.Root(); err == nil {
		p := filepath.Join(root, ".tools", "bin", "chromium")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("chromium")
}

// start runs the browser in its own process group, with a fresh profile,
// its pipes on fds 3 and 4, and starts reading what it writes.
func start(bin string, c config) (*Browser, error) {
	profile, err := os.MkdirTemp("", "cdp-chromium-")
	if err != nil {
		return nil, err
	}
	args := []string{
		"--headless",
		"--remote-debugging-pipe",
		// As root in a container, and no GPU here.
		"--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		// Nothing but the test's own requests: the machine's network is
		// closed, and the browser's background connections would fail.
		"--disable-quic", "--no-first-run", "--no-default-browser-check",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-extensions", "--no-proxy-server",
		"--user-data-dir=" + profile,
		// Loopback only: the names the test asks for are 127.0.0.1, every
		// other name is not found (IP literals are not names).
		"--host-resolver-rules=" + hostRules(c.hosts),
	}
	if c.ignoreCerts {
		args = append(args, "--ignore-certificate-errors")
	}
	if len(c.spki) > 0 {
		args = append(args, "--ignore-certificate-errors-spki-list="+strings.Join(c.spki, ","))
	}
	args = append(args, "about:blank")

	// Its fd 3 reads what we write; its fd 4 writes what we read.
	inR, inW, err := os.Pipe()
	if err != nil {
		os.RemoveAll(profile)
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		os.RemoveAll(profile)
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = Env(profile)
	log := &syncbuf.Buffer{}
	cmd.Stdout, cmd.Stderr = log, log
	cmd.ExtraFiles = []*os.File{inR, outW}
	// Its own process group, to be killed whole.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Its helpers inherit its output; do not wait on them for long after
	// it has ended.
	cmd.WaitDelay = 5 * time.Second
	err = cmd.Start()
	// The browser holds its ends now (or never will).
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		os.RemoveAll(profile)
		return nil, fmt.Errorf("cdp: starting chromium: %w", err)
	}
	b := &Browser{cmd: cmd, profile: profile, log: log, exited: make(chan struct{}),
		toBrowser: inW, fromBrowser: outR,
		pending: map[int64]chan reply{}, sessions: map[string]*Page{}, gone: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(b.exited)
	}()
	go b.read()
	return b, nil
}

// hostRules is the browser's --host-resolver-rules: hosts to 127.0.0.1,
// loopback left alone, everything else not found.
func hostRules(hosts []string) string {
	var rules []string
	for _, h := range hosts {
		rules = append(rules, "MAP "+h+" 127.0.0.1")
	}
	rules = append(rules, "MAP * ~NOTFOUND", "EXCLUDE localhost", "EXCLUDE 127.0.0.1", "EXCLUDE [::1]")
	return strings.Join(rules, ", ")
}

// Env is the environment a browser runs in: this process's,
// without proxy settings (everything is loopback), with the profile
// directory as home.
func Env(home string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasSuffix(strings.ToLower(k), "_proxy") || k == "HOME" {
			continue
		}
		env = append(env, kv)
	}
	return append(env, "HOME="+home)
}

// read delivers what the browser writes: answers to the commands waiting
// for them, events to their page. It ends when the pipe does, and every
// command waiting or yet to come then fails with ErrClosed.
func (b *Browser) read() {
	r := bufio.NewReaderSize(b.fromBrowser, 64<<10)
	var err error
	for {
		var raw []byte
		raw, err = r.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if err := json.Unmarshal(raw[:len(raw)-1], &m); err != nil {
			continue // not ours to understand; the browser writes JSON
		}
		b.mu.Lock()
		if m.ID != 0 {
			ch := b.pending[m.ID]
			delete(b.pending, m.ID)
			b.mu.Unlock()
			if ch != nil {
				rp := reply{result: m.Result}
				if m.Error != nil {
					rp.err = m.Error
				}
				ch <- rp
			}
			continue
		}
		p := b.sessions[m.SessionID]
		b.mu.Unlock()
		if p != nil {
			p.event(m.Method, m.Params)
		}
	}
	if errors.Is(err, io.EOF) || errors.Is(err, os.ErrClosed) {
		err = ErrClosed
	} else {
		err = fmt.Errorf("%w: %v", ErrClosed, err)
	}
	b.mu.Lock()
	b.readErr = err
	pending := b.pending
	b.pending = map[int64]chan reply{}
	b.mu.Unlock()
	for _, ch := range pending {
		ch <- reply{err: err}
	}
	close(b.gone)
}

func (e *protocolError) Error() string {
	if e.Data != "" {
		return fmt.Sprintf("%s (%d): %s", e.Message, e.Code, e.Data)
	}
	return fmt.Sprintf("%s (%d)", e.Message, e.Code)
}

// call sends method with params to the browser ("" session) or a page's
// session, and decodes the answer's result into result (when not nil).
func (b *Browser) call(ctx context.Context, session, method string, params, result any) error {
	ch := make(chan reply, 1)
	b.mu.Lock()
	if b.readErr != nil {
		err := b.readErr
		b.mu.Unlock()
		return fmt.Errorf("%s: %w", method, err)
	}
	b.nextID++
	id := b.nextID
	b.pending[id] = ch
	b.mu.Unlock()

	msg := struct {
		ID        int64  `json:"id"`
		Method    string `json:"method"`
		Params    any    `json:"params,omitempty"`
		SessionID string `json:"sessionId,omitempty"`
	}{id, method, params, session}
	raw, err := json.Marshal(msg)
	if err != nil {
		b.forget(id)
		return fmt.Errorf("cdp: %s: %w", method, err)
	}
	b.writeMu.Lock()
	_, err = b.toBrowser.Write(append(raw, 0))
	b.writeMu.Unlock()
	if err != nil {
		b.forget(id)
		return fmt.Errorf("cdp: %s: %w: %v", method, ErrClosed, err)
	}
	select {
	case rp := <-ch:
		if rp.err != nil {
			return fmt.Errorf("cdp: %s: %w", method, rp.err)
		}
		if result != nil && len(rp.result) > 0 {
			if err := json.Unmarshal(rp.result, result); err != nil {
				return fmt.Errorf("cdp: %s: decoding %s: %w", method, rp.result, err)
			}
		}
		return nil
	case <-ctx.Done():
		b.forget(id)
		return fmt.Errorf("cdp: %s: %w", method, ctx.Err())
	}
}

// forget drops a command whose answer nobody waits for any more.
func (b *Browser) forget(id int64) {
	b.mu.Lock()
	delete(b.pending, id)
	b.mu.Unlock()
}

// Close ends the browser: it asks it to close, kills its process group
// when it has not ended in time, waits until no process of it runs, and
// removes its profile. It reports a browser that would not end. Start's
// cleanup calls it; calling it again returns the first call's result.
func (b *Browser) Close() error {
	b.closeOnce.Do(func() { b.closeErr = b.close() })
	return b.closeErr
}

func (b *Browser) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	// The browser may end before it answers: the answer does not matter.
	_ = b.call(ctx, "", "Browser.close", nil, nil)
	pgid := b.cmd.Process.Pid // Setpgid: the group is the process's id
	var errs []error
	select {
	case <-b.exited:
	case <-ctx.Done():
		errs = append(errs, errors.New("cdp: chromium did not close when asked; killed"))
	}
	// Whatever of the group is left (none, when it closed as asked).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-b.exited:
	case <-time.After(closeTimeout):
		errs = append(errs, errors.New("cdp: chromium did not end when killed"))
	}
	for deadline := time.Now().Add(closeTimeout); Running(pgid, b.profile); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("cdp: chromium (process group %d) still runs", pgid))
			break
		}
	}
	b.toBrowser.Close()
	b.fromBrowser.Close()
	<-b.gone
	if err := os.RemoveAll(b.profile); err != nil {
		errs = append(errs, fmt.Errorf("cdp: removing the browser profile: %w", err))
	}
	return errors.Join(errs...)
}

// Running reports whether a process of a browser runs: one of group
// pgid, or one that names the profile directory dir (the crash handlers,
// which leave the group and end soon after the browser). Killed processes
// stay as zombies until they are reaped, which for orphaned helpers is
// init's business; those hold no files and do not count.
func Running(pgid int, dir string) bool {
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, p := range procs {
		stat, err := os.ReadFile(p + "/stat")
		if err != nil {
			continue // ended meanwhile
		}
		// pid (comm) state ppid pgrp ...; comm may hold anything.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) < 3 || fields[0] == "Z" || fields[0] == "X" {
			continue
		}
		if fields[2] == strconv.Itoa(pgid) {
			return true
		}
		if cmdline, err := os.ReadFile(p + "/cmdline"); err == nil && bytes.Contains(cmdline, []byte(dir)) {
			return true
		}
	}
	return false
}
