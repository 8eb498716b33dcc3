// One cell of the client matrix (interop/matrix_test.go) for the Node
// clients, against the note book (functions/fixture) through a door:
//
//   node matrix.mjs <client> <feature> <endpoint URL>
//
// client: ts-v2-pinned (@modelcontextprotocol/client 2.4.0 pinned to
// 2026-07-28), ts-v2-default (the same with its default negotiation), or
// ext-tasks (@modelcontextprotocol/ext-tasks, the tasks extension's own
// client). feature: tools, input-required, progress, idempotent-retries,
// listen, tasks. It prints "matrix: ok: <what>" per check and exits non-zero on
// the first failure, saying what it saw.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { withTasks, toolDeclaration, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { rawPort } from './tasks-port.mjs';

const [client, feature, url] = process.argv.slice(2);
if (!url) {
  console.error('usage: node matrix.mjs <client> <feature> <endpoint URL>');
  process.exit(2);
}

function check(cond, what, detail) {
  if (!cond) {
    console.error(`matrix: FAILED: ${what}` + (detail === undefined ? '' : `: ${JSON.stringify(detail)}`));
    process.exit(1);
  }
  console.log(`matrix: ok: ${what}`);
}

const stamp = `${client}-${feature}-${Date.now()}`;

async function connect(fetchFn, extra = {}) {
  const opts = { capabilities: { elicitation: {} }, ...extra };
  if (client === 'ts-v2-pinned') opts.versionNegotiation = { mode: { pin: '2026-07-28' } };
  const c = new Client({ name: 'ts-matrix', version: '1.0.0' }, opts);
  c.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { confirm: true } }));
  await c.connect(new StreamableHTTPClientTransport(new URL(url), fetchFn ? { fetch: fetchFn } : {}));
  return c;
}

async function addNote(c, text) {
  const r = await c.callTool({ name: 'notes_add', arguments: { text } });
  check(!r.isError && typeof r.structuredContent?.id === 'string', 'notes_add answered a note id', r);
  return r;
}

async function runTS() {
  switch (feature) {
    case 'tools': {
      const c = await connect();
      const { tools } = await c.listTools();
      check(tools.some((t) => t.name === 'notes_add') && tools.some((t) => t.name === 'notes_search'), `tools/list lists ${tools.length} tools`);
      await addNote(c, `note ${stamp}`);
      const found = await c.callTool({ name: 'notes_search', arguments: { query: stamp } });
      check(found.structuredContent?.notes?.length === 1, 'notes_search finds the note', found);
      await c.close();
      return;
    }
    case 'input-required': {
      const c = await connect();
      const { structuredContent: { id } } = await addNote(c, `doomed ${stamp}`);
      const r = await c.callTool({ name: 'notes_delete', arguments: { id } });
      check(!r.isError && r.structuredContent?.deleted === true, 'notes_delete asked to confirm, was answered, and deleted the note', r);
      await c.close();
      return;
    }
    case 'progress': {
      const c = await connect();
      await addNote(c, `counted ${stamp}`);
      const reports = [];
      const r = await c.callTool({ name: 'notes_digest', arguments: { pauseMs: 50 } }, { onprogress: (p) => reports.push(p) });
      check(!r.isError && typeof r.structuredContent?.notes === 'number', 'notes_digest answered', r);
      check(reports.length >= 1, `${reports.length} progress notifications reached the client`);
      await c.close();
      return;
    }
    case 'idempotent-retries': {
      const key = `k-${stamp}`;
      const keyed = (input, init = {}) => {
        const headers = new Headers(init.headers);
        headers.set('Idempotency-Key', key);
        return fetch(input, { ...init, headers });
      };
      const c = await connect(keyed);
      const first = await addNote(c, `once ${stamp}`);
      const again = await c.callTool({ name: 'notes_add', arguments: { text: `once ${stamp}` } });
      check(again.structuredContent?.id === first.structuredContent.id && again._meta?.['io.github.serverless-mcp/replay'] === true,
        'the retry with the same key is the replay of the first call', again);
      await c.close();
      return;
    }
    case 'listen': {
      // ClientOptions.listChanged: connect() opens a listen stream for the
      // tool list itself when server/discover advertises tools.listChanged.
      const sub = await connect(undefined, { listChanged: { tools: { onChanged: () => {} } } });
      const updates = [];
      let updated;
      sub.setNotificationHandler('notifications/resources/updated', (n) => {
        updates.push(n.params);
        updated?.();
      });
      const auto = sub.autoOpenedSubscription?.honoredFilter;
      check(auto?.toolsListChanged === true, 'connect() opened a listen stream for the tool list, acknowledged', auto);
      const { structuredContent: { id } } = await addNote(sub, `watched ${stamp}`);
      const uri = `notes://note/${id}`;
      // listen() resolves with the acknowledgement: what the server honours.
      const listening = await sub.listen({ resourceSubscriptions: [uri] }, { timeout: 5000 });
      check(JSON.stringify(listening.honoredFilter.resourceSubscriptions) === JSON.stringify([uri]),
        `listen() resolved with the acknowledgement of ${uri}`, listening.honoredFilter);
      const other = await connect();
      const r = await other.callTool({ name: 'notes_delete', arguments: { id } });
      check(!r.isError && r.structuredContent?.deleted === true, 'a second connection deleted the note, confirming it', r);
      const deleted = Date.now();
      const arrived = () => updates.find((p) => p.uri === uri);
      if (!arrived()) {
        await new Promise((resolve) => {
          const timer = setTimeout(resolve, 5000);
          updated = () => arrived() && (clearTimeout(timer), resolve());
        });
      }
      const got = arrived();
      check(got !== undefined && typeof got._meta?.['io.modelcontextprotocol/subscriptionId'] === 'string',
        `notifications/resources/updated for the note reached the listener in ${Date.now() - deleted} ms`, updates);
      await listening.close();
      await sub.close();
      await other.close();
      return;
    }
  }
  console.error(`matrix: no check of ${feature} for ${client}`);
  process.exit(2);
}

// The tasks extension's client, on tasks-port.mjs's transport.
async function runTasks() {
  if (feature !== 'tasks') {
    console.error(`matrix: no check of ${feature} for ${client}`);
    process.exit(2);
  }
  const sent = {};
  const port = rawPort(url, { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } }, clientName: 'ts-matrix-tasks', sent });
  const declarations = { notes_export: toolDeclaration({ name: 'notes_export', inputSchema: { type: 'object' }, taskSupport: 'required' }) };
  const session = withTasks(port, { tools: { currentTool: (n) => declarations[n] } });
  try {
    const run = await session.callTool('notes_export', { seconds: 1 });
    const { outcome } = await run.settle();
    const result = resultFromTaskOutcome(outcome);
    check(!result?.isError && typeof result?.structuredContent?.markdown === 'string', 'notes_export ran as a task and its result came back', result);
    check(sent['tools/call'] === 1 && sent['tasks/get'] >= 1, `the client polled tasks/get ${sent['tasks/get']} times`);
  } finally {
    await session.close();
  }
}

if (client === 'ext-tasks') await runTasks();
else if (client === 'ts-v2-pinned' || client === 'ts-v2-default') await runTS();
else {
  console.error(`matrix: unknown client ${client}`);
  process.exit(2);
}
