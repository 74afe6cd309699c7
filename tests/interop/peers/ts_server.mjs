// Interop peer: an MCP server on the official TypeScript SDK
// (@modelcontextprotocol/sdk@1.32.2), the twin of py_server.py.
//
// It plays the *requestor* of MCP 2025-11-25 tasks: its tools send
// task-augmented sampling/createMessage and elicitation/create to the connected
// client (our host), then drive tasks/get, tasks/result, tasks/list and
// tasks/cancel. Every tool returns one TextContent whose text is a JSON object
// describing what this server observed (same keys as py_server.py; see
// docs/peers.md).
//
//   node tests/interop/peers/ts_server.mjs             # stdio
//   node tests/interop/peers/ts_server.mjs --port 0    # Streamable HTTP, prints LISTENING <url>
//
// Options: --wait S bounds every wait on the client (env PEER_WAIT_S, default 60).
// The SDK is loaded from .peers/node (made by .ci/install-peers), or from
// PEERS_NODE_DIR. On stdio, stdout is the protocol channel: logs go to stderr.
//
// Shared tool arguments: ttl_ms (default 60000; -1 sends `task: {}`), stream
// ("get": requests unrelated to the tool call, so over HTTP they travel on the
// standalone GET SSE stream, like `server.createMessage`; "post": related to
// the tools/call, so they travel on its POST response stream), helper (true
// uses the SDK's createMessageStream/elicitInputStream instead of the manual
// request + poll flow).

import { randomUUID } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const SDK = 'typescript';
const SDK_VERSION = '1.32.2';
const DEFAULT_TTL_MS = 60000;
const DEFAULT_POLL_MS = 1000; // what the SDK's requestStream uses without pollInterval
const MAX_TOKENS = 200;
const DEFAULT_SCHEMA = {
    type: 'object',
    properties: { name: { type: 'string', description: 'Your name' } },
    required: ['name']
};
const RELATED_TASK = 'io.modelcontextprotocol/related-task';
const TERMINAL = new Set(['completed', 'failed', 'cancelled']);

// ---------------------------------------------------------------- loading the SDK

const here = path.dirname(fileURLToPath(import.meta.url));
const nodeDir = process.env.PEERS_NODE_DIR ?? path.resolve(here, '../../../.peers/node');
// ESM entry points, named by path: this file lives outside that node_modules tree.
const load = rel => import(pathToFileURL(path.join(nodeDir, 'node_modules', rel)).href);
const { McpServer } = await load('@modelcontextprotocol/sdk/dist/esm/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/dist/esm/server/stdio.js');
const { StreamableHTTPServerTransport } = await load(
    '@modelcontextprotocol/sdk/dist/esm/server/streamableHttp.js'
);
const types = await load('@modelcontextprotocol/sdk/dist/esm/types.js');
const { z } = await load('zod/index.js');

// ---------------------------------------------------------------- arguments

function parseArgs(argv) {
    const args = { port: undefined, wait: Number(process.env.PEER_WAIT_S ?? 60) };
    for (let i = 0; i < argv.length; i++) {
        if (argv[i] === '--port') args.port = Number(argv[++i]);
        else if (argv[i] === '--wait') args.wait = Number(argv[++i]);
        else throw new Error(`unknown argument ${argv[i]}`);
    }
    return args;
}
const ARGS = parseArgs(process.argv.slice(2));
const WAIT_MS = ARGS.wait * 1000;
const log = (...a) => console.error('[ts-peer]', ...a);

// Every task id a client gave this process, in creation order (task_ids / probe_task).
const CREATED = [];

// ---------------------------------------------------------------- helpers

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

/** Turn anything a request can throw into JSON-able data. */
function errorDict(e) {
    if (e instanceof types.McpError) {
        // McpError prefixes the message with "MCP error <code>: "; keep the peer's text.
        const message = e.message.replace(/^MCP error -?\d+: /, '');
        const err = { code: e.code, message };
        if (e.data !== undefined) err.data = e.data;
        if (e.code === types.ErrorCode.RequestTimeout) err.timeout = true;
        return err;
    }
    if (e?.name === 'ZodError' || e?.issues) {
        return { invalid_response: String(e.message ?? e) }; // the answer did not validate
    }
    return { exception: String(e?.stack ?? e) };
}

/** Sends requests to the client for one tool call; every outcome becomes data. */
class Requestor {
    constructor(mcp, extra, stream) {
        if (stream !== 'get' && stream !== 'post') throw new Error("stream must be 'get' or 'post'");
        this.server = mcp.server;
        this.tasks = mcp.server.experimental.tasks;
        // relatedRequestId routes our messages onto the tools/call POST response stream.
        this.options = { timeout: WAIT_MS, ...(stream === 'post' ? { relatedRequestId: extra.requestId } : {}) };
    }

