/**
 * Byte-level fuzzing of the front door: where the JSON-RPC
 * fuzzer (fuzzHarness.ts) sends well-framed messages, this one writes raw
 * bytes to a real `taskvisor serve` child —
 *
 * - `http`: request line and target, header names and values (Host, Origin,
 *   Content-Type, Content-Length vs Transfer-Encoding, Upgrade, Connection,
 *   Sec-WebSocket-*), bodies with fuzzed chunked framing;
 * - `upgrade`: the same heads against the WebSocket port;
 * - `ws`: WebSocket frames after a good handshake — any opcode, fragments,
 *   masked or not, RSV bits, 16/64-bit lengths (up to 2^63-1), control frames
 *   with long payloads, close frames with any code;
 * - `stdio`: bytes on the stdin of `serve --stdio` — NUL, CR, invalid UTF-8,
 *   partial and empty lines.
 *
 * Property after every input: the process is alive and another client is
 * answered; at the end the stored tasks are byte-identical to before.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { join } from 'node:path';
import fc from 'fast-check';
import { openRawWebSocket, wsFrame } from '../support/rawSocket.js';

export type ByteSurface = 'http' | 'upgrade' | 'ws' | 'stdio';
export const BYTE_SURFACES: readonly ByteSurface[] = ['http', 'upgrade', 'ws', 'stdio'];

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'byte-fuzz', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } },
};

// ---------------------------------------------------------------------------------------------
// Arbitraries

const latin1 = (maxLength: number) => fc.uint8Array({ maxLength }).map((bytes) => Buffer.from(bytes).toString('latin1'));
const method = fc.oneof(fc.constantFrom('GET', 'POST', 'OPTIONS', 'DELETE', 'HEAD', 'PRI', 'CONNECT', ''), latin1(8));
const target = fc.oneof(
  fc.constantFrom(
    '/mcp',
    'http://[/mcp',
    'http://a@b/mcp',
    'http://a:b@{host}/mcp',
    '//evil.example/mcp',
    '*',
    '/mcp?x=' + 'a'.repeat(9_000),
    '/%zz%00',
    'http://{host}/mcp',
    'https://{host}/mcp',
    '/mcp/../mcp',
    '/.well-known/oauth-protected-resource/mcp',
  ),
  fc.string({ maxLength: 40 }).map((s) => `/${s}`),
  latin1(40),
);
const version = fc.constantFrom('HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/1.1 x', 'HTTP/9', '');
const headerName = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom('Host', 'Origin', 'Content-Type', 'Content-Length', 'Transfer-Encoding', 'Upgrade', 'Connection'),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'Sec-WebSocket-Key',
      'Sec-WebSocket-Version',
      'Sec-WebSocket-Protocol',
      'Sec-WebSocket-Extensions',
      'Authorization',
      'Mcp-Method',
      'Mcp-Protocol-Version',
      'Mcp-Name',
      'Accept',
      'Expect',
    ),
  },
  { weight: 1, arbitrary: latin1(20) },
);
const headerValue = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.constantFrom(
      '{host}',
      'x@{host}',
      '[::1',
      'h'.repeat(5_000),
      'chunked',
      'chunked, chunked',
      'gzip, chunked',
      'identity',
      '-1',
      '99999999999999999999',
      '0',
      '5, 7',
      'websocket',
      'Upgrade',
      'keep-alive, Upgrade',
      '13',
      '8',
      'dGhlIHNhbXBsZSBub25jZQ==',
      'mcp',
      'permessage-deflate; client_max_window_bits',
      'application/json',
      'text/plain',
      'http://evil.example',
      'null',
      'Bearer x',
      '100-continue',
      '2026-07-28',
      'tools/call',
    ),
  },
  { weight: 2, arbitrary: latin1(100) },
);
const jsonBody = fc.constantFrom(
  '{}',
  '[]',
  '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}',
  '{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"' + 'f'.repeat(32) + '"}}',
  '{"jsonrpc":"2.0","id":',
  '['.repeat(200),
);
const chunk = fc.record({
  size: fc.oneof(
    fc.nat({ max: 64 }).map((n) => n.toString(16)),
    fc.constantFrom('-1', 'zz', 'ffffffffffffffffff', '', '0x10', '10;ext=1'),
  ),
  data: latin1(64),
  end: fc.constantFrom('\r\n', '\n', '', '\r'),
});
const body = fc.oneof(
  { weight: 2, arbitrary: fc.constant('') },
  { weight: 2, arbitrary: jsonBody },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.array(chunk, { maxLength: 4 }), fc.constantFrom('0\r\n\r\n', '0\r\n', ''))
      .map(([chunks, last]) => chunks.map((c) => `${c.size}\r\n${c.data}${c.end}`).join('') + last),
  },
  { weight: 1, arbitrary: latin1(200) },
);

/** One request head (and body): `{host}` stands for the listener's `127.0.0.1:port`. */
export const requestBytes = fc
  .record({
    method,
    target,
    version,
    headers: fc.array(fc.tuple(headerName, headerValue, fc.constantFrom(': ', ':', ' : ', ':\t')), { maxLength: 8 }),
    withHost: fc.boolean(),
    separator: fc.constantFrom('\r\n', '\r\n', '\n', '\r'),
    body,
  })
  .map(({ method, target, version, headers, withHost, separator, body }) => {
    const lines = [`${method} ${target} ${version}`];
    if (withHost) lines.push('Host: {host}');
    for (const [name, value, colon] of headers) lines.push(`${name}${colon}${value}`);
    return `${lines.join(separator)}${separator}${separator}${body}`;
  });

