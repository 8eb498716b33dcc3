//go:build unix && !integration

package interop

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/serverless-mcp/mcp-lambda/internal/clientconfig"
	"github.com/serverless-mcp/mcp-lambda/internal/testenv/need"
)

// setupOf is the documented setup of client for the endpoint at url.
func setupOf(t *testing.T, client, url string) clientconfig.Setup {
	t.Helper()
	for _, s := range clientconfig.For("notes", url) {
		if s.Client == client {
			return s
		}
	}
	t.Fatalf("no setup for %s", client)
	return clientconfig.Setup{}
}

// asDocumented runs command, a command line as docs/clients.md gives it,
// in a shell (so that $TOKEN is the shell's), with the tool pinned in
// tools/ (bin, relative to tools/) in place of its documented prefix,
// in dir, with env added; the test is skipped (failed under make) when
// the tool is not installed.
func asDocumented(t *testing.T, command, prefix, bin, dir string, env ...string) string {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("../tools", bin))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		need.Tool(t, bin+" (make tools)", err)
	}
	rest, ok := strings.CutPrefix(command, prefix+" ")
	if !ok {
		t.Fatalf("not a %q command: %s", prefix, command)
	}
	cmd := exec.CommandContext(testContext(t), "sh", "-c", `"$PINNED" `+rest)
	cmd.Dir = dir
	cmd.Env = append(inheritedEnv(), append(env, "PINNED="+abs)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", command, err, out)
	}
	return string(out)
}

// claudeCode runs a Claude Code command line as docs/clients.md gives
// it, the pinned CLI in place of claude, in a project directory of its
// own with its own home.
func claudeCode(t *testing.T, home, command string, env ...string) string {
	t.Helper()
	dir := filepath.Join(home, "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return asDocumented(t, command, "claude", "node_modules/.bin/claude", dir,
		append(env, "HOME="+home, "DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1")...)
}

// TestClaudeCodeConfiguration: the Claude Code commands docs/clients.md
// gives add the endpoint, and Claude Code (2.1.332, pinned in tools/)
// then connects to it: the plain one to an open endpoint, the one with a
// token to a protected endpoint with a token its authorization server
// issued.
func TestClaudeCodeConfiguration(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		ep := notebookDoor(t, doorLocal)
		s := setupOf(t, "Claude Code", ep.URL)
		home := t.TempDir()
		claudeCode(t, home, s.Config)
		if out := claudeCode(t, home, "claude mcp get notes"); !strings.Contains(out, "✔ Connected") || !strings.Contains(out, ep.URL) {
			t.Fatalf("claude mcp get notes, after %q:\n%s", s.Config, out)
		}
	})
	t.Run("with a token", func(t *testing.T) {
		rig := newAuthRig(t, authTarget{"Local", reserveLocal})
		tok := rig.token(authContext(t), t, "claude-code", "notes:read", "notes:write")
		s := setupOf(t, "Claude Code", rig.EP.URL)
		// Without the token it cannot connect: the check below means
		// something.
		bare := t.TempDir()
		claudeCode(t, bare, s.Config)
		if out := claudeCode(t, bare, "claude mcp get notes"); strings.Contains(out, "✔ Connected") {
			t.Fatalf("connected to the protected endpoint without a token:\n%s", out)
		}
		home := t.TempDir()
		claudeCode(t, home, s.WithToken, "TOKEN="+tok)
		if out := claudeCode(t, home, "claude mcp get notes"); !strings.Contains(out, "✔ Connected") {
			t.Fatalf("claude mcp get notes, after %q:\n%s", s.WithToken, out)
		}
		// The token is in the configuration, not on a command line.
		if b, _ := os.ReadFile(filepath.Join(home, ".claude.json")); !strings.Contains(string(b), "Bearer "+tok) {
			t.Errorf("the token is not in Claude Code's configuration")
		}
	})
}