    /** Run one SDK call; resolve to [result, null] or [null, error]. */
    async call(fn) {
        try {
            return [await fn(this.options), null];
        } catch (e) {
            return [null, errorDict(e)];
        }
    }

    caps() {
        return this.server.getClientCapabilities() ?? {};
    }
}

function taskParams(ttlMs) {
    const ttl = ttlMs ?? DEFAULT_TTL_MS;
    return ttl < 0 ? {} : { ttl };
}

const samplingParams = prompt => ({
    messages: [{ role: 'user', content: { type: 'text', text: prompt } }],
    maxTokens: MAX_TOKENS
});

const elicitParams = (message, schema) => ({
    mode: 'form',
    message,
    requestedSchema: schema ?? DEFAULT_SCHEMA
});

const relatedTaskOk = (result, taskId) => result?._meta?.[RELATED_TASK]?.taskId === taskId;

function baseReport(tool, req, stream) {
    const caps = req.caps();
    return {
        tool,
        sdk: SDK,
        sdk_version: SDK_VERSION,
        stream,
        client_declared: {
            sampling_task: Boolean(caps.tasks?.requests?.sampling?.createMessage),
            elicitation_task: Boolean(caps.tasks?.requests?.elicitation?.create),
            tasks_list: Boolean(caps.tasks?.list),
            tasks_cancel: Boolean(caps.tasks?.cancel)
        }
    };
}

/** Send a task-augmented request the way DESIGN.md prescribes:
 *  server.request(..., CreateTaskResultSchema, {task}). Records task or error. */
async function createTask(req, request, ttlMs, report, tool) {
    const [created, err] = await req.call(opts =>
        req.server.request(request, types.CreateTaskResultSchema, { ...opts, task: taskParams(ttlMs) })
    );
    if (err) {
        report.error = { ...err, stage: 'create' };
        return null;
    }
    report.task = created.task;
    if (created._meta) report.create_meta = created._meta;
    CREATED.push({ taskId: created.task.taskId, tool });
    return created.task.taskId;
}

/** Poll tasks/get like the SDK's requestStream (pollInterval, else 1000 ms)
 *  until terminal; false on error or timeout. */
async function poll(req, taskId, report) {
    const statuses = [];
    const deadline = Date.now() + WAIT_MS;
    report.polls = 0;
    for (;;) {
        const [got, err] = await req.call(opts => req.tasks.getTask(taskId, opts));
        if (err) {
            report.error = { ...err, stage: 'poll' };
            report.statuses = statuses;
            return false;
        }
        report.polls += 1;
        report.last_task = got;
        if (statuses.at(-1) !== got.status) statuses.push(got.status);
        if (TERMINAL.has(got.status)) {
            report.statuses = statuses;
            return true;
        }
        const interval = got.pollInterval ?? DEFAULT_POLL_MS;
        if (Date.now() + interval > deadline) {
            report.error = { timeout: true, stage: 'poll', message: 'task never ended' };
            report.statuses = statuses;
            return false;
        }
        await sleep(interval);
    }
}

/** tasks/result, recorded under report[key] (or report[key + '_error']). */
async function fetchResult(req, taskId, schema, report, key) {
    const [got, err] = await req.call(opts => req.tasks.getTaskResult(taskId, schema, opts));
    if (err) {
        report[key + '_error'] = err;
        return;
    }
    report[key] = got;
    report[key + '_related_task_meta'] = relatedTaskOk(got, taskId);
}

/** Drain one of the SDK's *Stream helpers; record what it yielded. */
async function runHelper(stream, report) {
    const statuses = [];
    const timer = sleep(WAIT_MS).then(() => 'timeout');
    const it = stream[Symbol.asyncIterator]();
    for (;;) {
        const next = await Promise.race([it.next(), timer]);
        if (next === 'timeout') {
            report.error = { timeout: true, stage: 'helper' };
            break;
        }
        if (next.done) break;
        const msg = next.value;
        if (msg.type === 'taskCreated') {
            report.task = msg.task;
            CREATED.push({ taskId: msg.task.taskId, tool: report.tool });
        } else if (msg.type === 'taskStatus') {
            if (statuses.at(-1) !== msg.task.status) statuses.push(msg.task.status);
        } else if (msg.type === 'result') {
            report.result = msg.result;
        } else if (msg.type === 'error') {
            report.error = { ...errorDict(msg.error), stage: 'helper' };
        }
    }
    report.statuses = statuses;
}