const upgradeHeaders =
  'Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n';
/** Upgrade heads: the fuzzed request with the upgrade headers mixed in. */
export const upgradeBytes = requestBytes.map((head) => {
  const cut = head.indexOf('\r\n');
  return cut < 0 ? head : `${head.slice(0, cut + 2)}${upgradeHeaders}${head.slice(cut + 2)}`;
});

const closePayload = fc
  .tuple(fc.integer({ min: 0, max: 65535 }), latin1(140))
  .map(([code, reason]) => Buffer.concat([Buffer.from([code >> 8, code & 255]), Buffer.from(reason, 'latin1')]));
const framePayload = fc.oneof(
  { weight: 3, arbitrary: jsonBody.map((text) => Buffer.from(text)) },
  { weight: 1, arbitrary: fc.constant(Buffer.from(JSON.stringify({ jsonrpc: '2.0', id: 'p', method: 'ping' }))) },
  { weight: 2, arbitrary: fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)) },
  { weight: 1, arbitrary: closePayload },
);
/** A sequence of WebSocket frames, bytes of each possibly cut short. */
export const wsFramesBytes = fc
  .array(
    fc.record({
      opcode: fc.oneof(
        { weight: 4, arbitrary: fc.constantFrom(0x0, 0x1, 0x2, 0x8, 0x9, 0xa) },
        { weight: 1, arbitrary: fc.integer({ min: 0, max: 15 }) },
      ),
      fin: fc.boolean(),
      rsv: fc.oneof({ weight: 6, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 7 }) }),
      mask: fc.oneof({ weight: 6, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: fc.constant(false) }),
      payload: framePayload,
      length: fc.option(fc.oneof(fc.nat({ max: 70_000 }), fc.constantFrom(2n ** 63n - 1n, 2n ** 32n, 126, 127, 65_535, 65_536))),
      cut: fc.option(fc.nat({ max: 20 })),
    }),
    { minLength: 1, maxLength: 6 },
  )
  .map((frames) =>
    Buffer.concat(
      frames.map((f) => {
        const bytes = wsFrame(f.opcode, f.payload, {
          fin: f.fin,
          rsv: f.rsv,
          mask: f.mask,
          ...(f.length !== null ? { length: f.length } : {}),
        });
        return f.cut !== null ? bytes.subarray(0, Math.max(1, bytes.length - f.cut)) : bytes;
      }),
    ),
  );

/** Bytes for the stdin of `serve --stdio`: lines of garbage, invalid UTF-8, NULs, CRs, JSON fragments. */
export const stdioBytes = fc
  .array(
    fc.oneof(
      jsonBody.map((text) => Buffer.from(text)),
      fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
      fc.constantFrom(
        Buffer.from([0xff, 0xfe, 0x00]),
        Buffer.from('\r'),
        Buffer.from('\r\n'),
        Buffer.from('\n\n\n'),
        Buffer.from('\u2028'),
      ),
    ),
    { maxLength: 6 },
  )
  .map((parts) => Buffer.concat(parts));

// ---------------------------------------------------------------------------------------------
// The run

export interface ByteFuzzOptions {
  runs: number;
  seed: number;
  surfaces?: readonly ByteSurface[];
  cli: string;
  /** Tools module loaded by the child (the demo tools). */
  tools: string;
  dir: string;
  log?: (line: string) => void;
}

/** Writes `bytes` to `port` and waits (briefly) for an answer or a close; then drops the socket. */
function hit(port: number, bytes: Buffer, waitMs = 250): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    const done = () => {
      clearTimeout(timer);
      socket.destroy();
      resolve();
    };
    const timer = setTimeout(done, waitMs);
    socket.on('error', done);
    socket.on('close', done);
    socket.on('data', () => {});
    socket.on('connect', () => socket.write(bytes));
  });
}

