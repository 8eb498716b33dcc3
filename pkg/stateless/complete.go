package stateless

import (
	"context"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// CompleteRequest is a completion/complete request.
type CompleteRequest struct {
	*Call
	// RefType is "ref/prompt" or "ref/resource"; RefName is the prompt
	// name or the resource template's URI template.
	RefType, RefName string
	// Argument is the argument being completed and its partial value.
	Argument, Value string
	// Context holds arguments already resolved.
	Context map[string]string
}

// CompletionHandler answers completion/complete.
type CompletionHandler func(ctx context.Context, req *CompleteRequest) (*CompleteResult, error)

// SetCompletionHandler sets the handler for completion/complete and
// advertises the completions capability.
func (s *Server) SetCompletionHandler(h CompletionHandler) {
	update(s, func(reg *registry) { reg.complete = h })
}

// serveComplete answers completion/complete from the completion handler.
func (x *exchange) serveComplete(ctx context.Context, p *completeParams) Answer {
	if p.Ref == nil || p.Argument == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	req := &CompleteRequest{Call: &x.call, RefType: p.Ref.Type, Argument: p.Argument.Name, Value: p.Argument.Value}
	switch p.Ref.Type {
	case "ref/prompt":
		req.RefName = p.Ref.Name
	case "ref/resource":
		req.RefName = p.Ref.URI
	default:
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	if p.Context != nil {
		req.Context = p.Context.Arguments
	}
	res, err := x.reg.complete(ctx, req)
	if err != nil {
		return handlerFailure(ctx, err)
	}
	if res == nil {
		res = &CompleteResult{}
	}
	if res.Completion.Values == nil {
		res.Completion.Values = []string{}
	}
	if len(res.Completion.Values) > 100 {
		res.Completion.Values = res.Completion.Values[:100]
		res.Completion.HasMore = true
	}
	return x.result(res, &resultFields{})
}
