// Command mcp-event prints a Lambda event that calls an MCP endpoint's
// tool (or any method) as a 2026-07-28 client would, in the shape one of
// the function's doors delivers it: an API Gateway HTTP API event
// (payload 2.0), a REST API proxy event (payload 1.0) or a function URL
// event. `make event` runs it; `make invoke EVENT=<file>` and
// `sam local invoke -e <file>` take what it prints.
//
//	make event TOOL=notes_add ARGS='{"text":"milk"}' DOOR=rest > add.json
//	go run github.com/serverless-mcp/mcp-lambda/cmd/mcp-event -tool count_add -args '{"n":2}'
//
// What `sam local generate-event` makes is refused by the endpoint: it
// has no Content-Type (415), none of the MCP headers nor the _meta every
// 2026-07-28 request carries (-32020, -32602), and its HTTP API event
// names a JWT authorizer without the claims the endpoint reads a caller
// from (refused as unidentified, 401). This command writes exactly what
// API Gateway or Lambda would deliver for a client's request: the body
// as the client sends it (its _meta, the idempotency key if asked), the
// headers that mirror it (MCP-Protocol-Version, Mcp-Method, Mcp-Name), and
// an authorizer's principal only when one is asked for.
package main

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
)

func main() {
	var r request
	flag.StringVar(&r.Door, "door", envOr("DOOR", "http-api"), "the door whose event to print: http-api (payload 2.0), rest (payload 1.0) or function-url")
	flag.StringVar(&r.Method, "method", envOr("METHOD", "tools/call"), "the MCP method")
	flag.StringVar(&r.Name, "tool", os.Getenv("TOOL"), "the tool (tools/call) or prompt (prompts/get) to call")
	flag.StringVar(&r.URI, "uri", os.Getenv("URI"), "the resource to read (resources/read)")
	flag.StringVar(&r.Args, "args", os.Getenv("ARGS"), "the tool's or prompt's arguments, a JSON object")
	flag.StringVar(&r.Key, "key", os.Getenv("KEY"), "an idempotency key for the call (params.idempotencyKey)")
	flag.StringVar(&r.Caps, "caps", envOr("CAPS", "{}"), `the client's capabilities, a JSON object (a confirmed call needs {"elicitation":{}})`)
	flag.StringVar(&r.Principal, "principal", os.Getenv("PRINCIPAL"), "a Lambda authorizer's principal id for the caller (none: anonymous, which the function serves only with MCP_ALLOW_ANONYMOUS=true, as make invoke runs it)")
	flag.StringVar(&r.Host, "host", os.Getenv("HOST"), "the endpoint's host (default: an example host of the door)")
	flag.Parse()
	if err := write(os.Stdout, &r); err != nil {
		fmt.Fprintln(os.Stderr, "mcp-event:", err)
		os.Exit(2)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// write prints r's event, indented, with a final newline.
func write(w io.Writer, r *request) error {
	ev, err := r.event()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(ev, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// request is what the event asks of the endpoint.
type request struct {
	Door, Method, Name, URI, Args, Key, Caps, Principal, Host string
}

// The example hosts of each door, as AWS names them.
const (
	apiHost = "abc123.execute-api.us-east-1.amazonaws.com"
	urlHost = "u7x2example.lambda-url.us-east-1.on.aws"
)

// body is the JSON-RPC request, and its target (the Mcp-Name header).
func (r *request) body() (body []byte, target string, err error) {
	params := map[string]any{}
	object := func(what, s string) (json.RawMessage, error) {
		var v map[string]json.RawMessage
		if err := json.Unmarshal([]byte(s), &v); err != nil || v == nil {
			return nil, fmt.Errorf("%s %q is not a JSON object", what, s)
		}
		return json.RawMessage(s), nil
	}
	switch r.Method {
	case "tools/call", "prompts/get":
		if r.Name == "" {
			return nil, "", fmt.Errorf("%s needs -tool (TOOL=<name>)", r.Method)
		}
		params["name"], target = r.Name, r.Name
		if r.Args != "" {
			args, err := object("-args", r.Args)
			if err != nil {
				return nil, "", err
			}
			params["arguments"] = args
		}
	case "resources/read":
		if r.URI == "" {
			return nil, "", errors.New("resources/read needs -uri (URI=<uri>)")
		}
		params["uri"], target = r.URI, r.URI
	}
	if r.Key != "" {
		if r.Method != "tools/call" {
			return nil, "", errors.New("-key is for tools/call")
		}
		params["idempotencyKey"] = r.Key
	}
	caps, err := object("-caps", r.Caps)
	if err != nil {
		return nil, "", err
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": caps,
		"io.modelcontextprotocol/clientInfo":         map[string]string{"name": "mcp-event", "version": "1.0.0"},
	}
	body, err = json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": r.Method, "params": params})
	return body, target, err
}

// headerValue is v as an Mcp-Name header carries it: as it is when it is
// printable ASCII, else base64-encoded in the form the transport defines.
func headerValue(v string) string {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c > 0x7e {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(v)) + "?="
		}
	}
	return v
}

// event is the door's event carrying the request.
func (r *request) event() (map[string]any, error) {
	body, target, err := r.body()
	if err != nil {
		return nil, err
	}
	host := r.Host
	headers := map[string]string{
		"content-type":         "application/json",
		"accept":               "application/json, text/event-stream",
		"user-agent":           "mcp-event/1.0",
		"mcp-protocol-version": "2026-07-28",
		"mcp-method":           r.Method,
	}
	if target != "" {
		headers["mcp-name"] = headerValue(target)
	}
	const sourceIP = "203.0.113.10"
	switch r.Door {
	case "http-api", "function-url":
		routeKey, prefix := "POST /mcp", "abc123"
		if host == "" {
			host = apiHost
		}
		if r.Door == "function-url" {
			routeKey, prefix = "$default", "u7x2example"
			if r.Host == "" {
				host = urlHost
			}
		}
		headers["host"] = host
		rc := map[string]any{
			"accountId": "123456789012", "apiId": prefix, "domainName": host, "domainPrefix": prefix,
			"http":      map[string]any{"method": "POST", "path": "/mcp", "protocol": "HTTP/1.1", "sourceIp": sourceIP, "userAgent": "mcp-event/1.0"},
			"requestId": "mcp-event", "routeKey": routeKey, "stage": "$default",
			"time": "01/Dec/2026:00:00:00 +0000", "timeEpoch": 1796083200000,
		}
		if r.Principal != "" {
			if r.Door == "function-url" {
				return nil, errors.New("a function URL has no authorizer: -principal is for http-api and rest")
			}
			rc["authorizer"] = map[string]any{"lambda": map[string]string{"principalId": r.Principal}}
		}
		return map[string]any{"version": "2.0", "routeKey": routeKey, "rawPath": "/mcp", "rawQueryString": "",
			"headers": headers, "requestContext": rc, "body": string(body), "isBase64Encoded": false}, nil
	case "rest":
		if host == "" {
			host = apiHost
		}
		// A REST API keeps the client's header names as sent, and lists
		// every header in multiValueHeaders too.
		canonical := map[string]string{"content-type": "Content-Type", "accept": "Accept", "user-agent": "User-Agent",
			"mcp-protocol-version": "MCP-Protocol-Version", "mcp-method": "Mcp-Method", "mcp-name": "Mcp-Name"}
		single, multi := map[string]string{"Host": host}, map[string][]string{"Host": {host}}
		for k, v := range headers {
			single[canonical[k]], multi[canonical[k]] = v, []string{v}
		}
		rc := map[string]any{"resourcePath": "/mcp", "httpMethod": "POST", "path": "/prod/mcp", "accountId": "123456789012",
			"requestId": "mcp-event", "stage": "prod", "domainName": host, "apiId": "abc123", "identity": map[string]string{"sourceIp": sourceIP}}
		if r.Principal != "" {
			rc["authorizer"] = map[string]string{"principalId": r.Principal}
		}
		return map[string]any{"resource": "/mcp", "path": "/mcp", "httpMethod": "POST", "headers": single, "multiValueHeaders": multi,
			"queryStringParameters": nil, "requestContext": rc, "body": string(body), "isBase64Encoded": false}, nil
	}
	return nil, fmt.Errorf("-door %q: want http-api, rest or function-url", r.Door)
}
