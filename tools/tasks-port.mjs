// The tasks extension client's transport for a 2026-07-28 endpoint
// (@modelcontextprotocol/ext-tasks' requester port): raw JSON-RPC over
// HTTP with the 2026-07-28 headers and per-request _meta, an answer read
// whole or, when streamed, from its event stream's last message. sent
// counts the requests by method. Used by tasks.mjs and matrix.mjs.
export function rawPort(url, { capabilities, clientName, sent = {} }) {
  let nextId = 1;
  return {
    endpointId: clientName,
    taskCapabilities: { generation: 'v2', capabilities: {} },
    async dispatch(request, options) {
      const params = { ...(request.params ?? {}) };
      params._meta = {
        ...(params._meta ?? {}),
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': capabilities,
        'io.modelcontextprotocol/clientInfo': { name: clientName, version: '1.0.0' },
      };
      const headers = {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': '2026-07-28',
        'Mcp-Method': request.method,
      };
      const name = request.method === 'tools/call' ? params.name : params.taskId;
      if (name !== undefined) headers['Mcp-Name'] = name;
      sent[request.method] = (sent[request.method] ?? 0) + 1;
      const res = await fetch(url, {
        method: 'POST', headers, signal: options?.signal,
        body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method: request.method, params }),
      });
      const text = await res.text();
      const body = text.trimStart().startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).pop()?.slice(5) ?? '';
      const msg = JSON.parse(body);
      return msg.error ? { kind: 'error', error: msg.error } : { kind: 'result', result: msg.result };
    },
    onServerRequest: () => () => {},
    onNotification: () => () => {},
    onInvalidated: () => () => {},
    invalidated: false,
  };
}
