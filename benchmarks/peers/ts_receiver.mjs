// Comparator: the official TypeScript SDK's Client (@modelcontextprotocol/sdk 1.32.2) as the
// task receiver, with the SDK's InMemoryTaskStore serving tasks/get, tasks/result, tasks/list
// and tasks/cancel by itself.
//
//   node benchmarks/peers/ts_receiver.mjs [--delay S] -- COMMAND [ARG...]
//   node benchmarks/peers/ts_receiver.mjs [--delay S] --url URL [--call TOOL]
//
// It spawns the requestor (COMMAND) over stdio, or connects to it over Streamable HTTP with the
// SDK's StreamableHTTPClientTransport (which opens the GET stream after `initialized`). With
// --call it calls TOOL once (no request timeout) and exits with its result; otherwise it exits
// when the requestor logs "benchmark done" or closes the connection. A task-augmented sampling request creates a
// task in the store and returns it; the "work" is a timer of S seconds (0: the next turn of
// the event loop) that stores a canned CreateMessageResult as `completed`. The SDK has no
// model providers, so a canned answer after the same delay stands in for one.
// The SDK is loaded from $PEERS_NODE_DIR or <repo>/.peers/node (installed by .ci/install-peers).
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sdkDir = path.join(
  process.env.PEERS_NODE_DIR ?? path.join(repo, '.peers', 'node'),
  'node_modules/@modelcontextprotocol/sdk/dist/esm'
);
const load = rel => import(pathToFileURL(path.join(sdkDir, rel)).href);
const { Client } = await load('client/index.js');
const { StdioClientTransport } = await load('client/stdio.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const { CreateMessageRequestSchema, LoggingMessageNotificationSchema } = await load('types.js');
const { InMemoryTaskStore } = await load('experimental/tasks/index.js');

// A crash ends with one line saying why (the driver reports a receiver's last stderr line).
const die = error => {
  console.error(`ts_receiver: ${error?.stack ?? error}`.split('\n').slice(0, 3).join(' | '));
  process.exit(1);
};
process.on('uncaughtException', die);
process.on('unhandledRejection', die);

const argv = process.argv.slice(2);
const split = argv.indexOf('--');
const options = split < 0 ? argv : argv.slice(0, split);
const command = split < 0 ? [] : argv.slice(split + 1);
const option = name => (options.includes(name) ? options[options.indexOf(name) + 1] : undefined);
const url = option('--url');
const tool = option('--call');
if ((command.length === 0) === (url === undefined)) {
  console.error('usage: ts_receiver.mjs [--delay S] (-- COMMAND [ARG...] | --url URL [--call TOOL])');
  process.exit(2);
}
const delayMs = Number(option('--delay') ?? 0) * 1000;
const POLL_INTERVAL_MS = 1000; // what host-receiver reports by default

const canned = {
  role: 'assistant',
  content: { type: 'text', text: 'hello' },
  model: 'ts-sdk-canned',
  stopReason: 'endTurn'
};

const client = new Client(
  { name: 'ts-sdk-receiver', version: '1.32.2' },
  {
    capabilities: {
      sampling: {},
      tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} } } }
    },
    taskStore: new InMemoryTaskStore()
  }
);

client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
  if (!request.params.task) return canned;
  const task = await extra.taskStore.createTask({
    ttl: request.params.task.ttl,
    pollInterval: POLL_INTERVAL_MS
  });
  const finish = async () => {
    try {
      await extra.taskStore.storeTaskResult(task.taskId, 'completed', canned);
    } catch {
      // cancelled or expired meanwhile: the task keeps its terminal status
    }
  };
  if (delayMs > 0) setTimeout(finish, delayMs);
  else setImmediate(finish);
  return { task };
});

const closed = new Promise(resolve => {
  client.onclose = resolve;
  client.setNotificationHandler(LoggingMessageNotificationSchema, notification => {
    if (notification.params.data === 'benchmark done' && tool === undefined) resolve();
  });
});
const transport = url
  ? new StreamableHTTPClientTransport(new URL(url))
  : new StdioClientTransport({
      command: command[0],
      args: command.slice(1),
      env: process.env,
      stderr: 'inherit'
    });
await client.connect(transport);
if (tool !== undefined) await client.callTool({ name: tool }, undefined, { timeout: 2 ** 31 - 1 });
else await closed;
process.exit(0);
