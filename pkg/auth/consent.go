package auth

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"html/template"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/reqstate"
	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// The proxy's cookies. On an https endpoint each is a __Host- cookie
// (Secure, Path=/, no Domain: only this origin sets or reads it); on a
// loopback http endpoint (local mode) the same without the prefix, which
// needs Secure.
const (
	// consentCookie holds, sealed, the clients this browser consented to.
	consentCookie = "mcp-consent"
	// csrfCookie holds the consent page's double-submitted token.
	csrfCookie = "mcp-csrf"
	// flowCookie's name is this and a flow's id; it holds the flow's
	// nonce, whose digest the provider state binds.
	flowCookiePrefix = "mcp-flow-"
)

// Bounds of what a registration declares.
const (
	maxRedirects  = 8
	maxClientName = 128
)

// secureEndpoint reports whether endpoint is https, where the cookies
// take the __Host- prefix.
func secureEndpoint(endpoint string) bool { return strings.HasPrefix(endpoint, "https://") }

// cookieName is name as endpoint's browser holds it.
func cookieName(endpoint, name string) string {
	if secureEndpoint(endpoint) {
		return "__Host-" + name
	}
	return name
}

// newCookie is a cookie of the proxy's: HttpOnly, Path=/, SameSite as
// given, Secure (and __Host-) on https.
func newCookie(endpoint, name, value string, maxAge int, sameSite http.SameSite) *http.Cookie {
	return &http.Cookie{Name: cookieName(endpoint, name), Value: value, Path: "/", MaxAge: maxAge,
		HttpOnly: true, Secure: secureEndpoint(endpoint), SameSite: sameSite}
}

// flowCookieName is the name of flow's cookie.
func flowCookieName(endpoint, flow string) string { return cookieName(endpoint, flowCookiePrefix+flow) }

// flowCookie is the cookie that names the browser of a flow. Lax: the
// provider's redirect back to the callback is a top-level navigation from
// another site, which carries it.
func flowCookie(endpoint, flow, nonce string, maxAge int) *http.Cookie {
	return newCookie(endpoint, flowCookiePrefix+flow, nonce, maxAge, http.SameSiteLaxMode)
}

// expiredCookie removes the cookie named name (already prefixed).
func expiredCookie(name, endpoint string) *http.Cookie {
	return &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: secureEndpoint(endpoint), SameSite: http.SameSiteLaxMode}
}

// cookieValue is the value of r's cookie name. Each cookie is parsed on
// its own, as net/http's Request.Cookie does: a malformed cookie of
// another application on the host must not hide the proxy's.
func cookieValue(r *stateless.Request, name string) (string, bool) {
	hr := http.Request{Header: http.Header{"Cookie": r.Header.Values("Cookie")}}
	c, err := hr.Cookie(name)
	if err != nil {
		return "", false
	}
	return c.Value, true
}

// consents is the consent cookie's sealed content: digests of the
// clients consented to, newest last.
type consents struct {
	Clients [][]byte `json:"c"`
	Expires int64    `json:"t"`
}

// consented reports whether the flow for client may skip the consent
// page: the operator pre-approved it, or this browser consented to it.
func (p *Proxy) consented(ctx context.Context, r *stateless.Request, endpoint, client string) bool {
	if slices.Contains(p.PreApproved, client) {
		return true
	}
	cs := p.consentsOf(ctx, r, endpoint)
	d := digest(client)
	return slices.ContainsFunc(cs.Clients, func(c []byte) bool { return bytes.Equal(c, d) })
}

// consentsOf reads the browser's consent cookie: none when absent or
// unreadable.
func (p *Proxy) consentsOf(ctx context.Context, r *stateless.Request, endpoint string) consents {
	var cs consents
	v, ok := cookieValue(r, cookieName(endpoint, consentCookie))
	if !ok || p.open(ctx, purposeConsents, endpoint, v, &cs, &cs.Expires) != nil {
		return consents{}
	}
	return cs
}

