// The OAuth discovery walk of the TypeScript MCP client 2.4.0, pinned to
// 2026-07-28, with its client-credentials provider: from a 401 (or no
// challenge at all) to the protected-resource metadata, the authorization
// server, a token, and a notes_add; a 403 on the way is a step-up.
// With a fifth argument "default", the client keeps its default version
// negotiation instead of the pin.
// Usage: node oauth-walk.mjs <endpoint URL> <client id> <client secret> <issuer> [default]
import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, clientId, clientSecret, expectedIssuer, negotiation] = process.argv.slice(2);
if (!expectedIssuer) {
  console.error('usage: node oauth-walk.mjs <endpoint URL> <client id> <client secret> <issuer> [default]');
  process.exit(2);
}
const client = new Client({ name: 'ts-oauth-walk', version: '1.0.0' },
  negotiation === 'default' ? {} : { versionNegotiation: { mode: { pin: '2026-07-28' } } });
const authProvider = new ClientCredentialsProvider({ clientId, clientSecret, expectedIssuer });
try {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { authProvider }));
  const res = await client.callTool({ name: 'notes_add', arguments: { text: 'found my way in (TypeScript)' } });
  if (res.isError || !res.structuredContent?.id) {
    console.error('oauth-walk: FAILED: notes_add answered ' + JSON.stringify(res));
    process.exit(1);
  }
  console.log('oauth-walk: ok: notes_add ' + res.structuredContent.id);
  await client.close();
} catch (e) {
  console.error('oauth-walk: FAILED: ' + (e?.stack ?? e));
  process.exit(1);
}
