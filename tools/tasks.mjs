// A tasks-extension client (@modelcontextprotocol/ext-tasks, the
// extension's own TypeScript requester) against a 2026-07-28 endpoint:
// call a task tool, let the client poll tasks/get to the end, and read
// the result; a tool error ends as a completed task with isError.
// Its transport is tasks-port.mjs's: raw JSON-RPC over HTTP with the
// 2026-07-28 headers and per-request _meta.
// Usage: node tasks.mjs <endpoint URL>
import { withTasks, toolDeclaration, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import { rawPort } from './tasks-port.mjs';

const url = process.argv[2];
if (!url) {
  console.error('usage: node tasks.mjs <endpoint URL>');
  process.exit(2);
}

function check(cond, what) {
  if (!cond) {
    console.error('tasks: FAILED: ' + what);
    process.exit(1);
  }
  console.log('tasks: ok: ' + what);
}

const sent = {};
const port = rawPort(url, {
  capabilities: { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } },
  clientName: 'ts-tasks',
  sent,
});

const declarations = {
  slow_compute: toolDeclaration({ name: 'slow_compute', inputSchema: { type: 'object' }, taskSupport: 'optional' }),
  failing_job: toolDeclaration({ name: 'failing_job', inputSchema: { type: 'object' }, taskSupport: 'required' }),
};
const session = withTasks(port, { tools: { currentTool: (name) => declarations[name] } });
try {
  const run = await session.callTool('slow_compute', { seconds: 1, label: 'ts' });
  const { outcome } = await run.settle();
  const result = resultFromTaskOutcome(outcome);
  check(String(result?.content?.[0]?.text).includes('"ts"'), 'slow_compute ran as a task and its result came back');
  check(sent['tools/call'] === 1 && sent['tasks/get'] >= 1, `the client polled tasks/get ${sent['tasks/get']} times`);

  const failing = await session.callTool('failing_job', {});
  const settled = await failing.settle();
  const failed = resultFromTaskOutcome(settled.outcome);
  check(failed?.isError === true, 'a tool error ends as a completed task with isError');
} finally {
  await session.close();
}
console.log('tasks: 3 passed, 0 failed');
