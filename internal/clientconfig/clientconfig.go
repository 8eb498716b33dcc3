// Package clientconfig renders what each MCP client the project
// documents needs to reach an endpoint: the command or the file, as the
// client's own documentation gives its format, with the endpoint's name
// and URL filled in. docs/clients.md, the local server's start-up lines
// (make run) and the stack's outputs show these; interop's tests run the
// ones whose client can be installed here (Claude Code's CLI, the
// Inspector's) against a live endpoint.
package clientconfig

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
)

// Setup is one client's configuration for one endpoint.
type Setup struct {
	// Client names the client, Where where the configuration goes (a
	// shell, a file, a settings page).
	Client, Where string
	// Config is the command or the file's content, to paste as it is.
	Config string
	// WithToken is the same with a bearer token of one's own (the
	// TOKEN environment variable, or a prompt), "" when the client takes
	// none; an endpoint behind OAuth needs none of it.
	WithToken string
	// OAuth is what the client does with an endpoint that answers 401
	// with its OAuth metadata.
	OAuth string
	// Doc is the client's documentation of the format.
	Doc string
}

// names are what a client accepts as a server's name: letters, digits,
// "-" and "_", beginning with a letter (VS Code's configuration refuses
// others).
var names = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_-]*$`)

// Name is name as a client's server name: its characters that clients
// refuse replaced with "-", "mcp" if nothing is left.
func Name(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-_")
	if !names.MatchString(s) {
		return "mcp"
	}
	return s
}

// For are the setups of every documented client for the endpoint at
// url, under name (made a valid server name with Name).
func For(name, url string) []Setup {
	name = Name(name)
	js := func(v any) string {
		var b strings.Builder
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false) // <token> as it is to be replaced
		enc.SetIndent("", "  ")
		if err := enc.Encode(v); err != nil {
			panic(err) // maps of strings always encode
		}
		return strings.TrimSuffix(b.String(), "\n")
	}
	type obj = map[string]any
	tokenInput := name + "-token"
	return []Setup{
		{
			Client: "Claude Code", Where: "a shell, in the project (add --scope user for every project)",
			Config:    fmt.Sprintf("claude mcp add --transport http %s %s", name, url),
			WithToken: fmt.Sprintf(`claude mcp add --transport http %s %s --header "Authorization: Bearer $TOKEN"`, name, url),
			OAuth:     "run /mcp in a session and choose the server: Claude Code follows the 401 to the provider, signs in in the browser and keeps the token",
			Doc:       "https://docs.anthropic.com/en/docs/claude-code/mcp",
		},
		{
			Client: "VS Code", Where: ".vscode/mcp.json (or the user profile's mcp.json)",
			Config: js(obj{"servers": obj{name: obj{"type": "http", "url": url}}}),
			WithToken: js(obj{
				"inputs":  []obj{{"type": "promptString", "id": tokenInput, "description": "Bearer token for " + name, "password": true}},
				"servers": obj{name: obj{"type": "http", "url": url, "headers": obj{"Authorization": "Bearer ${input:" + tokenInput + "}"}}},
			}),
			OAuth: "VS Code signs in when it first starts the server, in the browser, and keeps the token",
			Doc:   "https://code.visualstudio.com/docs/copilot/reference/mcp-configuration",
		},
		{
			Client: "Cursor", Where: ".cursor/mcp.json (or ~/.cursor/mcp.json for every project)",
			Config:    js(obj{"mcpServers": obj{name: obj{"url": url}}}),
			WithToken: js(obj{"mcpServers": obj{name: obj{"url": url, "headers": obj{"Authorization": "Bearer <token>"}}}}),
			OAuth:     "Cursor shows the server as needing a login; its Connect button signs in in the browser",
			Doc:       "https://docs.cursor.com/context/model-context-protocol",
		},
		{
			Client: "Claude Desktop", Where: "Settings, Connectors, Add custom connector",
			Config: fmt.Sprintf("Name: %s\nRemote MCP server URL: %s", name, url),
			OAuth:  "the connector's Connect button signs in in the browser; Claude reaches the URL from Anthropic's servers, so it must be a deployed endpoint, not make run's",
			Doc:    "https://support.anthropic.com/en/articles/11175166-getting-started-with-custom-connectors-using-remote-mcp",
		},
		{
			Client: "MCP Inspector", Where: "a shell (--cli; without it, the web UI: Streamable HTTP and the URL)",
			Config:    fmt.Sprintf("npx @modelcontextprotocol/inspector --cli %s --transport http --protocol-era modern --method tools/list", url),
			WithToken: fmt.Sprintf(`npx @modelcontextprotocol/inspector --cli %s --transport http --protocol-era modern --header "Authorization: Bearer $TOKEN" --method tools/list`, url),
			OAuth:     "the web UI's authentication settings walk the OAuth flow; the CLI takes a token",
			Doc:       "https://modelcontextprotocol.io/docs/tools/inspector",
		},
	}
}
