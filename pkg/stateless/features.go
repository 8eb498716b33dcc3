package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/yosida95/uritemplate/v3"
)

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
	tmpl    *uritemplate.Template
	re      *regexp.Regexp
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

// AddResourceTemplate registers a resource template. resources/read of a
// URI that matches no fixed resource is tried against the templates in
// registration order.
func (s *Server) AddResourceTemplate(t *ResourceTemplate, h ResourceHandler) {
	if t.URITemplate == "" || t.Name == "" || h == nil {
		panic("stateless: a resource template needs a URI template, a name and a handler")
	}
	tmpl, err := uritemplate.New(t.URITemplate)
	if err != nil {
		panic(fmt.Sprintf("stateless: resource template %q: %v", t.URITemplate, err))
	}
	rt := &registeredTemplate{def: *t, handler: h, tmpl: tmpl, re: tmpl.Regexp()}
	rt.encoded = mustMarshal(&rt.def)
	update(s, func(reg *registry) {
		reg.templates = append(reg.templates, rt)
		if t.Visible != nil {
			reg.resourcesHidden = true
		}
	})
}

// match returns the template variables of uri, or nil.
func (t *registeredTemplate) match(uri string) map[string]string {
	if !t.re.MatchString(uri) {
		return nil
	}
	vals := t.tmpl.Match(uri)
	vars := make(map[string]string, len(t.tmpl.Varnames()))
	for _, n := range t.tmpl.Varnames() {
		vars[n] = vals.Get(n).String()
	}
	return vars
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

func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("stateless: %T does not marshal: %v", v, err))
	}
	return b
}

// suggest returns the visible name closest to name, if one is close
// enough to be a likely typo.
func suggest(name string, candidates []string) string {
	limit := min(2, max(1, len(name)/2))
	best, bestD := "", limit+1
	ln := strings.ToLower(name)
	for _, c := range candidates {
		if d := editDistance(ln, strings.ToLower(c), limit); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b, or max+1 once it
// is known to exceed max.
func editDistance(a, b string, max int) int {
	if len(a) > 256 || len(b) > 256 {
		return max + 1
	}
	if d := len(a) - len(b); d > max || -d > max {
		return max + 1
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > max {
			return max + 1
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
