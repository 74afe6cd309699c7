// The TypeScript SDK v2's own Client (@modelcontextprotocol/client 2.4.0) as the client of the
// multi-round-trip benchmark, beside host-receiver's Host (benchmarks/mrtr_host.py).
//
//   node benchmarks/peers/ts2_mrtr_client.mjs --sizes JSON --out PATH --url URL
//
// `Client` pinned to protocol 2026-07-28 (versionNegotiation { pin }), over the SDK's
// StreamableHTTPClientTransport; its default multi-round-trip auto-fulfilment answers each
// `input_required` result through the handlers registered with setRequestHandler (an
// elicitation handler accepting every form with {name: "Ada", age: 36}, a sampling handler
// returning a canned CreateMessageResult) and retries the call with `inputResponses` and the
// echoed `requestState`, inside `callTool`.
//
// It makes the calls of benchmarks/mrtr_load.py and writes the same JSON, {"results": {...}}
// or {"failure": ...}, to PATH: per tool (form, then sample) `warmup` calls, `calls` timed one
// after another (p50, p90, and per call the server's `stats` difference and this process's CPU
// time, process.cpuUsage(), and run-queue wait), then `bursts` bursts of `concurrency` calls
// started at once (wall time, the server's CPU over the burst, wall / (p50 + that CPU); the
// median burst by that ratio is reported). --sizes is mrtr_load's Sizes as JSON, so both
// languages run the same numbers. Every result's text is checked.
//
// The SDK is loaded from $PEERS_NODE_DIR or <repo>/.peers/node (installed by .ci/install-peers).
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { cpuSeconds, runQueueWait } from './mrtr_work.mjs';

const repo = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const nodeDir = process.env.PEERS_NODE_DIR ?? path.join(repo, '.peers', 'node');
const entry = path.join(nodeDir, 'node_modules/@modelcontextprotocol/client/dist/index.mjs');
const { Client, StreamableHTTPClientTransport } = await import(pathToFileURL(entry).href);

const argv = process.argv.slice(2);
const option = name => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : undefined);
const [sizesJson, out, url] = [option('--sizes'), option('--out'), option('--url')];
if (sizesJson === undefined || out === undefined || url === undefined) {
  console.error('usage: ts2_mrtr_client.mjs --sizes JSON --out PATH --url URL');
  process.exit(2);
}
const sizes = JSON.parse(sizesJson);

const TOOLS = ['form', 'sample'];
const LLM_TEXT = 'hi from a canned handler';
const EXPECTED = { form: 'Ada 36', sample: LLM_TEXT };

const waitedSeconds = runQueueWait();

const described = error => `${error?.name ?? 'Error'}: ${error?.message ?? error}`.slice(0, 300);

class Checked {
  errors = 0;
  firstError = '';

  async call(call, tool) {
    try {
      const text = await call(tool);
      if (text !== EXPECTED[tool]) this.fail(`${tool} returned ${JSON.stringify(text.slice(0, 100))}, not ${JSON.stringify(EXPECTED[tool])}`);
    } catch (error) {
      this.fail(`${tool}: ${described(error)}`);
    }
  }

  fail(what) {
    this.errors += 1;
    this.firstError ||= what;
  }
}

const stats = async call => JSON.parse(await call('stats'));

const work = (before, after) =>
  Object.fromEntries(['cpu_s', 'wait_s', 'handler_s', 'handled'].map(key => [key, after[key] - before[key]]));

/** The median as Python's statistics.median computes it. */
const median = sorted => {
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
};

async function sequential(call, tool, checked) {
  for (let i = 0; i < sizes.warmup; i++) await checked.call(call, tool);
  const before = await stats(call);
  const [cpu, waited] = [cpuSeconds(), waitedSeconds()];
  const times = [];
  for (let i = 0; i < sizes.calls; i++) {
    const started = performance.now();
    await checked.call(call, tool);
    times.push((performance.now() - started) / 1e3);
  }
  const [clientCpu, clientWait] = [cpuSeconds() - cpu, waitedSeconds() - waited];
  const spent = work(before, await stats(call));
  times.sort((a, b) => a - b);
  const n = times.length;
  return {
    n,
    p50_us: median(times) * 1e6,
    p90_us: times[Math.floor(0.9 * (n - 1))] * 1e6,
    server_cpu_us_per_call: (spent.cpu_s / n) * 1e6,
    server_handler_us_per_call: (spent.handler_s / n) * 1e6,
    server_wait_us_per_call: (spent.wait_s / n) * 1e6,
    server_requests_per_call: spent.handled / n,
    client_cpu_us_per_call: (clientCpu / n) * 1e6,
    client_wait_us_per_call: (clientWait / n) * 1e6
  };
}

async function burst(call, tool, oneCallS, checked) {
  const before = await stats(call);
  const [cpu, waited] = [cpuSeconds(), waitedSeconds()];
  const started = performance.now();
  await Promise.all(Array.from({ length: sizes.concurrency }, () => checked.call(call, tool)));
  const wall = (performance.now() - started) / 1e3;
  const [clientCpu, clientWait] = [cpuSeconds() - cpu, waitedSeconds() - waited];
  const spent = work(before, await stats(call));
  const bound = oneCallS + spent.cpu_s;
  return {
    wall_ms: wall * 1e3,
    server_cpu_ms: spent.cpu_s * 1e3,
    server_handler_ms: spent.handler_s * 1e3,
    server_wait_ms: spent.wait_s * 1e3,
    client_cpu_ms: clientCpu * 1e3,
    client_wait_ms: clientWait * 1e3,
    bound_ms: bound * 1e3,
    ratio: wall / bound
  };
}

async function measure(call) {
  const checked = new Checked();
  const measured = {};
  for (const tool of TOOLS) {
    const one = await sequential(call, tool, checked);
    const bursts = [];
    for (let i = 0; i < sizes.bursts; i++) bursts.push(await burst(call, tool, one.p50_us / 1e6, checked));
    const ranked = [...bursts].sort((a, b) => a.ratio - b.ratio);
    measured[tool] = {
      sequential: one,
      concurrent: { ...ranked[Math.floor((ranked.length - 1) / 2)], concurrency: sizes.concurrency },
      bursts
    };
  }
  measured.errors = checked.errors;
  if (checked.errors) measured.first_error = checked.firstError;
  return measured;
}

async function run() {
  const client = new Client(
    { name: 'mrtr-bench-ts2-client', version: '1' },
    {
      versionNegotiation: { mode: { pin: '2026-07-28' } },
      capabilities: { elicitation: { form: {} }, sampling: {} }
    }
  );
  client.setRequestHandler('elicitation/create', async () => ({ action: 'accept', content: { name: 'Ada', age: 36 } }));
  client.setRequestHandler('sampling/createMessage', async () => ({
    role: 'assistant',
    content: { type: 'text', text: LLM_TEXT },
    model: 'canned',
    stopReason: 'endTurn'
  }));
  const started = performance.now();
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  const connectMs = performance.now() - started;
  const call = async tool => {
    const result = await client.callTool({ name: tool, arguments: {} });
    return result.content.find(block => block.type === 'text')?.text ?? '';
  };
  const measured = await measure(call);
  const version = client.getNegotiatedProtocolVersion();
  await client.close();
  return { connect_ms: connectMs, protocol_version: version, ...measured };
}

let result;
try {
  result = { results: await run() };
} catch (error) {
  result = { failure: described(error) };
}
writeFileSync(out, JSON.stringify(result, null, 1));
if (result.failure) {
  console.error(result.failure);
  process.exit(1);
}
process.exit(0);