export async function runByteFuzz(options: ByteFuzzOptions): Promise<{ inputs: number }> {
  const surfaces = options.surfaces ?? BYTE_SURFACES;
  const config = join(options.dir, 'byte-fuzz.yaml');
  await writeFile(
    config,
    `store: { kind: lowdb, dir: ./store }\ntools: [${JSON.stringify(options.tools)}]\ntasks: { promoteAfterMs: 0 }\nws: {}\n`,
  );
  const child = spawn(process.execPath, [options.cli, 'serve', '--config', config, '--http', '127.0.0.1:0', '--ws', '127.0.0.1:0'], {
    cwd: options.dir,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-50_000)));
  let inputs = 0;
  try {
    const serving = (pattern: RegExp) =>
      new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`the server did not start:\n${stderr}`)), 60_000);
        const check = () => {
          const match = pattern.exec(stderr);
          if (match) {
            clearTimeout(timer);
            resolve(match[1]!);
          }
        };
        child.stderr.on('data', check);
        check();
        child.once('exit', () => reject(new Error(`the server exited:\n${stderr}`)));
      });
    const httpUrl = await serving(/serving MCP over Streamable HTTP at (\S+)\n/);
    const wsUrl = await serving(/serving MCP over WebSocket at (\S+)\n/);
    const httpPort = Number(new URL(httpUrl).port);
    const wsPort = Number(new URL(wsUrl).port);
    let id = 0;
    const call = async (method: string, params: Record<string, unknown>) => {
      const response = await fetch(httpUrl, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
          'mcp-protocol-version': '2026-07-28',
          'mcp-method': method,
          ...(method === 'tools/call'
            ? { 'mcp-name': String(params.name) }
            : method.startsWith('tasks/')
              ? { 'mcp-name': String(params.taskId) }
              : {}),
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: ++id, method, params: { ...params, _meta: ENVELOPE } }),
      });
      return (await response.json()) as { result?: Record<string, unknown>; error?: unknown };
    };
    // Victims: tasks stored before the fuzzing, compared byte for byte afterwards.
    const victims: string[] = [];
    for (const message of ['victim one', 'victim two']) {
      const created = await call('tools/call', { name: 'sleep', arguments: { ms: 0, message } });
      victims.push(created.result!.taskId as string);
    }
    for (const taskId of victims) {
      for (let i = 0; ; i++) {
        if ((await call('tasks/get', { taskId })).result?.status === 'completed') break;
        if (i > 500) throw new Error('the victim tasks did not complete');
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
    let finishedFiles = 0;
    const snapshot = async () => {
      finishedFiles = 0;
      const hashes: Record<string, string> = {};
      const tasks = join(options.dir, 'store', 'tasks');
      for (const shard of await readdir(tasks)) {
        for (const file of await readdir(join(tasks, shard))) {
          if (victims.some((taskId) => file === `${taskId}.json`)) {
            const bytes = await readFile(join(tasks, shard, file));
            if (bytes.includes('"completed"')) finishedFiles++;
            hashes[file] = createHash('sha256').update(bytes).digest('hex');
          }
        }
      }
      return hashes;
    };
    // Finished records reach their task files at the lowdb store's checkpoint (the batch journal takes the writes first).
    let before = await snapshot();
    for (let i = 0; finishedFiles !== victims.length; i++) {
      if (i > 500) throw new Error(`victim files not found: ${JSON.stringify(before)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
      before = await snapshot();
    }

    const serves = async (what: string) => {
      if (child.exitCode !== null || child.signalCode !== null) throw new Error(`the server died after ${what}:\n${stderr.slice(-3000)}`);
      const answer = await Promise.race([
        call('tools/list', {}),
        new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer to another client after ${what}`)), 20_000)),
      ]);
      if (!answer.result) throw new Error(`another client got ${JSON.stringify(answer)} after ${what}`);
    };
    const fill = (text: string, port: number) => Buffer.from(text.replaceAll('{host}', `127.0.0.1:${port}`), 'latin1');
    const settings = { numRuns: options.runs, seed: options.seed, endOnFailure: true };
    const check = async (surface: ByteSurface): Promise<void> => {
      switch (surface) {
        case 'http':
          return fc.assert(
            fc.asyncProperty(requestBytes, async (head) => {
              inputs++;
              await hit(httpPort, fill(head, httpPort));
              await serves(`HTTP bytes ${JSON.stringify(head.slice(0, 200))}`);
            }),
            settings,
          );
        case 'upgrade':
          return fc.assert(
            fc.asyncProperty(upgradeBytes, async (head) => {
              inputs++;
              await hit(wsPort, fill(head, wsPort));
              await serves(`upgrade bytes ${JSON.stringify(head.slice(0, 200))}`);
            }),
            settings,
          );
        case 'ws':
          return fc.assert(
            fc.asyncProperty(wsFramesBytes, async (frames) => {
              inputs++;
              const socket = await openRawWebSocket(wsPort);
              await new Promise<void>((resolve) => {
                const done = () => {
                  clearTimeout(timer);
                  socket.destroy();
                  resolve();
                };
                const timer = setTimeout(done, 250);
                socket.on('error', done);
                socket.on('close', done);
                socket.on('data', () => {});
                socket.write(frames);
              });
              await serves(`WebSocket frames ${frames.subarray(0, 100).toString('hex')}`);
            }),
            settings,
          );
        case 'stdio':
          throw new Error('stdio is run on its own child');
      }
    };
    for (const surface of surfaces.filter((s) => s !== 'stdio')) {
      options.log?.(`byte fuzz ${surface}: ${options.runs} runs, seed ${options.seed}`);
      await check(surface);
    }
    const after = await snapshot();
    if (JSON.stringify(after) !== JSON.stringify(before)) {
      throw new Error(`stored tasks changed: ${JSON.stringify(before)} → ${JSON.stringify(after)}`);
    }
  } finally {
    child.kill('SIGKILL');
  }
  if (surfaces.includes('stdio')) inputs += await runStdioBytes(options);
  return { inputs };
}

