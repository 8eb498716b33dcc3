package stateless

// InputRequired is returned as the error of a tool, prompt or resource
// handler that needs the client's input before it can finish: the
// multi-round-trip pattern of revision 2026-07-28. The server answers
// with resultType "input_required"; the client fulfils Requests and
// retries the same request with the answers and the sealed State, which
// the handler reads back with [Call.InputResponse] and [Call.State].
//
// Accumulate earlier rounds' answers in State: a retry carries only the
// latest round's responses.
type InputRequired struct {
	// Requests are the input requests, by key. Keys are the handler's
	// choice and unique within the result.
	Requests map[string]InputRequest
	// State is sealed by the server and returned on the retry. nil sends
	// no requestState.
	State []byte
	// SingleUse makes State redeemable once: the first retry that carries
	// it is served, every later one is refused as an invalid state. It
	// needs an interceptor that redeems single-use states (claims.Guard's).
	// Binding a state to its request does not stop a client from sending
	// the same retry twice; this does.
	SingleUse bool
}

// State flags, the first byte of every sealed state.
const (
	stateMultiUse  byte = 0
	stateSingleUse byte = 1
)

func (*InputRequired) Error() string { return "stateless: input required" }

// InputRequest is one request embedded in an input_required result:
// elicitation/create, sampling/createMessage or roots/list.
type InputRequest struct {
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ElicitForm asks the user to fill a flat form. schema is the
// requestedSchema: an object with primitive properties.
func ElicitForm(message string, schema any) InputRequest {
	return InputRequest{Method: "elicitation/create", Params: map[string]any{
		"mode": "form", "message": message, "requestedSchema": schema,
	}}
}

// ElicitURL asks the user to visit url. Correlate the outcome through an
// id of your own kept in the state.
func ElicitURL(message, url string) InputRequest {
	return InputRequest{Method: "elicitation/create", Params: map[string]any{
		"mode": "url", "message": message, "url": url,
	}}
}

// CreateMessage asks the client to sample its model. params is a
// CreateMessageRequestParams object.
func CreateMessage(params any) InputRequest {
	return InputRequest{Method: "sampling/createMessage", Params: params}
}

// ListRoots asks the client for its roots.
func ListRoots() InputRequest { return InputRequest{Method: "roots/list"} }

// requiredCapability returns, for an input request the client has not
// declared the capability for, the ClientCapabilities member it needs;
// nil when the client can take it.
func requiredCapability(caps *ClientCapabilities, r InputRequest) map[string]any {
	switch r.Method {
	case "elicitation/create":
		url := false
		if p, ok := r.Params.(map[string]any); ok {
			url = p["mode"] == "url"
		}
		e := caps.Elicitation
		if url {
			if e == nil || e.URL == nil {
				return map[string]any{"elicitation": map[string]any{"url": map[string]any{}}}
			}
			return nil
		}
		// An empty elicitation object means form mode.
		if e == nil || (e.Form == nil && e.URL != nil) {
			return map[string]any{"elicitation": map[string]any{}}
		}
	case "sampling/createMessage":
		if caps.Sampling == nil {
			return map[string]any{"sampling": map[string]any{}}
		}
	case "roots/list":
		if caps.Roots == nil {
			return map[string]any{"roots": map[string]any{}}
		}
	}
	return nil
}