// consentPage answers an authorization request that needs the user's
// consent: a page naming the client, the redirect's host and the scopes,
// whose form carries the sealed request and the CSRF token, set in a
// cookie too.
func (p *Proxy) consentPage(ctx context.Context, r *stateless.Request, endpoint string, req *authzRequest, c *proxyClient) proxyAnswer {
	csrf := randomText(24)
	t := ticket{Request: *req, CSRF: digest(csrf), Expires: p.now().Add(flowTTL).Unix()}
	sealed, err := p.seal(ctx, purposeTicket, endpoint, t)
	if err != nil {
		return sealFailed(err)
	}
	redirectHost := req.Redirect
	if u, err := url.Parse(req.Redirect); err == nil {
		redirectHost = u.Host
	}
	identified := "It registered itself with this endpoint."
	if c.document {
		if u, err := url.Parse(c.id); err == nil {
			identified = "It is identified by its metadata document at " + u.Host + "."
		}
	}
	name := c.name
	if name == "" {
		name = "An unnamed application"
	}
	var scopes []string
	if req.Scope != "" {
		scopes = strings.Split(req.Scope, " ")
	}
	var b bytes.Buffer
	err = consentTemplate.Execute(&b, map[string]any{
		"Name": name, "Identified": identified, "ClientID": c.id, "RedirectHost": redirectHost,
		"Scopes": scopes, "Ticket": sealed, "CSRF": csrf, "Action": strings.TrimSuffix(endpoint, "/") + AuthorizeSuffix,
	})
	if err != nil {
		return proxyAnswer{resp: htmlPage(http.StatusInternalServerError, "Error", "The consent page could not be made."), kind: "server_error", err: err}
	}
	resp := &stateless.Response{Status: http.StatusOK, Header: pageHeader(formTargets(p.AuthorizationEndpoint, req.Redirect)), Body: b.Bytes()}
	resp.Header.Add("Set-Cookie", newCookie(endpoint, csrfCookie, csrf, int(flowTTL/time.Second), http.SameSiteStrictMode).String())
	return proxyAnswer{resp: resp, kind: "consent_required"}
}

// formTargets are the origins the consent form's answer may send the
// browser to (CSP form-action follows redirects): the provider's and the
// client's redirect's.
func formTargets(urls ...string) []string {
	var out []string
	for _, raw := range urls {
		if u, err := url.Parse(raw); err == nil && u.Host != "" {
			out = append(out, u.Scheme+"://"+u.Host)
		}
	}
	return out
}

// consent answers POST /mcp/authorize, the consent page's form.
func (p *Proxy) consent(ctx context.Context, r *stateless.Request, endpoint string) proxyAnswer {
	refuse := func(status int, kind, why string) proxyAnswer {
		return proxyAnswer{resp: htmlPage(status, "Consent refused", why), kind: kind, err: errors.New("auth: proxy: consent refused: " + kind)}
	}
	// The form must come from the consent page, in this browser: a page
	// of another origin may post to this one, but its request names its
	// origin and carries no SameSite=Strict cookie of this one's.
	if o := r.Header.Get("Origin"); o != "" && o != originOf(endpoint) {
		return refuse(http.StatusForbidden, "cross_origin_consent", "This consent did not come from this endpoint's page.")
	}
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" && s != "same-origin" {
		return refuse(http.StatusForbidden, "cross_origin_consent", "This consent did not come from this endpoint's page.")
	}
	form, err := parseForm(r)
	if err != nil {
		return refuse(http.StatusBadRequest, "invalid_request", "The consent form was not readable.")
	}
	var t ticket
	if err := p.open(ctx, purposeTicket, endpoint, form.Get("ticket"), &t, &t.Expires); err != nil {
		if errors.Is(err, reqstate.ErrUnavailable) {
			return sealFailed(err)
		}
		return refuse(http.StatusBadRequest, "invalid_ticket", "This consent page is too old or not this endpoint's. Start again from the application.")
	}
	csrf, ok := cookieValue(r, cookieName(endpoint, csrfCookie))
	if !ok || form.Get("csrf") != csrf || subtle.ConstantTimeCompare(digest(csrf), t.CSRF) != 1 {
		return refuse(http.StatusForbidden, "csrf", "This consent did not come from this endpoint's page in this browser.")
	}
	clearCSRF := expiredCookie(cookieName(endpoint, csrfCookie), endpoint)
	req := &t.Request
	switch form.Get("decision") {
	case "approve":
	case "deny":
		a := redirectError(req, endpoint, "access_denied", errors.New("auth: proxy: the user denied consent"))
		a.resp.Status = http.StatusSeeOther
		a.resp.Header.Add("Set-Cookie", clearCSRF.String())
		return a
	default:
		return refuse(http.StatusBadRequest, "invalid_request", "The consent form named no decision.")
	}
	// Remember the consent: this client's digest, newest last, within the
	// bound.
	cs := p.consentsOf(ctx, r, endpoint)
	d := digest(req.Client)
	cs.Clients = slices.DeleteFunc(cs.Clients, func(c []byte) bool { return bytes.Equal(c, d) })
	cs.Clients = append(cs.Clients, d)
	if n := len(cs.Clients); n > maxConsents {
		cs.Clients = cs.Clients[n-maxConsents:]
	}
	cs.Expires = p.now().Add(consentTTL).Unix()
	sealed, err := p.seal(ctx, purposeConsents, endpoint, cs)
	if err != nil {
		return sealFailed(err)
	}
	return p.toProvider(ctx, endpoint, req, []*http.Cookie{clearCSRF, newCookie(endpoint, consentCookie, sealed, int(consentTTL/time.Second), http.SameSiteLaxMode)}, http.StatusSeeOther)
}

