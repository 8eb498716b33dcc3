package stateless

import (
	"encoding/json"
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
// listChanged is advertised only to a request whose door can hold a
// listen stream (HandleStream): a buffered Lambda response cannot.
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