// TestInspectorConfiguration: the Inspector command lines docs/clients.md
// gives list the endpoint's tools, the one with a token on a protected
// endpoint.
func TestInspectorConfiguration(t *testing.T) {
	// The pinned Inspector, run by the Node 22 tools/ pins, where npx
	// would fetch the latest.
	inspector := func(t *testing.T, ep *authEndpoint, command string, env ...string) string {
		t.Helper()
		return asDocumented(t, strings.Replace(command, "npx @modelcontextprotocol/inspector", "node node_modules/.bin/mcp-inspector", 1),
			"node", "node_modules/.bin/node", "../tools", append(env, "MCP_INSPECTOR_SECRET_STORE=memory")...)
	}
	ep := notebookDoor(t, doorLocal)
	if out := inspector(t, ep, setupOf(t, "MCP Inspector", ep.URL).Config); !strings.Contains(out, `"notes_add"`) {
		t.Errorf("the Inspector listed no notes_add:\n%s", out)
	}
	rig := newAuthRig(t, authTarget{"Local", reserveLocal})
	tok := rig.token(authContext(t), t, "inspector", "notes:read")
	if out := inspector(t, rig.EP, setupOf(t, "MCP Inspector", rig.EP.URL).WithToken, "TOKEN="+tok); !strings.Contains(out, `"notes_add"`) {
		t.Errorf("the Inspector with a token listed no notes_add:\n%s", out)
	}
}

// TestFileConfigurations: the files docs/clients.md gives for VS Code and
// Cursor, which cannot be installed here, hold to the formats their
// documentation gives (clientconfig's Setup.Doc): VS Code's mcp.json has
// servers (names of letters, digits, - and _) of type http with a url,
// and inputs whose promptString ids the headers' ${input:…} name;
// Cursor's mcp.json has mcpServers with a url and optional headers.
func TestFileConfigurations(t *testing.T) {
	const url = "https://abc123.execute-api.eu-west-1.amazonaws.com/mcp"
	serverName := regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_-]*$`)
	type server struct {
		Type    string            `json:"type"`
		URL     string            `json:"url"`
		Headers map[string]string `json:"headers"`
	}
	strict := func(t *testing.T, text string, v any) {
		t.Helper()
		dec := json.NewDecoder(strings.NewReader(text))
		dec.DisallowUnknownFields()
		if err := dec.Decode(v); err != nil {
			t.Fatalf("%v:\n%s", err, text)
		}
	}
	vs := setupOf(t, "VS Code", url)
	for _, text := range []string{vs.Config, vs.WithToken} {
		var f struct {
			Servers map[string]server `json:"servers"`
			Inputs  []struct {
				Type        string `json:"type"`
				ID          string `json:"id"`
				Description string `json:"description"`
				Password    bool   `json:"password"`
			} `json:"inputs"`
		}
		strict(t, text, &f)
		s, ok := f.Servers["notes"]
		if len(f.Servers) != 1 || !ok || s.Type != "http" || s.URL != url {
			t.Errorf("VS Code servers: %+v", f.Servers)
		}
		for name := range f.Servers {
			if !serverName.MatchString(name) {
				t.Errorf("VS Code server name %q", name)
			}
		}
		for h, v := range s.Headers {
			ref := regexp.MustCompile(`\$\{input:([^}]+)\}`).FindStringSubmatch(v)
			found := false
			for _, in := range f.Inputs {
				found = found || ref != nil && in.ID == ref[1] && in.Type == "promptString" && in.Password
			}
			if h != "Authorization" || !strings.HasPrefix(v, "Bearer ") || !found {
				t.Errorf("VS Code header %s: %q, inputs %+v", h, v, f.Inputs)
			}
		}
	}
	cursor := setupOf(t, "Cursor", url)
	for _, text := range []string{cursor.Config, cursor.WithToken} {
		var f struct {
			MCPServers map[string]server `json:"mcpServers"`
		}
		strict(t, text, &f)
		if s := f.MCPServers["notes"]; len(f.MCPServers) != 1 || s.URL != url || s.Type != "" {
			t.Errorf("Cursor servers: %+v", f.MCPServers)
		}
	}
	if !strings.Contains(cursor.WithToken, `"Authorization": "Bearer <token>"`) {
		t.Errorf("Cursor with a token: %s", cursor.WithToken)
	}
	if d := setupOf(t, "Claude Desktop", url); !strings.Contains(d.Config, url) || d.WithToken != "" {
		t.Errorf("Claude Desktop: %+v", d)
	}
	// A name no client takes is made one.
	if got := clientconfig.For("my tools!", url)[0].Config; !strings.Contains(got, " my-tools ") {
		t.Errorf("the name made valid: %s", got)
	}
}
