package stateless

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"
)

// Protocol revisions this package serves.
const (
	// Version20260728 is the stateless revision: every request carries its
	// version and client capabilities in params._meta.
	Version20260728 = "2026-07-28"
	// LatestLegacyVersion is the newest revision that uses the initialize
	// handshake. A legacy client asking for a version this server does not
	// serve is offered this one, never 2026-07-28.
	LatestLegacyVersion = "2025-11-25"
)

// supportedVersions lists every served revision, newest first. Modern
// revisions come before legacy ones.
var supportedVersions = []string{Version20260728, "2025-11-25", "2025-06-18", "2025-03-26"}

// isModern reports whether v is a revision of the stateless era.
func isModern(v string) bool { return v == Version20260728 }

// isLegacy reports whether v is a served revision of the initialize era.
func isLegacy(v string) bool {
	switch v {
	case "2025-11-25", "2025-06-18", "2025-03-26":
		return true
	}
	return false
}

// Reserved _meta keys of revision 2026-07-28.
const (
	metaProtocolVersion    = "io.modelcontextprotocol/protocolVersion"
	metaClientCapabilities = "io.modelcontextprotocol/clientCapabilities"
	metaClientInfo         = "io.modelcontextprotocol/clientInfo"
	metaLogLevel           = "io.modelcontextprotocol/logLevel"
	metaServerInfo         = "io.modelcontextprotocol/serverInfo"
)

// Implementation names a client or server: the spec's Implementation.
type Implementation struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
	WebsiteURL  string `json:"websiteUrl,omitempty"`
	Icons       []Icon `json:"icons,omitempty"`
}

// Icon is an image a client may show for a tool, prompt, resource or
// implementation.
type Icon struct {
	Src      string   `json:"src"`
	MIMEType string   `json:"mimeType,omitempty"`
	Sizes    []string `json:"sizes,omitempty"`
	Theme    string   `json:"theme,omitempty"`
}

// Meta is a _meta object. Keys whose second label is modelcontextprotocol
// or mcp are reserved for the protocol.
type Meta map[string]any

// ClientCapabilities is what a client declares it can do, per request.
// Only the members the server acts on are decoded; each is present
// (non-nil) when the client declared it.
type ClientCapabilities struct {
	Roots        json.RawMessage            `json:"roots,omitempty"`
	Sampling     json.RawMessage            `json:"sampling,omitempty"`
	Elicitation  *ElicitationCapability     `json:"elicitation,omitempty"`
	Extensions   map[string]json.RawMessage `json:"extensions,omitempty"`
	Experimental map[string]json.RawMessage `json:"experimental,omitempty"`
}

// ElicitationCapability is the elicitation member of ClientCapabilities.
// An empty object means form mode only.
type ElicitationCapability struct {
	Form json.RawMessage `json:"form,omitempty"`
	URL  json.RawMessage `json:"url,omitempty"`
}

// ServerCapabilities is what the server advertises.
type ServerCapabilities struct {
	Completions  *struct{}           `json:"completions,omitempty"`
	Prompts      *ListCapability     `json:"prompts,omitempty"`
	Resources    *ResourceCapability `json:"resources,omitempty"`
	Tools        *ListCapability     `json:"tools,omitempty"`
	Logging      *struct{}           `json:"logging,omitempty"`
	Extensions   map[string]any      `json:"extensions,omitempty"`
	Experimental map[string]any      `json:"experimental,omitempty"`
}

// ListCapability is the prompts or tools member of ServerCapabilities.
// This server never sets listChanged: a buffered Lambda response cannot
// carry a long-lived listen stream.
type ListCapability struct {
	ListChanged bool `json:"listChanged,omitempty"`
}

// ResourceCapability is the resources member of ServerCapabilities.
type ResourceCapability struct {
	Subscribe   bool `json:"subscribe,omitempty"`
	ListChanged bool `json:"listChanged,omitempty"`
}

