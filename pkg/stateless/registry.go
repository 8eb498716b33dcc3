package stateless

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// registry is an immutable snapshot of what is registered. Registration
// copies it; requests read it without locks.
type registry struct {
	tools     []*registeredTool // sorted by name
	resources []*registeredResource
	templates []*registeredTemplate
	prompts   []*registeredPrompt
	complete  CompletionHandler
	// custom are the server's own methods (AddMethod), by name.
	custom map[string]*methodInfo

	advertised      map[string]any // the interceptors' extensions (Provides.Extensions)
	toolsHidden     bool           // some tool has a visibility rule
	promptsHidden   bool
	resourcesHidden bool
}

func (r *registry) clone() *registry {
	c := *r
	c.tools = slices.Clone(r.tools)
	c.resources = slices.Clone(r.resources)
	c.templates = slices.Clone(r.templates)
	c.prompts = slices.Clone(r.prompts)
	c.custom = maps.Clone(r.custom)
	return &c
}

// method is the row of a method: the protocol's, else the server's own.
func (r *registry) method(name string) *methodInfo {
	if m := protocolMethod(name); m != nil {
		return m
	}
	if r == nil {
		return nil
	}
	return r.custom[name]
}

// methodOf is method of a name given as bytes, which it looks up without
// making a string of them; a nil registry has the protocol's methods
// only.
func (r *registry) methodOf(name []byte) *methodInfo {
	if m := protocolMethod(name); m != nil {
		return m
	}
	if r == nil {
		return nil
	}
	return r.custom[string(name)]
}

func update(s *Server, f func(r *registry)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reg.Load().clone()
	f(r)
	s.reg.Store(r)
}

// Visibility decides whether the caller identified by principal may see
// an item. Hidden items answer exactly like absent ones.
type Visibility func(ctx context.Context, principal string) bool

func (r *registry) tool(name string) *registeredTool {
	i, ok := slices.BinarySearchFunc(r.tools, name, func(t *registeredTool, n string) int { return strings.Compare(t.def.Name, n) })
	if !ok {
		return nil
	}
	return r.tools[i]
}

func (r *registry) prompt(name string) *registeredPrompt {
	i, ok := slices.BinarySearchFunc(r.prompts, name, func(p *registeredPrompt, n string) int { return strings.Compare(p.def.Name, n) })
	if !ok {
		return nil
	}
	return r.prompts[i]
}

func (r *registry) resource(uri string) *registeredResource {
	i, ok := slices.BinarySearchFunc(r.resources, uri, func(p *registeredResource, n string) int { return strings.Compare(p.def.URI, n) })
	if !ok {
		return nil
	}
	return r.resources[i]
}

func insertSorted[T any](list []T, item T, key func(T) string) ([]T, bool) {
	i, found := slices.BinarySearchFunc(list, key(item), func(e T, k string) int { return strings.Compare(key(e), k) })
	if found {
		return list, false
	}
	return slices.Insert(list, i, item), true
}

// capabilities returns what the registry lets the server advertise: each
// feature of the feature table it has.
func (r *registry) capabilities() ServerCapabilities {
	var c ServerCapabilities
	for _, f := range featureTable {
		if f.present(r) {
			f.advertise(&c)
		}
	}
	// Logging: notifications/message rides on a request's own response
	// stream when the request's _meta asks for a level.
	c.Logging = &struct{}{}
	for id, settings := range r.advertised {
		if c.Extensions == nil {
			c.Extensions = map[string]any{}
		}
		c.Extensions[id] = settings
	}
	// An extension is advertised once one of its methods is registered.
	for _, m := range r.custom {
		if m.extension != "" {
			if c.Extensions == nil {
				c.Extensions = map[string]any{}
			}
			c.Extensions[m.extension] = map[string]any{}
		}
	}
	return c
}

// listenable marks what a listen stream delivers as advertised: the
// lists' listChanged, and subscribe for resources.
func (c *ServerCapabilities) listenable() {
	if c.Tools != nil {
		c.Tools.ListChanged = true
	}
	if c.Prompts != nil {
		c.Prompts.ListChanged = true
	}
	if c.Resources != nil {
		c.Resources.ListChanged, c.Resources.Subscribe = true, true
	}
}

// has reports whether the registry has feature (a name of the feature
// table, as the method table's rows name them), which the server then
// advertises.
func (r *registry) has(feature string) bool {
	for _, f := range featureTable {
		if f.name == feature {
			return f.present(r)
		}
	}
	return false
}

// featureTable is what a feature of the method table needs besides its
// methods: when the registry has it, and how it is advertised. A method of
// a new feature is one row here and one in the method table.
var featureTable = []struct {
	name      string
	present   func(*registry) bool
	advertise func(*ServerCapabilities)
}{
	{"tools", func(r *registry) bool { return len(r.tools) > 0 }, func(c *ServerCapabilities) { c.Tools = &ListCapability{} }},
	{"prompts", func(r *registry) bool { return len(r.prompts) > 0 }, func(c *ServerCapabilities) { c.Prompts = &ListCapability{} }},
	{"resources", func(r *registry) bool { return len(r.resources) > 0 || len(r.templates) > 0 }, func(c *ServerCapabilities) { c.Resources = &ResourceCapability{} }},
	{"completions", func(r *registry) bool { return r.complete != nil }, func(c *ServerCapabilities) { c.Completions = &struct{}{} }},
}

func discoverCache(s *Server) CacheHint {
	if s.opts.DiscoverCache != nil {
		return *s.opts.DiscoverCache
	}
	return CacheHint{TTL: 5 * time.Minute}
}

func listCache(s *Server, hidden bool) CacheHint {
	h := CacheHint{TTL: time.Minute}
	if s.opts.ListCache != nil {
		h = *s.opts.ListCache
	}
	if hidden {
		h.Private = true
	}
	return h
}

func readCache(s *Server) CacheHint {
	if s.opts.ReadCache != nil {
		return *s.opts.ReadCache
	}
	return CacheHint{Private: true}
}

func legacyLogLevel(s *Server) LoggingLevel {
	if s.opts.LegacyLogLevel.rank() > 0 {
		return s.opts.LegacyLogLevel
	}
	return LevelInfo
}

// mustMarshal is v's JSON, for a definition registered once; a definition
// that does not marshal is a programming error.
func mustMarshal(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("stateless: %T does not marshal: %v", v, err))
	}
	return b
}
