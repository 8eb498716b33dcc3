package stateless

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
)

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
// block even when empty, "data" on image and audio blocks.
func (c Content) MarshalJSON() ([]byte, error) {
	return appendContent(make([]byte, 0, 32+len(c.Text)+len(c.Data)*4/3), &c)
}

// appendContent appends c as JSON to b. It is written by hand because
// content blocks are on every tool result's path.
func appendContent(b []byte, c *Content) ([]byte, error) {
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
		v, err := marshalCompact(f.v)
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

// appendCallToolResult appends r as JSON to b, as encoding/json would
// write it (members in declaration order, no HTML escaping), without its
// reflection and its second pass over each block.
func appendCallToolResult(b []byte, r *CallToolResult) ([]byte, error) {
	b = append(b, `{"content":[`...)
	for i := range r.Content {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendContent(b, &r.Content[i]); err != nil {
			return nil, err
		}
	}
	b = append(b, ']')
	if r.structured != nil {
		b = append(b, `,"structuredContent":`...)
		b = append(b, r.structured...)
	} else if r.StructuredContent != nil {
		raw, ok := r.StructuredContent.(json.RawMessage)
		if !ok {
			var err error
			if raw, err = marshalCompact(r.StructuredContent); err != nil {
				return nil, err
			}
		}
		b = append(b, `,"structuredContent":`...)
		b = append(b, raw...)
	}
	if r.IsError {
		b = append(b, `,"isError":true`...)
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
