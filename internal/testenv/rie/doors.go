package rie

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/textproto"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/serverless-mcp/mcp-lambda/pkg/stateless"
)

// Door is the AWS front door a front stands in for. Each applies what AWS
// documents that door does to a request on its way to the function and to
// the function's response on its way back; where AWS is silent and
// first-hand reports say a door does more, the door does that too (the
// pessimistic reading, so that a test passing here does not rely on AWS
// being kind). docs/aws-contract.md lists each transformation with its
// source and the test that shows the front applies it.
type Door int

const (
	// HTTPAPI is an API Gateway HTTP API's $default stage with a Lambda
	// proxy integration, payload format 2.0: the template's buffered door.
	HTTPAPI Door = iota
	// RESTAPI is a stage (RESTStage) of an API Gateway REST API with a
	// Lambda proxy integration, payload format 1.0: the template's
	// streaming door.
	RESTAPI
	// FunctionURL is a Lambda function URL (payload format 2.0).
	FunctionURL
)

func (d Door) String() string {
	switch d {
	case HTTPAPI:
		return "HTTP API"
	case RESTAPI:
		return "REST API"
	case FunctionURL:
		return "function URL"
	}
	return "Door(" + strconv.Itoa(int(d)) + ")"
}

// RESTStage is the REST door's stage: the first segment of every path its
// invoke URL serves (the template's StreamStage).
const RESTStage = "v1"

// Limits AWS documents for each door (API Gateway developer guide,
// "Quotas for configuring and running an HTTP API" and "... a REST API";
// Lambda developer guide, "Lambda quotas": 6 MB for a synchronous
// invocation's request and buffered response).
const (
	gatewayMaxRequest      = 10 << 20
	lambdaMaxSyncPayload   = 6 << 20
	restDefaultTimeout     = 29 * time.Second
	functionMaxTimeout     = 15 * time.Minute
	templateHTTPAPITimeout = 29 * time.Second // McpIntegration's TimeoutInMillis (API Gateway allows 30 s)
)

// maxRequest is the largest request body the door passes to the function.
func (d Door) maxRequest() int64 {
	if d == FunctionURL {
		return lambdaMaxSyncPayload
	}
	return gatewayMaxRequest
}

// Timeout is how long the door waits for a buffered answer: the
// template's integration timeout for the HTTP API, API Gateway's default
// for a REST API, the function's own timeout for a function URL.
func (d Door) Timeout() time.Duration {
	switch d {
	case RESTAPI:
		return restDefaultTimeout
	case FunctionURL:
		return functionMaxTimeout
	}
	return templateHTTPAPITimeout
}

// refusal writes the answer the door itself gives (not the function's):
// API Gateway's JSON message bodies.
func (d Door) refusal(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"message": message})
	w.Write(b)
}