/** Byte-level stdin of `serve --stdio`: after each input a probe line must be answered; the tasks stay the same. */
async function runStdioBytes(options: ByteFuzzOptions): Promise<number> {
  const config = join(options.dir, 'byte-fuzz-stdio.yaml');
  await writeFile(config, `store: { kind: memory }\ntools: [${JSON.stringify(options.tools)}]\ntasks: { promoteAfterMs: 0 }\n`);
  const child = spawn(process.execPath, [options.cli, 'serve', '--config', config, '--stdio', '--quiet'], {
    cwd: options.dir,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.setEncoding('utf8').on('data', (text: string) => (stderr = (stderr + text).slice(-50_000)));
  const waiting = new Map<string, (message: Record<string, unknown>) => void>();
  let buffer = '';
  child.stdout.setEncoding('utf8').on('data', (text: string) => {
    buffer += text;
    let cut: number;
    while ((cut = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 1);
      try {
        const message = JSON.parse(line) as Record<string, unknown>;
        if (typeof message.id === 'string') waiting.get(message.id)?.(message);
      } catch {
        throw new Error(`the child wrote a line that is not JSON on stdout: ${JSON.stringify(line.slice(0, 200))}`);
      }
    }
  });
  let id = 0;
  const call = (method: string, params: Record<string, unknown>) =>
    new Promise<Record<string, unknown>>((resolve, reject) => {
      const key = `probe-${++id}`;
      const timer = setTimeout(() => reject(new Error(`no answer on stdio to ${method}:\n${stderr.slice(-3000)}`)), 20_000);
      waiting.set(key, (message) => {
        clearTimeout(timer);
        waiting.delete(key);
        resolve(message);
      });
      // A newline first: whatever garbage came before is its own line.
      child.stdin.write(`\n${JSON.stringify({ jsonrpc: '2.0', id: key, method, params: { ...params, _meta: ENVELOPE } })}\n`);
    });
  let inputs = 0;
  try {
    const created = await call('tools/call', { name: 'sleep', arguments: { ms: 0, message: 'stdio victim' } });
    const taskId = (created.result as { taskId: string }).taskId;
    const view = async () => {
      const { pollIntervalMs: _hint, ...task } = (await call('tasks/get', { taskId })).result as Record<string, unknown>;
      return JSON.stringify(task);
    };
    let before = await view();
    for (let i = 0; !before.includes('"completed"'); i++) {
      if (i > 500) throw new Error('the stdio victim did not complete');
      await new Promise((resolve) => setTimeout(resolve, 10));
      before = await view();
    }
    options.log?.(`byte fuzz stdio: ${options.runs} runs, seed ${options.seed}`);
    await fc.assert(
      fc.asyncProperty(stdioBytes, async (bytes) => {
        inputs++;
        child.stdin.write(bytes);
        if (child.exitCode !== null) throw new Error(`the stdio child exited:\n${stderr.slice(-3000)}`);
        const answer = await call('tools/list', {});
        if (!answer.result) throw new Error(`probe answered ${JSON.stringify(answer)} after ${bytes.toString('hex')}`);
      }),
      { numRuns: options.runs, seed: options.seed, endOnFailure: true },
    );
    const after = await view();
    if (after !== before) throw new Error(`the stdio task changed: ${before} → ${after}`);
  } finally {
    child.kill('SIGKILL');
  }
  return inputs;
}