// originOf is the origin of endpoint (scheme://host).
func originOf(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host
}

// pageHeader is the header of the proxy's pages: no script, no frame, no
// cache, forms only to the endpoint itself and to targets (where its
// answers redirect). The referrer goes to the endpoint's own origin only:
// under no-referrer a browser sends the form's Origin as "null", which
// the consent's origin check would refuse; nothing leaves for another.
func pageHeader(targets []string) http.Header {
	formAction := "'self'"
	for _, t := range targets {
		formAction += " " + t
	}
	return http.Header{
		"Content-Type":            {"text/html; charset=utf-8"},
		"Content-Security-Policy": {"default-src 'none'; style-src 'unsafe-inline'; form-action " + formAction + "; frame-ancestors 'none'; base-uri 'none'"},
		"X-Frame-Options":         {"DENY"},
		"X-Content-Type-Options":  {"nosniff"},
		"Referrer-Policy":         {"same-origin"},
		"Cache-Control":           {"no-store"},
	}
}

// htmlPage is a page of the proxy's that says one thing.
func htmlPage(status int, title, text string) *stateless.Response {
	var b bytes.Buffer
	_ = messageTemplate.Execute(&b, map[string]string{"Title": title, "Text": text}) // strings into a fixed template
	return &stateless.Response{Status: status, Header: pageHeader(nil), Body: b.Bytes()}
}

var messageTemplate = template.Must(template.New("message").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>{{.Title}}</title></head>
<body><h1>{{.Title}}</h1><p>{{.Text}}</p></body></html>
`))

var consentTemplate = template.Must(template.New("consent").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>Allow access?</title>
<style>body{font-family:system-ui,sans-serif;max-width:36em;margin:2em auto;padding:0 1em}code{word-break:break-all}button{font-size:1em;padding:.4em 1.2em;margin-right:1em}</style></head>
<body>
<h1>Allow <span id="client-name">{{.Name}}</span> to use this endpoint as you?</h1>
<p>{{.Identified}} Its client id is <code id="client-id">{{.ClientID}}</code>.</p>
<p>After you sign in, it will receive access at <strong id="redirect-host">{{.RedirectHost}}</strong>.</p>
{{if .Scopes}}<p>It asks for:</p><ul id="scopes">{{range .Scopes}}<li><code>{{.}}</code></li>{{end}}</ul>{{end}}
<p>Only allow applications you started yourself. If you did not just connect an application, deny.</p>
<form method="post" action="{{.Action}}">
<input type="hidden" name="ticket" value="{{.Ticket}}">
<input type="hidden" name="csrf" value="{{.CSRF}}">
<button type="submit" name="decision" value="approve" id="approve">Allow</button>
<button type="submit" name="decision" value="deny" id="deny">Deny</button>
</form>
</body></html>
`))
