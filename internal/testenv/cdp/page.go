//go:build unix

package cdp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Page is one tab of the browser, attached over its own session (flat
// sessions: its commands and events travel on the browser's pipe, named
// by the session's id).
type Page struct {
	b       *Browser
	target  string // the target's id, which is also its main frame's
	session string

	mu sync.Mutex
	// changed is closed, and replaced, whenever the state below changes,
	// so that a wait sees every change without missing one that comes
	// between its check and its wait.
	changed chan struct{}
	// requested and started count the main frame's navigations
	// requested and its loads begun; loading is whether it loads now.
	requested, started int
	loading            bool
	// loader is the main frame's current document's loader; loaded holds
	// the loaders whose document has loaded (its load event fired, or
	// the frame stopped loading while it was current).
	loader string
	loaded map[string]bool
	// network is whether the Network domain is on (Cookies needs it).
	network bool
}

// Cookie is a cookie the browser holds for a page's URL.
type Cookie struct {
	Name, Value, Domain, Path string
	Secure, HTTPOnly          bool
	// SameSite is "Strict", "Lax" or "None"; "" when the cookie did
	// not say.
	SameSite string
	// Expires is when it expires; zero for a session cookie.
	Expires time.Time
}

// NewPage opens a tab on about:blank in the browser's default context:
// pages share its cookies, as tabs do.
func (b *Browser) NewPage(ctx context.Context) (*Page, error) {
	var created struct {
		TargetID string `json:"targetId"`
	}
	if err := b.call(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}, &created); err != nil {
		return nil, err
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	if err := b.call(ctx, "", "Target.attachToTarget", map[string]any{"targetId": created.TargetID, "flatten": true}, &attached); err != nil {
		return nil, err
	}
	p := &Page{b: b, target: created.TargetID, session: attached.SessionID, changed: make(chan struct{}), loaded: map[string]bool{}}
	b.mu.Lock()
	b.sessions[p.session] = p
	b.mu.Unlock()
	for _, c := range []struct {
		method string
		params any
	}{
		{"Page.enable", nil},
		{"Page.setLifecycleEventsEnabled", map[string]any{"enabled": true}},
	} {
		if err := p.call(ctx, c.method, c.params, nil); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func (p *Page) call(ctx context.Context, method string, params, result any) error {
	return p.b.call(ctx, p.session, method, params, result)
}

// event takes one of the page's events: what its main frame does.
func (p *Page) event(method string, params json.RawMessage) {
	var ev struct {
		FrameID  string `json:"frameId"`
		LoaderID string `json:"loaderId"`
		Name     string `json:"name"`
		Frame    struct {
			ID       string `json:"id"`
			ParentID string `json:"parentId"`
			LoaderID string `json:"loaderId"`
		} `json:"frame"`
	}
	switch method {
	case "Page.frameRequestedNavigation", "Page.frameStartedLoading", "Page.frameStoppedLoading",
		"Page.frameNavigated", "Page.lifecycleEvent", "Page.loadEventFired", "Page.navigatedWithinDocument":
	default:
		return
	}
	if err := json.Unmarshal(params, &ev); err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	main := ev.FrameID == p.target
	switch method {
	case "Page.frameRequestedNavigation":
		if !main {
			return
		}
		p.requested++
	case "Page.frameStartedLoading":
		if !main {
			return
		}
		p.started++
		p.loading = true
	case "Page.frameStoppedLoading":
		if !main {
			return
		}
		p.loading = false
		if p.loader != "" {
			p.loaded[p.loader] = true
		}
	case "Page.frameNavigated":
		if ev.Frame.ParentID != "" || ev.Frame.ID != p.target {
			return
		}
		p.loader = ev.Frame.LoaderID
	case "Page.lifecycleEvent":
		if !main || ev.Name != "load" {
			return
		}
		p.loaded[ev.LoaderID] = true
	case "Page.loadEventFired":
		// The main frame's load, of the document now current.
		if p.loader != "" {
			p.loaded[p.loader] = true
		}
	case "Page.navigatedWithinDocument":
		if !main {
			return
		}
		// The URL changed; WaitURL wants to know.
	}
	close(p.changed)
	p.changed = make(chan struct{})
}

// wait returns when cond, called with p.mu held, holds; or ctx's error.
func (p *Page) wait(ctx context.Context, cond func() bool) error {
	for {
		p.mu.Lock()
		ok, changed := cond(), p.changed
		p.mu.Unlock()
		if ok {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Navigate loads url in the page and waits until its document has loaded
// (after the redirects that bring it there). A navigation the browser
// could not complete (a refused connection, a certificate it refuses) is
// an error, returned once the browser's error page has taken its place,
// so that the page answers again (URL then says where it failed).
func (p *Page) Navigate(ctx context.Context, url string) error {
	var nav struct {
		LoaderID  string `json:"loaderId"`
		ErrorText string `json:"errorText"`
	}
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if err := p.call(ctx, "Page.navigate", map[string]any{"url": url}, &nav); err != nil {
		return err
	}
	if nav.ErrorText != "" {
		// The answer comes as the navigation fails, before the error
		// page is in: until then the page is attached to no document.
		settle, cancel := context.WithTimeout(ctx, closeTimeout)
		_ = p.wait(settle, func() bool { return p.started > started && !p.loading })
		cancel()
		return fmt.Errorf("cdp: navigating to %s: %s", url, nav.ErrorText)
	}
	if nav.LoaderID == "" {
		return nil // within the document: nothing loads
	}
	if err := p.wait(ctx, func() bool { return p.loaded[nav.LoaderID] }); err != nil {
		return fmt.Errorf("cdp: navigating to %s: %w", url, err)
	}
	return nil
}

// Eval evaluates the JavaScript expression js in the page's main frame
// and decodes its value, as JSON, into out (unless out is nil or the
// value undefined). A promise is awaited. An exception thrown is the
// error. The evaluation is the debugger's: the page's
// Content-Security-Policy does not apply to it, eval included, while it
// still applies to what the page runs (a script element js adds to the
// page is refused as the policy says). It runs as a user's gesture, so
// that what it clicks may open what a click may.
func (p *Page) Eval(ctx context.Context, js string, out any) error {
	var r struct {
		Result struct {
			Type  string          `json:"type"`
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Line      int    `json:"lineNumber"`
			Exception *struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	params := map[string]any{"expression": js, "returnByValue": true, "awaitPromise": true, "userGesture": true}
	if err := p.call(ctx, "Runtime.evaluate", params, &r); err != nil {
		return err
	}
	if ex := r.ExceptionDetails; ex != nil {
		msg := ex.Text
		if ex.Exception != nil && ex.Exception.Description != "" {
			msg = ex.Exception.Description
		}
		return fmt.Errorf("cdp: evaluating %q: %s", abbrev(js), msg)
	}
	if out == nil || r.Result.Type == "undefined" || len(r.Result.Value) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.Result.Value, out); err != nil {
		return fmt.Errorf("cdp: evaluating %q: decoding %s: %w", abbrev(js), r.Result.Value, err)
	}
	return nil
}

// abbrev shortens a script for an error message.
func abbrev(js string) string {
	if len(js) > 80 {
		return js[:77] + "..."
	}
	return js
}

// URL returns the page's current location as its address bar would show
// it: after a redirect chain, where it ended; on the browser's error page
// for a navigation that failed, the URL that failed.
func (p *Page) URL(ctx context.Context) (string, error) {
	var h struct {
		CurrentIndex int `json:"currentIndex"`
		Entries      []struct {
			URL string `json:"url"`
		} `json:"entries"`
	}
	// While a document replaces another in a new process (another site,
	// an error page), the page is briefly attached to none and says so:
	// ask again until it is, within ctx.
	for {
		err := p.call(ctx, "Page.getNavigationHistory", nil, &h)
		if err == nil {
			break
		}
		if !detached(err) {
			return "", err
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return "", err
		}
	}
	if h.CurrentIndex < 0 || h.CurrentIndex >= len(h.Entries) {
		return "", fmt.Errorf("cdp: navigation history without its current entry (%d of %d)", h.CurrentIndex, len(h.Entries))
	}
	return h.Entries[h.CurrentIndex].URL, nil
}

// detached reports whether err is a page's refusal while no document is
// attached to it, between two of them.
func detached(err error) bool {
	var pe *protocolError
	return errors.As(err, &pe) && strings.Contains(pe.Message, "Not attached to an active page")
}

// WaitURL waits until the page's URL (as URL returns it) matches, and
// returns it: the end of a redirect chain, a redirect_uri reached. It
// looks again whenever the main frame navigates, and every so often
// besides. The caller's ctx bounds the wait; the error then names the
// last URL seen.
func (p *Page) WaitURL(ctx context.Context, match func(string) bool) (string, error) {
	tick := time.NewTicker(urlPoll)
	defer tick.Stop()
	last := ""
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		u, err := p.URL(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return last, fmt.Errorf("cdp: waiting for a URL (last %q): %w", last, ctx.Err())
			}
			return "", err
		}
		last = u
		if match(u) {
			return u, nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return last, fmt.Errorf("cdp: waiting for a URL (last %q): %w", last, ctx.Err())
		}
	}
}

// Cookies returns the cookies the browser would send to the page's URL,
// HttpOnly ones included.
func (p *Page) Cookies(ctx context.Context) ([]Cookie, error) {
	p.mu.Lock()
	on := p.network
	p.mu.Unlock()
	if !on {
		if err := p.call(ctx, "Network.enable", nil, nil); err != nil {
			return nil, err
		}
		p.mu.Lock()
		p.network = true
		p.mu.Unlock()
	}
	var r struct {
		Cookies []struct {
			Name     string  `json:"name"`
			Value    string  `json:"value"`
			Domain   string  `json:"domain"`
			Path     string  `json:"path"`
			Expires  float64 `json:"expires"`
			HTTPOnly bool    `json:"httpOnly"`
			Secure   bool    `json:"secure"`
			Session  bool    `json:"session"`
			SameSite string  `json:"sameSite"`
		} `json:"cookies"`
	}
	if err := p.call(ctx, "Network.getCookies", nil, &r); err != nil {
		return nil, err
	}
	out := make([]Cookie, 0, len(r.Cookies))
	for _, c := range r.Cookies {
		ck := Cookie{Name: c.Name, Value: c.Value, Domain: c.Domain, Path: c.Path, Secure: c.Secure, HTTPOnly: c.HTTPOnly, SameSite: c.SameSite}
		if !c.Session && c.Expires > 0 {
			ck.Expires = time.UnixMilli(int64(c.Expires * 1000))
		}
		out = append(out, ck)
	}
	return out, nil
}

// ErrNoElement is Click's error, wrapped, when no element matches.
var ErrNoElement = errors.New("cdp: no element matches")

// Click clicks the first element that selector (a CSS selector) matches,
// as the page's own click() would, and when that starts a navigation
// waits until the frame has stopped loading: the page it leads to, after
// its redirects, has loaded (or the browser's error page, or nothing, when
// the navigation was refused: a submission the page's form-action forbids
// stops at once). A form the click submits, or a link it follows, must
// start loading within a few seconds, else the error says so; after any
// other click, a navigation that has not begun shortly after is taken as
// none, and a later one, a script's, is for WaitURL to see. Check where
// the click led with URL or WaitURL.
func (p *Page) Click(ctx context.Context, selector string) error {
	sel, err := json.Marshal(selector)
	if err != nil {
		return err
	}
	p.mu.Lock()
	requested, started := p.requested, p.started
	p.mu.Unlock()
	var r struct {
		Found  bool   `json:"found"`
		Expect string `json:"expect"`
	}
	if err := p.Eval(ctx, fmt.Sprintf(clickJS, sel), &r); err != nil {
		return err
	}
	if !r.Found {
		return fmt.Errorf("%w %q", ErrNoElement, selector)
	}
	limit := clickSettle
	if r.Expect != "" {
		limit = clickStart
	}
	begin, cancel := context.WithTimeout(ctx, limit)
	err = p.wait(begin, func() bool { return p.requested > requested || p.started > started })
	cancel()
	switch {
	case ctx.Err() != nil:
		return fmt.Errorf("cdp: clicking %q: %w", selector, ctx.Err())
	case err != nil && r.Expect != "":
		return fmt.Errorf("cdp: clicking %q %s, but no navigation began in %v", selector, r.Expect, clickStart)
	case err != nil:
		return nil // no navigation
	}
	if err := p.wait(ctx, func() bool { return p.started > started && !p.loading }); err != nil {
		return fmt.Errorf("cdp: clicking %q: waiting for the page it leads to: %w", selector, err)
	}
	return nil
}

// clickJS clicks the element its %s (a JSON string) selects and says
// whether it did, and whether the click must navigate this frame: it
// submitted a form (its submit event, dispatched during the click, not
// prevented; the form nor its submitter aiming at another window; not a
// dialog's) or followed a link (its click not prevented, an http(s) URL
// other than this document's with another fragment, no download, no
// other window). It listens on the window, in the capture phase, only
// while it clicks.
const clickJS = `(() => {
  const e = document.querySelector(%s);
  if (!e) return {found: false};
  let submitted = null, clicked = null;
  const onSubmit = (ev) => { submitted = ev; }, onClick = (ev) => { clicked = ev; };
  window.addEventListener("submit", onSubmit, true);
  window.addEventListener("click", onClick, true);
  try {
    e.click();
  } finally {
    window.removeEventListener("submit", onSubmit, true);
    window.removeEventListener("click", onClick, true);
  }
  const here = (t) => !t || ["_self", "_top", "_parent"].includes(t.toLowerCase());
  if (submitted && !submitted.defaultPrevented) {
    const form = submitted.target, by = submitted.submitter;
    const method = ((by && by.getAttribute("formmethod")) || form.getAttribute("method") || "").toLowerCase();
    const target = (by && by.getAttribute("formtarget")) ?? form.getAttribute("target");
    if (method !== "dialog" && here(target)) return {found: true, expect: "submitted a form"};
  } else if (clicked && !clicked.defaultPrevented && clicked.target instanceof Element) {
    const a = clicked.target.closest("a[href], area[href]");
    if (a && here(a.getAttribute("target")) && !a.hasAttribute("download")) {
      const to = new URL(a.href), now = new URL(location.href);
      const fragmentOnly = to.hash !== "" && (to.hash = "", now.hash = "", to.href === now.href);
      if ((to.protocol === "http:" || to.protocol === "https:") && !fragmentOnly) return {found: true, expect: "followed a link"};
    }
  }
  return {found: true};
})()`