// ToolAnnotations are hints about a tool's behaviour. They are hints for
// clients; the server acts on ReadOnlyHint (read-only tools never take
// idempotency claims).
type ToolAnnotations struct {
	Title           string `json:"title,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
}

// Annotations are hints on content and resources.
type Annotations struct {
	Audience     []string `json:"audience,omitempty"`
	Priority     *float64 `json:"priority,omitempty"`
	LastModified string   `json:"lastModified,omitempty"`
}

// Content is one content block of a tool result or prompt message: text,
// image, audio, resource_link or resource. Build it with [Text], [Image],
// [Audio], [ResourceLink] or [Embedded].
type Content struct {
	Type        string            `json:"type"`
	Text        string            `json:"text,omitempty"`
	Data        []byte            `json:"data,omitempty"` // base64 on the wire
	MIMEType    string            `json:"mimeType,omitempty"`
	URI         string            `json:"uri,omitempty"`
	Name        string            `json:"name,omitempty"`
	Title       string            `json:"title,omitempty"`
	Description string            `json:"description,omitempty"`
	Size        *int64            `json:"size,omitempty"`
	Resource    *ResourceContents `json:"resource,omitempty"`
	Annotations *Annotations      `json:"annotations,omitempty"`
	Meta        Meta              `json:"_meta,omitempty"`
}

// MarshalJSON writes the members each block type has: "text" on a text
// block even when empty, "data" on image and audio blocks. It is written
// by hand because content blocks are on every tool result's path.
func (c Content) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 32+len(c.Text)+len(c.Data)*4/3)
	b = append(b, `{"type":`...)
	b = appendString(b, c.Type)
	switch c.Type {
	case "text":
		b = append(b, `,"text":`...)
		b = appendString(b, c.Text)
	case "image", "audio":
		b = append(b, `,"data":"`...)
		b = base64.StdEncoding.AppendEncode(b, c.Data)
		b = append(b, '"')
	default:
		if c.Text != "" {
			b = append(b, `,"text":`...)
			b = appendString(b, c.Text)
		}
		if c.Data != nil {
			b = append(b, `,"data":"`...)
			b = base64.StdEncoding.AppendEncode(b, c.Data)
			b = append(b, '"')
		}
	}
	for _, f := range [...]struct{ k, v string }{
		{"mimeType", c.MIMEType}, {"uri", c.URI}, {"name", c.Name}, {"title", c.Title}, {"description", c.Description},
	} {
		if f.v != "" {
			b = append(b, ',', '"')
			b = append(b, f.k...)
			b = append(b, '"', ':')
			b = appendString(b, f.v)
		}
	}
	if c.Size != nil {
		b = append(b, `,"size":`...)
		b = strconv.AppendInt(b, *c.Size, 10)
	}
	for _, f := range [...]struct {
		k  string
		v  any
		ok bool
	}{
		{"resource", c.Resource, c.Resource != nil},
		{"annotations", c.Annotations, c.Annotations != nil},
		{"_meta", c.Meta, len(c.Meta) > 0},
	} {
		if !f.ok {
			continue
		}
		v, err := json.Marshal(f.v)
		if err != nil {
			return nil, err
		}
		b = append(b, ',', '"')
		b = append(b, f.k...)
		b = append(b, '"', ':')
		b = append(b, v...)
	}
	return append(b, '}'), nil
}

// Text is a text content block.
func Text(s string) Content { return Content{Type: "text", Text: s} }

// Image is an image content block; data is raw bytes, sent base64-encoded.
func Image(data []byte, mimeType string) Content {
	return Content{Type: "image", Data: data, MIMEType: mimeType}
}

// Audio is an audio content block; data is raw bytes, sent base64-encoded.
func Audio(data []byte, mimeType string) Content {
	return Content{Type: "audio", Data: data, MIMEType: mimeType}
}

// ResourceLink is a resource_link content block.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{Type: "resource_link", URI: uri, Name: name, MIMEType: mimeType}
}

// Embedded is a resource content block carrying the resource's contents.
func Embedded(rc ResourceContents) Content { return Content{Type: "resource", Resource: &rc} }

// ResourceContents is the text or binary contents of a resource.
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     []byte `json:"blob,omitempty"` // base64 on the wire
	Meta     Meta   `json:"_meta,omitempty"`
}

