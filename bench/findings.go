package bench

// Finding records a request that a peer answers wrongly. Its benchmark is
// skipped for that peer, since a wrong answer is no fair measure, and
// TestFindings logs the actual answer and checks that it is still wrong.
type Finding struct {
	// ID names the finding in test and benchmark output.
	ID string
	// Impl is the implementation's benchmark key, e.g. "gosdk".
	Impl string
	// Case is the request answered wrongly.
	Case *Case
	// Summary says what is wrong, what the revision asks for, and where
	// the peer's source does it.
	Summary string
}

// Findings lists every known wrong answer of the pinned peers.
var Findings = []Finding{
	{
		ID:   "gosdk-unsupported-version-plain-text",
		Impl: "gosdk",
		Case: Unsupported,
		Summary: "go-sdk v1.8.0 answers MCP-Protocol-Version 1999-01-01 with HTTP 400 text/plain " +
			`"Bad Request: Unsupported protocol version (supported versions: ...)" from its ` +
			"header check (mcp/streamable.go, http.Error) before reading the body; 2026-07-28 " +
			"asks for a JSON-RPC error -32022 with id, data.supported and data.requested " +
			"(spec §2.3, §3), and a JSON-RPC body on every 400 so dual-era clients can tell eras apart (§4)",
	},
	{
		ID:   "mcpgo-unsupported-version-plain-text",
		Impl: "mcpgo",
		Case: Unsupported,
		Summary: "mcp-go v1.2.1 takes the request for a legacy one (the version is before 2026-07-28) " +
			`and answers HTTP 400 text/plain "Unsupported protocol version: 1999-01-01" ` +
			"(server/streamable_http_modern.go, rejectUnsupportedProtocolVersion); 2026-07-28 " +
			"asks for a JSON-RPC error -32022 with id, data.supported and data.requested (spec §2.3, §3)",
	},
}

// FindingFor returns the finding for impl answering c, or nil if there is
// none.
func FindingFor(impl string, c *Case) *Finding {
	for i := range Findings {
		if f := &Findings[i]; f.Impl == impl && f.Case == c {
			return f
		}
	}
	return nil
}
