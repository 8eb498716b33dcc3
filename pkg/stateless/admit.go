package stateless

import (
	"context"
	"net/http"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Admission is the decision of an authorizer in front of the endpoint,
// which sees a request by its headers alone: an API Gateway REST API's
// Lambda REQUEST authorizer (package apigw answers its events with
// [Server.Admit]).
//
// Such an authorizer exists for the challenges. A REST API renames the
// WWW-Authenticate header of a Lambda proxy response, and cannot map it
// back, so the function's own 401 and 403 reach a client without their
// challenge; the responses API Gateway gives for an authorizer's refusal
// (its gateway responses) carry headers the API sets itself. The function
// still authenticates every request it is invoked for: the authorizer
// only decides earlier, with the same rules.
type Admission struct {
	// Principal is the caller the token names, or Anonymous on an
	// endpoint without [Options.Auth]; "" when the request is refused 401.
	Principal string
	// Refusal is nil to let the request through. Otherwise it is
	// Unauthorized (no token, a malformed one, or one that fails
	// validation), InsufficientScope (the token lacks a scope the tool
	// named by Mcp-Name needs; RequiredScopes names every one), or a
	// server-side kind such as DependencyFailure (the token could not be
	// checked: the request fails closed, and the kind says whether a
	// retry can succeed).
	Refusal *mcperr.Error
	// RequiredScopes are, with InsufficientScope, every scope the tool
	// needs, as the client must ask for them (the Authenticator's names:
	// the provider's).
	RequiredScopes []string
}

// Decision is what an authorizer does with a request
// ([Admission.Decision]). Its name is the Outcome its report carries: a
// closed set, which alarms tell apart.
type Decision uint8

// The decisions.
const (
	// DecisionAllow lets the request go on ("ok").
	DecisionAllow Decision = iota
	// DecisionUnauthorized refuses it 401: no token, a malformed one, or
	// one that fails validation, an expired one say ("unauthorized"). A
	// routine refusal.
	DecisionUnauthorized
	// DecisionForbidden refuses it 403: the token lacks a scope the tool
	// needs ("forbidden"). A routine refusal.
	DecisionForbidden
	// DecisionUnavailable fails it closed: the token could not be checked
	// (the issuer's keys out of reach), which holds for every request
	// while it lasts ("unavailable"). A server fault.
	DecisionUnavailable
)

// decisions are each decision's name and the status the door answers
// with: the request's own when it goes on, the template's gateway
// responses' otherwise (its 503 for an authorizer that failed; API
// Gateway's default is 500).
var decisions = [...]struct {
	name   string
	status int
}{
	DecisionAllow:        {"ok", http.StatusOK},
	DecisionUnauthorized: {"unauthorized", http.StatusUnauthorized},
	DecisionForbidden:    {"forbidden", http.StatusForbidden},
	DecisionUnavailable:  {"unavailable", http.StatusServiceUnavailable},
}

func (d Decision) String() string { return decisions[d].name }

// Decision is the decision a refusal comes to: Unauthorized and
// InsufficientScope are the two routine refusals, any other kind a
// token that could not be checked.
func (a Admission) Decision() Decision {
	switch {
	case a.Refusal == nil:
		return DecisionAllow
	case a.Refusal.Kind() == mcperr.KindUnauthorized:
		return DecisionUnauthorized
	case a.Refusal.Kind() == mcperr.KindInsufficientScope:
		return DecisionForbidden
	}
	return DecisionUnavailable
}

// MethodAuthorize is the Method of the Outcome an authorizer's decision is
// reported with: a name of the server's own (Outcome.OwnMethod), which no
// request carries.
const MethodAuthorize = "authorize"

// Admit decides whether a request to the endpoint whose canonical URL is
// endpoint may go on, by its headers alone: the credentials (the bearer
// token in Authorization), which the Authenticator checks for endpoint as
// it does for the server, and, for a tools/call (Mcp-Method), the scopes
// of the tool Mcp-Name names.
// The body is not read (an authorizer is not given it), so the headers are
// trusted only this far: the server refuses a request whose Mcp-Method or
// Mcp-Name differs from its body, and checks the token and the scopes
// again itself.
//
// A tool that is unknown, or that a visibility rule governs, is not
// judged here: the request goes on, and the server answers it exactly as
// it answers a call of a tool that does not exist, or checks the scopes
// of a tool the caller can see.
//
// Every decision is reported as an answer is (Options.Observe, and the
// log line of a refusal): Method MethodAuthorize, Kind the decision's name
// ("" when the request goes on), Status the door's, the refusal's cause,
// and Fault for DecisionUnavailable alone.
func (s *Server) Admit(ctx context.Context, endpoint string, header http.Header) Admission {
	start := time.Now()
	o := &Outcome{Method: MethodAuthorize, OwnMethod: true}
	ctx = s.observing(ctx, header, o)
	adm := s.admit(ctx, endpoint, header)
	d := adm.Decision()
	if e := adm.Refusal; e != nil {
		o.Kind, o.Code, o.Err = d.String(), e.Code(), e.Unwrap()
		if d == DecisionUnavailable {
			o.Fault = true
			if o.Err == nil {
				o.Err = e
			}
		}
	}
	s.reportSince(ctx, o, decisions[d].status, start)
	return adm
}

// admit is Admit's decision.
func (s *Server) admit(ctx context.Context, endpoint string, header http.Header) Admission {
	a := s.opts.Auth
	if a == nil {
		return Admission{Principal: Anonymous}
	}
	principal, scopes, e := s.checkToken(ctx, endpoint, header, nil)
	if e != nil {
		return Admission{Refusal: e}
	}
	adm := Admission{Principal: principal}
	if method, _, ok := headerValue(header, headerMethod); !ok || method != "tools/call" {
		return adm
	}
	name, _, ok := headerValue(header, headerName)
	if !ok {
		return adm
	}
	t := s.reg.Load().tool(name)
	if t == nil || t.def.Visible != nil || len(t.def.Scopes) == 0 {
		return adm
	}
	if len(MissingScopes(scopes, t.def.Scopes, a.ScopeImplies)) > 0 {
		adm.Refusal, adm.RequiredScopes = a.Authenticator.InsufficientScope(endpoint, t.def.Scopes)
	}
	return adm
}
