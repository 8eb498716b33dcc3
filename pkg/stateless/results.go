package stateless

import (
	"encoding/json"
	"time"
)

// CallToolResult is the complete result of tools/call.
type CallToolResult struct {
	Content           []Content `json:"content"`
	StructuredContent any       `json:"structuredContent,omitempty"`
	IsError           bool      `json:"isError,omitempty"`
	// Meta is merged into the result's _meta, after the server's own keys.
	Meta Meta `json:"-"`

	// structured is StructuredContent as the server encoded it, once,
	// for the answer (see replier.toolResult).
	structured json.RawMessage
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
