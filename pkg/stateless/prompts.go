package stateless

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	jsonv2 "github.com/go-json-experiment/json"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveGetPrompt answers prompts/get: the visible prompt, its required
// arguments, its request state, its handler.
func (x *exchange) serveGetPrompt(ctx context.Context, p *getPromptParams) Answer {
	if p.Name == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	pr := x.reg.prompt(*p.Name)
	if pr == nil || (pr.def.Visible != nil && !pr.def.Visible(ctx, x.call.Principal)) {
		return refused(mcperr.New(mcperr.KindUnknownPrompt))
	}
	x.o.Target = pr.def.Name
	var args map[string]string
	if a := bytes.TrimSpace(p.Arguments); len(a) > 0 && string(a) != "null" {
		if err := jsonv2.Unmarshal(a, &args); err != nil {
			return refused(mcperr.Wrap(mcperr.KindMalformedParams, err))
		}
	}
	for _, a := range pr.def.Arguments {
		if _, ok := args[a.Name]; a.Required && !ok {
			return refused(mcperr.Wrap(mcperr.KindMalformedParams, errors.New("missing a required prompt argument")))
		}
	}
	return x.execute(ctx, executable{callOrigin: callOrigin{method: "prompts/get", target: pr.def.Name}, stateArgs: json.RawMessage(p.Arguments), round: &p.roundTrip,
		prompt: pr, promptArgs: args})
}

// runPrompt runs a prompt's handler and answers what it returned.
func (x *exchange) runPrompt(ctx context.Context, pr *registeredPrompt, args map[string]string, k stateKey) Answer {
	handlerStart := time.Now()
	res, err := pr.handler(ctx, &PromptRequest{Call: &x.call, Name: pr.def.Name, Arguments: args})
	x.o.Steps.Handler = time.Since(handlerStart)
	return x.promptAnswer(ctx, k, res, err)
}

// promptAnswer answers what a prompt's handler returned.
func (x *exchange) promptAnswer(ctx context.Context, k stateKey, res *GetPromptResult, err error) Answer {
	if err != nil {
		return x.nonToolInput(ctx, k, err)
	}
	if res == nil {
		return refused(mcperr.Wrap(mcperr.KindInternal, errors.New("prompt handler returned no result")))
	}
	if res.Messages == nil {
		res.Messages = []PromptMessage{}
	}
	return x.result(res, &resultFields{meta: res.Meta})
}

// Prompt describes a prompt.
type Prompt struct {
	Name        string           `json:"name"`
	Title       string           `json:"title,omitempty"`
	Description string           `json:"description,omitempty"`
	Arguments   []PromptArgument `json:"arguments,omitempty"`
	Icons       []Icon           `json:"icons,omitempty"`
	Meta        Meta             `json:"_meta,omitempty"`

	Visible Visibility `json:"-"`
}

// PromptArgument describes one argument of a prompt.
type PromptArgument struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Required    bool   `json:"required,omitempty"`
}

// PromptRequest is a prompts/get request as a handler sees it.
type PromptRequest struct {
	*Call
	Name      string
	Arguments map[string]string
}

// PromptHandler answers prompts/get.
type PromptHandler func(ctx context.Context, req *PromptRequest) (*GetPromptResult, error)

type registeredPrompt struct {
	def     Prompt
	handler PromptHandler
	encoded []byte
}

// AddPrompt registers a prompt. It panics if the name is empty or taken.
func (s *Server) AddPrompt(p *Prompt, h PromptHandler) {
	if p.Name == "" || h == nil {
		panic("stateless: a prompt needs a name and a handler")
	}
	rp := &registeredPrompt{def: *p, handler: h}
	rp.encoded = mustMarshal(&rp.def)
	update(s, func(reg *registry) {
		var ok bool
		reg.prompts, ok = insertSorted(reg.prompts, rp, func(p *registeredPrompt) string { return p.def.Name })
		if !ok {
			panic(fmt.Sprintf("stateless: prompt %q registered twice", p.Name))
		}
		if p.Visible != nil {
			reg.promptsHidden = true
		}
	})
}
