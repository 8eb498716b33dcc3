package stateless

import "context"

// requestIDKey is the context key of the id a transport gave a request.
type requestIDKey struct{}

// WithRequestID returns ctx carrying the id the transport gave the
// request it belongs to (API Gateway's request id), which an observer
// logs with the request's answer (package observe's gateway_request_id):
// the one place a door and an observer share, so that neither imports
// the other. *id is read when it is asked for, not copied: a door hands
// over the field it holds, which costs no allocation. A nil or empty id
// is none.
func WithRequestID(ctx context.Context, id *string) context.Context {
	if id == nil || *id == "" {
		return ctx
	}
	return context.WithValue(ctx, requestIDKey{}, id)
}

// RequestID returns the id WithRequestID put in ctx, or "".
func RequestID(ctx context.Context) string {
	if p, _ := ctx.Value(requestIDKey{}).(*string); p != nil {
		return *p
	}
	return ""
}
