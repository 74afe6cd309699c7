// The MCP server of the multi-round-trip benchmark on the TypeScript SDK v2
// (@modelcontextprotocol/server 2.4.0): the same tools as benchmarks/peers/mrtr_server.py.
//
//   node benchmarks/peers/ts2_mrtr_server.mjs [--framing sse|json] [--port N]
//
// Stateless Streamable HTTP on http://127.0.0.1:<port>/mcp (port 0: a free one), printed as
// `LISTENING <url>` once it accepts. The SDK's own serving entry, `createMcpHandler`, builds a
// fresh McpServer for every request (the 2026-07-28 stateless model) and answers with an SSE
// stream (`--framing sse`, the default: responseMode 'sse') or a single JSON body
// (`--framing json`). node:http hands it each request as a web-standard Request.
//
// Each tool asks for exactly one round of input the way the SDK documents it: the first call
// returns `inputRequired(...)` with one embedded request and a `requestState` minted by the
// SDK's HMAC codec (createRequestStateCodec, verified by the `requestState.verify` hook before
// the retry reaches the handler); the retry reads `ctx.mcpReq.inputResponses`:
//
// - `form`: one form elicitation, {name: string = "Ada", age: integer = 36} (every field has a
//   default, so a host that fills in defaults can answer it); returns "<name> <age>".
// - `sample`: one sampling/createMessage (one user message, maxTokens 16); returns its text.
// - `stats`: this process's work so far, as JSON, as the Python server's: `cpu_s`
//   (process.cpuUsage(), user + system, every thread), `wait_s` (run-queue wait, Linux
//   schedstat, 0 elsewhere), `handled` and `handler_s` (form/sample requests whose tool callback
//   ran, and the wall time spent in those callbacks, requestState minting included).
//
// The SDK is loaded from $PEERS_NODE_DIR or <repo>/.peers/node (installed by .ci/install-peers).
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { cpuSeconds, runQueueWait } from './mrtr_work.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodeDir = process.env.PEERS_NODE_DIR ?? path.join(repo, '.peers', 'node');
const entry = path.join(nodeDir, 'node_modules/@modelcontextprotocol/server/dist/index.mjs');
const { McpServer, acceptedContent, createMcpHandler, createRequestStateCodec, inputRequired, inputResponse } =
  await import(pathToFileURL(entry).href);

const argv = process.argv.slice(2);
const option = (name, fallback) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : fallback);
const framing = option('--framing', 'sse');
const port = Number(option('--port', '0'));
if (!['sse', 'json'].includes(framing) || !Number.isInteger(port)) {
  console.error('usage: ts2_mrtr_server.mjs [--framing sse|json] [--port N]');
  process.exit(2);
}

const PERSON = {
  type: 'object',
  properties: {
    name: { type: 'string', default: 'Ada' },
    age: { type: 'integer', default: 36 }
  }
};
// One process serves every round of a call, so a per-process key is enough (as the SDK's
// examples/mrtr/server.ts does).
const codec = createRequestStateCodec({ key: randomBytes(32), ttlSeconds: 600 });

const work = { handled: 0, handlerS: 0 };

/** Wraps a tool callback (no input schema: it gets the context only) to count and time it. */
const timed = callback => async ctx => {
  const started = performance.now();
  try {
    return await callback(ctx);
  } finally {
    work.handled += 1;
    work.handlerS += (performance.now() - started) / 1e3;
  }
};

const text = value => ({ content: [{ type: 'text', text: value }] });

const waitedSeconds = runQueueWait();

function buildServer() {
  const server = new McpServer(
    { name: 'mrtr-bench-ts2', version: '1' },
    { capabilities: { tools: {} }, requestState: { verify: codec.verify } }
  );
  server.registerTool(
    'form',
    { description: 'One form elicitation; returns the name and age received.' },
    timed(async ctx => {
      if (ctx.mcpReq.requestState() === undefined) {
        return inputRequired({
          inputRequests: { person: inputRequired.elicit({ message: 'Who are you?', requestedSchema: PERSON }) },
          requestState: await codec.mint({ tool: 'form' })
        });
      }
      const person = acceptedContent(ctx.mcpReq.inputResponses, 'person');
      return text(person === undefined ? 'declined' : `${person.name} ${person.age}`);
    })
  );
  server.registerTool(
    'sample',
    { description: 'One sampling request; returns the text of the answer.' },
    timed(async ctx => {
      if (ctx.mcpReq.requestState() === undefined) {
        const message = { role: 'user', content: { type: 'text', text: 'Say hi.' } };
        return inputRequired({
          inputRequests: { llm: inputRequired.createMessage({ messages: [message], maxTokens: 16 }) },
          requestState: await codec.mint({ tool: 'sample' })
        });
      }
      const reply = inputResponse(ctx.mcpReq.inputResponses, 'llm');
      const content = reply.kind === 'sampling' ? reply.result.content : undefined;
      return text(content?.type === 'text' ? content.text : `no sampling answer (${reply.kind})`);
    })
  );
  server.registerTool('stats', { description: "This process's CPU time and the timed requests so far." }, () => {
    const stats = { cpu_s: cpuSeconds(), wait_s: waitedSeconds(), handled: work.handled, handler_s: work.handlerS };
    return text(JSON.stringify(stats));
  });
  return server;
}

const handler = createMcpHandler(buildServer, { responseMode: framing, keepAliveMs: 0 });

/** node:http → the handler's web-standard face → node:http, the body streamed as it comes. */
async function serve(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
  const request = new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body });
  const response = await handler.fetch(request);
  res.writeHead(response.status, Object.fromEntries(response.headers));
  if (response.body === null) {
    res.end();
    return;
  }
  for await (const chunk of response.body) res.write(chunk);
  res.end();
}

const listener = http.createServer((req, res) => {
  if (new URL(req.url, 'http://127.0.0.1').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  serve(req, res).catch(error => {
    console.error(`ts2_mrtr_server: ${error?.stack ?? error}`.split('\n')[0]);
    if (!res.headersSent) res.writeHead(500);
    res.end();
  });
});
listener.keepAliveTimeout = 60_000;
listener.listen(port, '127.0.0.1', () => {
  console.log(`LISTENING http://127.0.0.1:${listener.address().port}/mcp`);
});
const shutdown = () => listener.close(() => process.exit(0));
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