// tooLarge answers a request body over the door's limit: 413 (API
// Gateway's "Request Entity Too Large"; a function URL's likewise).
func (d Door) tooLarge(w http.ResponseWriter) {
	d.refusal(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large")
}

// timedOut answers an integration that did not answer in time: 503 from
// an HTTP API, 504 "Endpoint request timed out" from a REST API, 502 from
// a function URL (the invocation failed).
func (d Door) timedOut(w http.ResponseWriter) {
	switch d {
	case RESTAPI:
		d.refusal(w, http.StatusGatewayTimeout, "Endpoint request timed out")
	case FunctionURL:
		d.refusal(w, http.StatusBadGateway, "Internal Server Error")
	default:
		d.refusal(w, http.StatusServiceUnavailable, "Service Unavailable")
	}
}

// badResponse answers a function response the door cannot use (not a
// proxy response, or over Lambda's 6 MB): 502 from a REST API ("Internal
// server error"), 500 from an HTTP API, 502 from a function URL.
func (d Door) badResponse(w http.ResponseWriter) {
	switch d {
	case HTTPAPI:
		d.refusal(w, http.StatusInternalServerError, "Internal Server Error")
	default:
		d.refusal(w, http.StatusBadGateway, "Internal server error")
	}
}

// remappedByREST are the response headers a REST API's Lambda proxy
// integration sends on as x-amzn-Remapped-<name> (API Gateway developer
// guide, "Amazon API Gateway important notes", REST APIs: the headers
// that "may be remapped"). Of that list the front passes Content-Type,
// Content-Length, Content-Encoding and Transfer-Encoding under their
// names: API Gateway frames the body itself, and every Lambda proxy
// integration's Content-Type reaches its clients.
var remappedByREST = []string{
	"Accept", "Accept-Charset", "Accept-Encoding", "Age", "Authorization", "Connection", "Content-Md5", "Date",
	"Expect", "Host", "Max-Forwards", "Pragma", "Proxy-Authenticate", "Range", "Referer", "Server", "Te",
	"Trailer", "Upgrade", "User-Agent", "Via", "Warn", "Www-Authenticate",
}

// remapPrefix is what a remapped header's name is given.
const remapPrefix = "X-Amzn-Remapped-"

// remap renames the response headers the door renames. A REST API renames
// the documented list. For HTTP APIs and function URLs AWS documents no
// renaming, but first-hand reports say WWW-Authenticate arrives as
// x-amzn-Remapped-WWW-Authenticate: the front renames it (the
// pessimistic reading).
func (d Door) remap(h http.Header) {
	names := []string{"Www-Authenticate"}
	if d == RESTAPI {
		names = remappedByREST
	}
	for name, vs := range h {
		if slices.Contains(names, textproto.CanonicalMIMEHeaderKey(name)) {
			delete(h, name)
			h[textproto.CanonicalMIMEHeaderKey(remapPrefix+name)] = vs
		}
	}
}

// ResponseParameters are an HTTP API integration's response parameter
// mappings (API Gateway developer guide, "Transform API requests and
// responses for HTTP APIs"): by status code, a key
// (overwrite|append|remove:header.<name>, overwrite:statuscode) and its
// value ($response.header.<name>, or a static string).
type ResponseParameters map[int]map[string]string

// TemplateResponseParameters returns the response parameters the
// template gives the HTTP API's integration (McpIntegration): a refusal's
// challenge copied from the function's relay header into
// WWW-Authenticate, which API Gateway then sets itself. The template test
// in deploy/ holds the template to this.
func TemplateResponseParameters() ResponseParameters {
	m := map[string]string{"overwrite:header.WWW-Authenticate": "$response.header." + stateless.ChallengeRelayHeader}
	return ResponseParameters{http.StatusUnauthorized: m, http.StatusForbidden: m}
}

// apply changes the status and headers by the mappings for the status, as
// API Gateway applies them after the integration answered: each value is
// read from the response as the function sent it (fn), before any
// mapping. A value that reads a header the response lacks maps nothing.
func (p ResponseParameters) apply(status int, fn, h http.Header) (int, error) {
	keys := make([]string, 0, len(p[status]))
	for k := range p[status] {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := status
	for _, key := range keys {
		value, ok := mappedValue(p[status][key], fn)
		action, target, found := strings.Cut(key, ":")
		if !found {
			return 0, fmt.Errorf("response parameter %q: no action", key)
		}
		if target == "statuscode" && action == "overwrite" {
			n, err := strconv.Atoi(value)
			if err != nil || n < 100 || n > 599 {
				return 0, fmt.Errorf("response parameter %q: status %q", key, value)
			}
			out = n
			continue
		}
		name, isHeader := strings.CutPrefix(target, "header.")
		if !isHeader {
			return 0, fmt.Errorf("response parameter %q: not a header or the status", key)
		}
		switch action {
		case "remove":
			h.Del(name)
		case "overwrite":
			if ok {
				h.Set(name, value)
			}
		case "append":
			if ok {
				h.Add(name, value)
			}
		default:
			return 0, fmt.Errorf("response parameter %q: action %q", key, action)
		}
	}
	return out, nil
}

// mappedValue is a response parameter's value: the named header of the
// function's response, or the static string.
func mappedValue(v string, fn http.Header) (string, bool) {
	if name, ok := strings.CutPrefix(v, "$response.header."); ok {
		vs := fn.Values(name)
		return strings.Join(vs, ","), len(vs) > 0
	}
	return v, true
}
