package stateless

import (
	"context"
	"fmt"
	"time"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// serveReadResource answers resources/read: a resource, or the first
// template whose pattern matches the URI.
func (x *exchange) serveReadResource(ctx context.Context, p *readResourceParams) Answer {
	if p.URI == nil {
		return refused(mcperr.New(mcperr.KindMalformedParams))
	}
	uri := *p.URI
	h, vars := x.findResource(ctx, uri)
	if h == nil {
		return refused(mcperr.NewUnknownResource(uri))
	}
	return x.execute(ctx, executable{callOrigin: callOrigin{method: "resources/read", target: uri}, round: &p.roundTrip, resource: h, vars: vars})
}

// findResource is the handler of the resource or template uri names, as
// the caller may see it, and a template's variables; nil when there is
// none (or it is hidden from the caller, which answers the same).
func (x *exchange) findResource(ctx context.Context, uri string) (ResourceHandler, map[string]string) {
	if r := x.reg.resource(uri); r != nil && (r.def.Visible == nil || r.def.Visible(ctx, x.call.Principal)) {
		return r.handler, nil
	}
	for _, t := range x.reg.templates {
		if t.def.Visible != nil && !t.def.Visible(ctx, x.call.Principal) {
			continue
		}
		if v, ok := t.match(uri); ok {
			return t.handler, v
		}
	}
	return nil, nil
}

// runResource runs a resource's handler for uri and answers what it
// returned.
func (x *exchange) runResource(ctx context.Context, h ResourceHandler, uri string, vars map[string]string, k stateKey) Answer {
	handlerStart := time.Now()
	res, err := h(ctx, &ResourceRequest{Call: &x.call, URI: uri, Vars: vars})
	x.o.Steps.Handler = time.Since(handlerStart)
	return x.readAnswer(ctx, k, uri, res, err)
}

// readAnswer answers what a resource's handler returned.
func (x *exchange) readAnswer(ctx context.Context, k stateKey, uri string, res *ReadResourceResult, err error) Answer {
	if err != nil {
		return x.nonToolInput(ctx, k, err)
	}
	if res == nil || len(res.Contents) == 0 {
		return refused(mcperr.NewUnknownResource(uri))
	}
	hint := readCache(x.s)
	if res.Cache != nil {
		hint = *res.Cache
	}
	return x.result(res, &resultFields{cache: &hint, meta: res.Meta})
}

// Resource describes a resource with a fixed URI.
type Resource struct {
	URI         string       `json:"uri"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`

	// Visible, if set, hides the resource from callers it rejects: absent
	// from resources/list, and not found on resources/read.
	Visible Visibility `json:"-"`
}

// ResourceTemplate describes a family of resources by an RFC 6570 URI
// template.
type ResourceTemplate struct {
	URITemplate string       `json:"uriTemplate"`
	Name        string       `json:"name"`
	Title       string       `json:"title,omitempty"`
	Description string       `json:"description,omitempty"`
	MIMEType    string       `json:"mimeType,omitempty"`
	Icons       []Icon       `json:"icons,omitempty"`
	Annotations *Annotations `json:"annotations,omitempty"`
	Meta        Meta         `json:"_meta,omitempty"`

	Visible Visibility `json:"-"`
}

// ResourceRequest is a resources/read request as a handler sees it.
type ResourceRequest struct {
	*Call
	URI string
	// Vars are the template variables matched in URI; nil for a resource
	// with a fixed URI.
	Vars map[string]string
}

// ResourceHandler answers resources/read. Return an error made with
// [mcperr.NewUnknownResource] when the resource does not exist, or an
// [*InputRequired] to ask for input.
type ResourceHandler func(ctx context.Context, req *ResourceRequest) (*ReadResourceResult, error)

type registeredResource struct {
	def     Resource
	handler ResourceHandler
	encoded []byte
}

type registeredTemplate struct {
	def     ResourceTemplate
	handler ResourceHandler
	match   func(uri string) (map[string]string, bool)
	encoded []byte
}

// AddResource registers a resource with a fixed URI. It panics if the URI
// is empty or taken.
func (s *Server) AddResource(r *Resource, h ResourceHandler) {
	if r.URI == "" || r.Name == "" || h == nil {
		panic("stateless: a resource needs a URI, a name and a handler")
	}
	rr := &registeredResource{def: *r, handler: h}
	rr.encoded = mustMarshal(&rr.def)
	update(s, func(reg *registry) {
		var ok bool
		reg.resources, ok = insertSorted(reg.resources, rr, func(r *registeredResource) string { return r.def.URI })
		if !ok {
			panic(fmt.Sprintf("stateless: resource %q registered twice", r.URI))
		}
		if r.Visible != nil {
			reg.resourcesHidden = true
		}
	})
}

// A URITemplateEngine parses the RFC 6570 URI templates of resource
// templates and matches URIs against them. Package uritemplate has one,
// on yosida95/uritemplate. The server holds none of its own, so that a
// function with no resource templates links no template library, and
// the regular-expression engine under it, and pays neither's package
// initialization at its cold start.
type URITemplateEngine interface {
	// Parse checks template and returns its matcher: whether uri
	// matches the template and, when it does, the values of the
	// template's variables in it (decoded), by name.
	Parse(template string) (match func(uri string) (vars map[string]string, ok bool), err error)
}

// AddResourceTemplate registers a resource template. resources/read of a
// URI that matches no fixed resource is tried against the templates in
// registration order. It panics when the template does not parse, or
// when the server has no Options.URITemplates to parse it with.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) {
	if t.URITemplate == "" || t.Name == "" || h == nil {
		panic("stateless: a resource template needs a URI template, a name and a handler")
	}
	if s.opts.URITemplates == nil {
		panic(fmt.Sprintf("stateless: resource template %q: matching URIs against templates needs Options.URITemplates (package uritemplate has one: uritemplate.Engine{})", t.URITemplate))
	}
	match, err := s.opts.URITemplates.Parse(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("stateless: resource template %q: %v", t.URITemplate, err))
	}
	rt := &registeredTemplate{def: *t, handler: h, match: match}
	rt.encoded = mustMarshal(&rt.def)
	update(s, func(reg *registry) {
		reg.templates = append(reg.templates, rt)
		if t.Visible != nil {
			reg.resourcesHidden = true
		}
	})
}