const text = report => ({ content: [{ type: 'text', text: JSON.stringify(report) }] });

/** Wrap a tool body: whatever happens, the client gets a JSON report. */
function tool(name, body) {
    return async (args, extra) => {
        try {
            return text(await body(args, extra));
        } catch (e) {
            return { ...text({ tool: name, sdk: SDK, exception: String(e?.stack ?? e) }), isError: true };
        }
    };
}

// ---------------------------------------------------------------- tools

const streamArg = z.enum(['get', 'post']).optional();

function registerTools(mcp) {
    mcp.registerTool(
        'sample_task',
        {
            description: 'Task-augmented sampling/createMessage: create, poll tasks/get, then tasks/result.',
            inputSchema: {
                prompt: z.string(),
                ttl_ms: z.number().int().optional(),
                stream: streamArg,
                helper: z.boolean().optional()
            }
        },
        tool('sample_task', async ({ prompt, ttl_ms, stream = 'get', helper = false }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('sample_task', req, stream);
            const started = Date.now();
            if (helper) {
                const opts = { ...req.options, task: taskParams(ttl_ms) };
                await runHelper(req.tasks.createMessageStream(samplingParams(prompt), opts), report);
            } else {
                const request = { method: 'sampling/createMessage', params: samplingParams(prompt) };
                const taskId = await createTask(req, request, ttl_ms, report, 'sample_task');
                // Unlike the SDK helper, always ask tasks/result after a terminal status.
                if (taskId && (await poll(req, taskId, report))) {
                    await fetchResult(req, taskId, types.CreateMessageResultSchema, report, 'result');
                }
            }
            report.elapsed_ms = Date.now() - started;
            return report;
        })
    );

    mcp.registerTool(
        'elicit_task',
        {
            description: 'Task-augmented elicitation/create (form mode): create, poll, tasks/result.',
            inputSchema: {
                message: z.string(),
                schema: z.record(z.string(), z.any()).optional(),
                ttl_ms: z.number().int().optional(),
                stream: streamArg,
                helper: z.boolean().optional()
            }
        },
        tool('elicit_task', async ({ message, schema, ttl_ms, stream = 'get', helper = false }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('elicit_task', req, stream);
            const started = Date.now();
            if (helper) {
                const opts = { ...req.options, task: taskParams(ttl_ms) };
                await runHelper(req.tasks.elicitInputStream(elicitParams(message, schema), opts), report);
            } else {
                const request = { method: 'elicitation/create', params: elicitParams(message, schema) };
                const taskId = await createTask(req, request, ttl_ms, report, 'elicit_task');
                if (taskId && (await poll(req, taskId, report))) {
                    await fetchResult(req, taskId, types.ElicitResultSchema, report, 'result');
                }
            }
            report.elapsed_ms = Date.now() - started;
            return report;
        })
    );

    mcp.registerTool(
        'sample_plain',
        {
            description: 'A plain (non-task) sampling/createMessage.',
            inputSchema: { prompt: z.string(), stream: streamArg }
        },
        tool('sample_plain', async ({ prompt, stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('sample_plain', req, stream);
            const [got, err] = await req.call(opts => req.server.createMessage(samplingParams(prompt), opts));
            if (err) report.error = { ...err, stage: 'request' };
            else report.result = got;
            return report;
        })
    );

    mcp.registerTool(
        'elicit_plain',
        {
            description: 'A plain (non-task) elicitation/create in form mode.',
            inputSchema: { message: z.string(), schema: z.record(z.string(), z.any()).optional(), stream: streamArg }
        },
        tool('elicit_plain', async ({ message, schema, stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('elicit_plain', req, stream);
            const [got, err] = await req.call(opts => req.server.elicitInput(elicitParams(message, schema), opts));
            if (err) report.error = { ...err, stage: 'request' };
            else report.result = got;
            return report;
        })
    );

    mcp.registerTool(
        'start_sample_task',
        {
            description:
                'Create a task-augmented sampling request and return at once, leaving the task running ' +
                'in the client (cancel it later with cancel_task(task_id=...)).',
            inputSchema: { prompt: z.string(), ttl_ms: z.number().int().optional(), stream: streamArg }
        },
        tool('start_sample_task', async ({ prompt, ttl_ms, stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('start_sample_task', req, stream);
            const request = { method: 'sampling/createMessage', params: samplingParams(prompt) };
            await createTask(req, request, ttl_ms, report, 'start_sample_task');
            return report;
        })
    );

    mcp.registerTool(
        'cancel_task',
        {
            description:
                'Task-augmented sampling (or, with task_id, a task created earlier on this session), then ' +
                'tasks/cancel (after delay_ms), tasks/get, tasks/result and a second tasks/cancel ' +
                '(which must fail with -32602).',
            inputSchema: {
                prompt: z.string().optional(),
                task_id: z.string().optional(),
                ttl_ms: z.number().int().optional(),
                delay_ms: z.number().int().optional(),
                stream: streamArg
            }
        },
        tool('cancel_task', async ({ prompt = '', task_id, ttl_ms, delay_ms = 0, stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('cancel_task', req, stream);
            let taskId = task_id;
            if (taskId === undefined) {
                const request = { method: 'sampling/createMessage', params: samplingParams(prompt) };
                taskId = await createTask(req, request, ttl_ms, report, 'cancel_task');
                if (!taskId) return report;
            }
            report.task_id = taskId;
            await sleep(delay_ms);
            let [got, err] = await req.call(opts => req.tasks.cancelTask(taskId, opts));
            report.cancel = got;
            if (err) report.cancel_error = err;
            [got, err] = await req.call(opts => req.tasks.getTask(taskId, opts));
            report.get = got;
            if (err) report.get_error = err;
            // What a cancelled task's tasks/result holds is up to the client: accept anything.
            await fetchResult(req, taskId, types.GetTaskPayloadResultSchema, report, 'result');
            [got, err] = await req.call(opts => req.tasks.cancelTask(taskId, opts));
            report.cancel_again = got;
            if (err) report.cancel_again_error = err;
            return report;
        })
    );

    mcp.registerTool(
        'list_tasks',
        {
            description:
                "Create `count` sampling tasks, then follow tasks/list's nextCursor to the end. " +
                'page_size (optional) is the page size the test expects (checked into page_size_ok). ' +
                'Ends with an invalid cursor.',
            inputSchema: {
                count: z.number().int(),
                page_size: z.number().int().optional(),
                ttl_ms: z.number().int().optional(),
                stream: streamArg
            }
        },
        tool('list_tasks', async ({ count, page_size, ttl_ms, stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('list_tasks', req, stream);
            const created = [];
            for (let i = 0; i < count; i++) {
                const request = { method: 'sampling/createMessage', params: samplingParams(`list_tasks #${i}`) };
                const taskId = await createTask(req, request, ttl_ms, report, 'list_tasks');
                if (!taskId) {
                    report.created = created;
                    return report;
                }
                created.push(taskId);
            }
            delete report.task;
            report.created = created;
            const pages = [];
            const cursors = [];
            let cursor;
            for (let n = 0; n < count + 1000; n++) {
                const [got, err] = await req.call(opts => req.tasks.listTasks(cursor, opts));
                if (err) {
                    report.error = { ...err, stage: 'list', page: pages.length };
                    break;
                }
                pages.push(got.tasks.map(t => t.taskId));
                cursor = got.nextCursor;
                cursors.push(cursor ?? null);
                if (cursor === undefined) break;
            }
            const listed = new Set(pages.flat());
            const seen = new Map();
            for (const id of pages.flat()) seen.set(id, (seen.get(id) ?? 0) + 1);
            report.pages = pages;
            report.next_cursors = cursors;
            report.missing = created.filter(id => !listed.has(id));
            report.duplicates = [...seen].filter(([, n]) => n > 1).map(([id]) => id).sort();
            if (page_size !== undefined) {
                report.page_size_ok =
                    pages.slice(0, -1).every(p => p.length === page_size) &&
                    (pages.length === 0 || pages.at(-1).length <= page_size);
            }
            const [got, err] = await req.call(opts => req.tasks.listTasks(`not-a-cursor-${randomUUID()}`, opts));
            report.invalid_cursor = err ?? { result: got };
            return report;
        })
    );

    mcp.registerTool(
        'get_unknown_task',
        { description: 'tasks/get with a made-up id.', inputSchema: { stream: streamArg } },
        tool('get_unknown_task', async ({ stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('get_unknown_task', req, stream);
            report.task_id = `unknown-${randomUUID()}`;
            const [got, err] = await req.call(opts => req.tasks.getTask(report.task_id, opts));
            if (err) report.error = err;
            else report.result = got;
            return report;
        })
    );

    mcp.registerTool(
        'fail_tool',
        {
            description: 'Always fails: the client gets a CallToolResult with isError true.',
            inputSchema: { message: z.string().optional() }
        },
        async ({ message = 'fail_tool failed on purpose' }) => ({
            content: [{ type: 'text', text: message }],
            isError: true
        })
    );

    mcp.registerTool(
        'task_ids',
        { description: 'The ids of every task a client created for this server process so far.' },
        tool('task_ids', async () => ({
            tool: 'task_ids',
            sdk: SDK,
            task_ids: CREATED.map(c => c.taskId),
            by_tool: CREATED
        }))
    );

    mcp.registerTool(
        'probe_task',
        {
            description:
                "Ask about someone else's task: comma-separated methods among get, result, cancel, list. " +
                'A client that binds tasks to their requestor answers -32602 to get/result/cancel and ' +
                'does not list the id. result waits at most 5 s.',
            inputSchema: { task_id: z.string(), methods: z.string().optional(), stream: streamArg }
        },
        tool('probe_task', async ({ task_id, methods = 'get', stream = 'get' }, extra) => {
            const req = new Requestor(mcp, extra, stream);
            const report = baseReport('probe_task', req, stream);
            report.task_id = task_id;
            for (const method of methods.split(',').map(m => m.trim()).filter(Boolean)) {
                let got;
                let err;
                if (method === 'get') {
                    [got, err] = await req.call(opts => req.tasks.getTask(task_id, opts));
                } else if (method === 'result') {
                    [got, err] = await req.call(opts =>
                        req.tasks.getTaskResult(task_id, types.GetTaskPayloadResultSchema, {
                            ...opts,
                            timeout: Math.min(WAIT_MS, 5000)
                        })
                    );
                } else if (method === 'cancel') {
                    [got, err] = await req.call(opts => req.tasks.cancelTask(task_id, opts));
                } else if (method === 'list') {
                    [got, err] = await listContains(req, task_id);
                } else {
                    err = { message: `unknown method ${method}` };
                }
                report[method] = err ? { error: err } : { result: got };
            }
            return report;
        })
    );
}

/** Walk tasks/list; resolve to [{listed, count}, null] or [null, error]. */
async function listContains(req, taskId) {
    let cursor;
    let count = 0;
    for (let n = 0; n < 1000; n++) {
        const [got, err] = await req.call(opts => req.tasks.listTasks(cursor, opts));
        if (err) return [null, err];
        count += got.tasks.length;
        if (got.tasks.some(t => t.taskId === taskId)) return [{ listed: true, count }, null];
        cursor = got.nextCursor;
        if (cursor === undefined) break;
    }
    return [{ listed: false, count }, null];
}

function newServer() {
    const mcp = new McpServer({ name: 'ts-peer', version: SDK_VERSION });
    registerTools(mcp);
    return mcp;
}

// ---------------------------------------------------------------- transports

async function serveStdio() {
    const mcp = newServer();
    await mcp.connect(new StdioServerTransport());
    log('serving on stdio');
}

/** Stateful Streamable HTTP at /mcp: one McpServer + transport per session
 *  (an SDK Protocol object serves exactly one transport). */
async function serveHttp(port) {
    const sessions = new Map(); // mcp-session-id -> transport

    const readJson = req =>
        new Promise((resolve, reject) => {
            const chunks = [];
            req.on('data', c => chunks.push(c));
            req.on('end', () => {
                try {
                    resolve(chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined);
                } catch (e) {
                    reject(e);
                }
            });
            req.on('error', reject);
        });

    const fail = (res, status, code, message) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
    };

    const httpServer = http.createServer(async (req, res) => {
        try {
            if (new URL(req.url, 'http://x').pathname !== '/mcp') return fail(res, 404, -32601, 'Not found');
            const sid = req.headers['mcp-session-id'];
            const body = req.method === 'POST' ? await readJson(req) : undefined;
            if (sid) {
                const transport = sessions.get(sid);
                if (!transport) return fail(res, 404, -32001, 'Session not found');
                return await transport.handleRequest(req, res, body);
            }
            if (req.method !== 'POST' || !types.isInitializeRequest(body)) {
                return fail(res, 400, -32000, 'Bad Request: no valid session ID provided');
            }
            const transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: id => sessions.set(id, transport)
            });
            transport.onclose = () => {
                if (transport.sessionId) sessions.delete(transport.sessionId);
            };
            await newServer().connect(transport);
            await transport.handleRequest(req, res, body);
        } catch (e) {
            log('http error', e);
            if (!res.headersSent) fail(res, 500, -32603, 'Internal server error');
        }
    });

    await new Promise(resolve => httpServer.listen(port, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${httpServer.address().port}/mcp`;
    process.stdout.write(`LISTENING ${url}\n`);
}

if (ARGS.port === undefined) await serveStdio();
else await serveHttp(ARGS.port);