// MarshalJSON writes exactly one of text and blob, as the schema requires.
func (rc ResourceContents) MarshalJSON() ([]byte, error) {
	if rc.Blob != nil {
		return json.Marshal(struct {
			URI      string `json:"uri"`
			MIMEType string `json:"mimeType,omitempty"`
			Blob     []byte `json:"blob"`
			Meta     Meta   `json:"_meta,omitempty"`
		}{rc.URI, rc.MIMEType, rc.Blob, rc.Meta})
	}
	return json.Marshal(struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
		Text     string `json:"text"`
		Meta     Meta   `json:"_meta,omitempty"`
	}{rc.URI, rc.MIMEType, rc.Text, rc.Meta})
}

// CallToolResult is the complete result of tools/call.
type CallToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
	// Meta is merged into the result's _meta, after the server's own keys.
	Meta Meta `json:"-"`
}

// GetPromptResult is the complete result of prompts/get.
type GetPromptResult struct {
	Description string          `json:"description,omitempty"`
	Messages    []PromptMessage `json:"messages"`
	Meta        Meta            `json:"-"`
}

// PromptMessage is one message of a prompt.
type PromptMessage struct {
	Role    string  `json:"role"` // "user" or "assistant"
	Content Content `json:"content"`
}

// ReadResourceResult is the complete result of resources/read.
type ReadResourceResult struct {
	Contents []ResourceContents `json:"contents"`
	// Cache overrides the server's default cache hint for this result.
	Cache *CacheHint `json:"-"`
	Meta  Meta       `json:"-"`
}

// CompleteResult is the result of completion/complete.
type CompleteResult struct {
	Completion Completion `json:"completion"`
}

// Completion holds completion values.
type Completion struct {
	Values  []string `json:"values"`
	Total   int      `json:"total,omitempty"`
	HasMore bool     `json:"hasMore,omitempty"`
}

// CacheHint is the caching guidance a cacheable result carries.
type CacheHint struct {
	// TTL is how long the client may cache the result; 0 means stale at once.
	TTL time.Duration
	// Private says the result depends on the caller and must not be shared
	// across authorization contexts.
	Private bool
}

func (h CacheHint) scope() string {
	if h.Private {
		return "private"
	}
	return "public"
}

// ElicitResult is a client's answer to an elicitation/create input request.
type ElicitResult struct {
	Action  string         `json:"action"` // accept, decline or cancel
	Content map[string]any `json:"content,omitempty"`
}

// Accepted reports whether the user accepted.
func (r *ElicitResult) Accepted() bool { return r.Action == "accept" }

// Root is one entry of a ListRootsResult.
type Root struct {
	URI  string `json:"uri"`
	Name string `json:"name,omitempty"`
}

// ListRootsResult is a client's answer to a roots/list input request.
type ListRootsResult struct {
	Roots []Root `json:"roots"`
}

// CreateMessageResult is a client's answer to a sampling/createMessage
// input request. Content is kept raw: it may be one block or an array.
type CreateMessageResult struct {
	Role       string          `json:"role"`
	Content    json.RawMessage `json:"content"`
	Model      string          `json:"model"`
	StopReason string          `json:"stopReason,omitempty"`
}

// LoggingLevel is a syslog severity used by notifications/message.
type LoggingLevel string

// The logging levels, least severe first.
const (
	LevelDebug     LoggingLevel = "debug"
	LevelInfo      LoggingLevel = "info"
	LevelNotice    LoggingLevel = "notice"
	LevelWarning   LoggingLevel = "warning"
	LevelError     LoggingLevel = "error"
	LevelCritical  LoggingLevel = "critical"
	LevelAlert     LoggingLevel = "alert"
	LevelEmergency LoggingLevel = "emergency"
)

func (l LoggingLevel) rank() int {
	switch l {
	case LevelDebug:
		return 1
	case LevelInfo:
		return 2
	case LevelNotice:
		return 3
	case LevelWarning:
		return 4
	case LevelError:
		return 5
	case LevelCritical:
		return 6
	case LevelAlert:
		return 7
	case LevelEmergency:
		return 8
	}
	return 0
}
