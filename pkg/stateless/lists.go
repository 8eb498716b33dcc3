package stateless

import (
	"context"
	"encoding/base64"
	"fmt"

	mcperr "github.com/serverless-mcp/mcp-lambda/pkg/errors"
)

// Cursor kinds, so that a cursor of one list is refused by another.
const (
	cursorTools     = 't'
	cursorPrompts   = 'p'
	cursorResources = 'r'
	cursorTemplates = 'T'
)

// startAfter decodes a cursor: the key of the last item of the previous
// page. nil or "" starts at the beginning.
func startAfter(cursor *string, kind byte) (string, bool, *mcperr.Error) {
	if cursor == nil || *cursor == "" {
		return "", false, nil
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(*cursor)
	if err != nil || len(b) < 2 || b[0] != kind {
		return "", false, mcperr.New(mcperr.KindInvalidCursor)
	}
	return string(b[1:]), true, nil
}

func makeCursor(kind byte, key string) string {
	return base64.RawURLEncoding.EncodeToString(append([]byte{kind}, key...))
}

// listPage writes one page of a list result: the visible items after the
// cursor, at most the page size, in the list's deterministic order.
func listPage[T any](x *exchange, ctx context.Context, p *listParams, field string, kind byte, items []T,
	key func(T) string, visible func(T) Visibility, enc func(T) []byte, hidden bool) Answer {
	after, has, e := startAfter(p.Cursor, kind)
	if e != nil {
		return refused(e)
	}
	// The page is built in a pooled buffer: the answer's message copies
	// it.
	buf := getBuffer(x.s)
	defer putBuffer(x.s, buf)
	b := append(buf.raw[:0], `{"`...)
	b = append(b, field...)
	b = append(b, `":[`...)
	n, more := 0, false
	for _, it := range items {
		k := key(it)
		if has && k <= after {
			continue
		}
		if v := visible(it); v != nil && !v(ctx, x.call.Principal) {
			continue
		}
		if n == x.s.opts.PageSize {
			more = true
			break
		}
		if n > 0 {
			b = append(b, ',')
		}
		b = append(b, enc(it)...)
		after, n = k, n+1
	}
	b = append(b, ']')
	if more {
		b = append(b, `,"nextCursor":"`...)
		b = append(b, makeCursor(kind, after)...)
		b = append(b, '"')
	}
	b = append(b, '}')
	buf.raw = b
	h := listCache(x.s, hidden)
	return x.result(preEncoded(b), &resultFields{cache: &h})
}

// serveListTools answers tools/list, a page of the visible tools.
func (x *exchange) serveListTools(ctx context.Context, p *listParams) Answer {
	for _, t := range x.reg.tools {
		if err := t.prepare(); err != nil {
			return refused(mcperr.Wrap(mcperr.KindInternal, err))
		}
	}
	return listPage(x, ctx, p, "tools", cursorTools, x.reg.tools,
		func(t *registeredTool) string { return t.def.Name },
		func(t *registeredTool) Visibility { return t.def.Visible },
		func(t *registeredTool) []byte { return t.encoded }, x.reg.toolsHidden)
}

// serveListPrompts answers prompts/list.
func (x *exchange) serveListPrompts(ctx context.Context, p *listParams) Answer {
	return listPage(x, ctx, p, "prompts", cursorPrompts, x.reg.prompts,
		func(p *registeredPrompt) string { return p.def.Name },
		func(p *registeredPrompt) Visibility { return p.def.Visible },
		func(p *registeredPrompt) []byte { return p.encoded }, x.reg.promptsHidden)
}

// serveListResources answers resources/list.
func (x *exchange) serveListResources(ctx context.Context, p *listParams) Answer {
	return listPage(x, ctx, p, "resources", cursorResources, x.reg.resources,
		func(r *registeredResource) string { return r.def.URI },
		func(r *registeredResource) Visibility { return r.def.Visible },
		func(r *registeredResource) []byte { return r.encoded }, x.reg.resourcesHidden)
}

// serveListTemplates answers resources/templates/list.
func (x *exchange) serveListTemplates(ctx context.Context, p *listParams) Answer {
	// Templates keep registration order (it is also match order); the
	// cursor key is the position, zero-padded so keys compare in order.
	type indexed struct {
		i int
		t *registeredTemplate
	}
	items := make([]indexed, len(x.reg.templates))
	for i, t := range x.reg.templates {
		items[i] = indexed{i, t}
	}
	return listPage(x, ctx, p, "resourceTemplates", cursorTemplates, items,
		func(it indexed) string { return fmt.Sprintf("%08d", it.i) },
		func(it indexed) Visibility { return it.t.def.Visible },
		func(it indexed) []byte { return it.t.encoded }, x.reg.resourcesHidden)
}

// visibleToolNames lists the names this caller may see, for suggestions.
func (x *exchange) visibleToolNames(ctx context.Context) []string {
	names := make([]string, 0, len(x.reg.tools))
	for _, t := range x.reg.tools {
		if t.def.Visible == nil || t.def.Visible(ctx, x.call.Principal) {
			names = append(names, t.def.Name)
		}
	}
	return names
}
