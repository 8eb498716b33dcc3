// Idempotency through the TypeScript MCP client 2.4.0, pinned to
// 2026-07-28: a keyed side-effecting call and its replay, and the
// conflict and in-progress refusals (HTTP 400) surfaced with
// their JSON-RPC code and data intact. The key travels in the
// Idempotency-Key header, which the client lets a custom fetch add.
// Usage: node idempotency.mjs <endpoint URL>
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const url = process.argv[2];
let passed = 0;
function check(cond, what, detail) {
  if (!cond) {
    console.error('idempotency: FAILED: ' + what + (detail === undefined ? '' : ': ' + JSON.stringify(detail)));
    process.exit(1);
  }
  passed++;
  console.log('idempotency: ok: ' + what);
}

async function connect(key) {
  const client = new Client({ name: 'ts-idempotency', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  const keyed = (input, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('Idempotency-Key', key);
    return fetch(input, { ...init, headers });
  };
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: keyed }));
  return client;
}

async function refusal(promise) {
  try {
    await promise;
  } catch (err) {
    return err;
  }
  return null;
}

const key = 'ts-' + Date.now();
const client = await connect(key);
const first = await client.callTool({ name: 'keyed_transfer', arguments: { amount: 5 } });
const again = await client.callTool({ name: 'keyed_transfer', arguments: { amount: 5 } });
check(!first.isError && first.structuredContent?.moved === 5, 'the first keyed call runs', first);
check(again._meta?.['io.github.serverless-mcp/replay'] === true, 'the retry is a marked replay', again._meta);
check(again.structuredContent?.run === first.structuredContent?.run, "the replay is the first call's result, not a second run");

const conflict = await refusal(client.callTool({ name: 'keyed_transfer', arguments: { amount: 6 } }));
check(conflict?.code === -32602 && conflict?.data?.type === 'idempotency_key_conflict', 'a conflict surfaces as -32602 with its data',
  conflict && { code: conflict.code, data: conflict.data, message: conflict.message });

const slow = await connect(key + '-slow');
const running = slow.callTool({ name: 'keyed_transfer', arguments: { amount: 1, waitMs: 600 } });
await new Promise((r) => setTimeout(r, 150));
const busy = await refusal(slow.callTool({ name: 'keyed_transfer', arguments: { amount: 1, waitMs: 600 } }));
const settled = await running;
// The Lambda emulator serves one invocation at a time: there the
// duplicate waits and gets the replay instead of the refusal.
const serialized = busy === null;
check(!settled.isError, 'the slow call completes');
check(serialized || (busy.code === -32600 && busy.data?.type === 'idempotency_key_in_progress' && busy.data?.retryable === true),
  'a duplicate in flight surfaces as -32600 in progress, retryable (or, serialized, as the replay)', busy && { code: busy.code, data: busy.data });

await client.close();
await slow.close();
console.log(`idempotency: ${passed} passed, 0 failed`);
