// Smoke test with the TypeScript MCP client, pinned to revision
// 2026-07-28: list the tools, call one, and drive a multi-round-trip call
// whose elicitation the client answers automatically.
// Usage: node smoke.mjs <endpoint URL>
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2];
if (!url) {
  console.error('usage: node smoke.mjs <endpoint URL>');
  process.exit(2);
}

function check(cond, what) {
  if (!cond) {
    console.error('smoke: FAILED: ' + what);
    process.exit(1);
  }
  console.log('smoke: ok: ' + what);
}

const client = new Client(
  { name: 'ts-smoke', version: '1.0.0' },
  { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: '2026-07-28' } } },
);
client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada' } }));
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
check(client.getNegotiatedProtocolVersion() === '2026-07-28', 'negotiated 2026-07-28');

const { tools } = await client.listTools();
check(tools.some((t) => t.name === 'test_simple_text'), `tools/list lists ${tools.length} tools`);

const simple = await client.callTool({ name: 'test_simple_text', arguments: {} });
check(simple.content?.[0]?.text === 'This is a simple text response for testing.', 'tools/call returns the text');

const asked = await client.callTool({ name: 'test_input_required_result_elicitation', arguments: {} });
check(asked.content?.[0]?.text === 'Hello, Ada!', 'a multi-round call completes with the elicited answer');

await client.close();
console.log('smoke: 4 passed, 0 failed');
