/**
 * What `taskvisor call` and `taskvisor tasks get|cancel|watch` share:
 * reaching a server (URL or a stdio command), showing a task's status
 * live, asking input requests on the terminal, printing a result, and the
 * exit code of an outcome.
 */
import { createInterface, type Interface } from 'node:readline';
import {
  JsonRpcResponseError,
  TaskCancelledError,
  TaskFailedError,
  TasksClient,
  type CallToolResult,
  type InputAnswer,
  type InputRequest,
  type InputRequestHandler,
  type TasksEndpoint,
  type TaskStatusUpdate,
} from '../client/index.js';
import { causeCode, diagnoseHttp, tailOf } from './connectError.js';
import { UsageError, type CliIo } from './usage.js';

/** An elicitation answer's `content` (the form values), as the client's InputAnswer types it. */
type ElicitContent = NonNullable<Extract<InputAnswer, { action: unknown }>['content']>;

/** Exit codes of a remote call (documented in the usage texts and docs/configuration.md). */
export const EXIT = {
  completed: 0,
  /** The tool answered with `isError: true`. */
  toolError: 1,
  usage: 2,
  /** The server could not be reached or the connection broke. */
  unreachable: 3,
  /** A JSON-RPC error, or the task ended `failed`. */
  failed: 4,
  /** The task was cancelled by someone else. */
  cancelled: 5,
  /** Ctrl-C: the task was cancelled from here. */
  interrupted: 130,
} as const;

/** Splits a command line on spaces, keeping "double" or 'single' quoted parts together. */
export function splitCommand(text: string): string[] {
  const words: string[] = [];
  let current = '';
  let quote: string | undefined;
  let started = false;
  for (const char of text) {
    if (quote) {
      if (char === quote) quote = undefined;
      else current += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      started = true;
    } else if (/\s/.test(char)) {
      if (started) words.push(current);
      current = '';
      started = false;
    } else {
      current += char;
      started = true;
    }
  }
  if (quote) throw new Error(`unclosed ${quote} in ${JSON.stringify(text)}`);
  if (started) words.push(current);
  return words;
}

/** An endpoint, with what a stdio server wrote on stderr so far (shown when it fails to start). */
export type CliEndpoint = TasksEndpoint & { serverStderr?: () => string };

/**
 * The endpoint from a URL or `--stdio CMD`, plus `--header 'Name: value'`s; `usage` is shown on mistakes.
 * A stdio server's stderr is always kept (a server that fails to start says why there); `verbose` also shows it live.
 */
export function endpointOf(
  options: { url: string | undefined; stdio: string | undefined; headers: string[] | undefined; verbose: boolean | undefined },
  usage: string,
  io: CliIo = process,
): CliEndpoint {
  if (options.url !== undefined && options.stdio !== undefined) throw new UsageError('give a URL or --stdio CMD, not both', usage);
  if (options.stdio !== undefined) {
    let words: string[];
    try {
      words = splitCommand(options.stdio);
    } catch (error) {
      throw new UsageError(`--stdio: ${(error as Error).message}`, usage);
    }
    if (words.length === 0) throw new UsageError('--stdio: expected a command', usage);
    let stderr = '';
    return {
      command: words[0]!,
      args: words.slice(1),
      onStderr: (text) => {
        // Only the tail is ever shown: a chatty server must not grow this without bound.
        stderr = (stderr + text).slice(-16_384);
        if (options.verbose) io.stderr.write(text);
      },
      serverStderr: () => stderr,
    };
  }
  if (options.url === undefined) throw new UsageError('missing the server: a URL (http(s):// or ws(s)://) or --stdio CMD', usage);
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    throw new UsageError(`${options.url}: not a URL (expected http(s)://HOST:PORT/PATH or ws(s)://…)`, usage);
  }
  if (!['http:', 'https:', 'ws:', 'wss:'].includes(url.protocol)) {
    throw new UsageError(`${options.url}: expected an http(s):// or ws(s):// URL`, usage);
  }
  const headers: Record<string, string> = {};
  for (const header of options.headers ?? []) {
    const colon = header.indexOf(':');
    if (colon <= 0) throw new UsageError(`--header ${header}: expected 'Name: value'`, usage);
    headers[header.slice(0, colon).trim()] = header.slice(colon + 1).trim();
  }
  return { url, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
}

/**
 * Connects, or writes why not and returns undefined (exit {@link EXIT.unreachable}): what happened first
 * (connection refused, HTTP 404 at the path, not an MCP endpoint, the stdio server exited and its stderr),
 * then the client library's message as the detail.
 */
export async function connectOrReport(endpoint: CliEndpoint, io: CliIo, elicitation: boolean): Promise<TasksClient | undefined> {
  const { serverStderr, ...target } = endpoint;
  try {
    return await TasksClient.connect(target, { clientInfo: { name: 'taskvisor-cli', version: '1' }, elicitation });
  } catch (error) {
    const detail = (error as Error).message;
    if ('command' in target) {
      const stderr = serverStderr?.() ?? '';
      const what =
        causeCode(error) === 'ENOENT'
          ? `no such command ${JSON.stringify(target.command)}`
          : `the stdio server \`${[target.command, ...(target.args ?? [])].join(' ')}\` ${/closed/i.test(detail) ? 'exited before answering' : 'did not answer as a 2026-07-28 MCP server'}`;
      const said = stderr.trim() !== '' ? `; its stderr:\n${tailOf(stderr)}` : ' (it wrote nothing on stderr)';
      io.stderr.write(`taskvisor: cannot connect: ${what}${said}\n  detail: ${detail}\n`);
      return undefined;
    }
    const url = new URL(target.url);
    const what = url.protocol.startsWith('http')
      ? await diagnoseHttp(url, target.headers)
      : causeCode(error) === 'ECONNREFUSED'
        ? `connection refused at ${url.host} (is the server running?)`
        : undefined;
    io.stderr.write(`taskvisor: cannot connect to ${url.href}: ${what ?? 'the server refused the MCP session'}\n  detail: ${detail}\n`);
    return undefined;
  }
}

/**
 * Shows status changes on stderr: one rewritten line on a terminal, a line
 * per change otherwise. `done()` clears the terminal line.
 */
export function statusReporter(stream: NodeJS.WriteStream | CliIo['stderr'], quiet: boolean) {
  const tty = (stream as NodeJS.WriteStream).isTTY === true;
  let shown = false;
  const started = Date.now();
  return {
    update(update: TaskStatusUpdate): void {
      if (quiet) return;
      const seconds = ((Date.now() - started) / 1000).toFixed(1);
      const text = `${update.status}${update.statusMessage ? `: ${update.statusMessage}` : ''}`;
      if (tty) {
        const width = (stream as NodeJS.WriteStream).columns ?? 80;
        stream.write(`\r\x1b[K… ${text} (${seconds}s)`.slice(0, width + 4));
        shown = true;
        // The whole id: it is what `tasks get|cancel|watch` take (a server looks a task up by its exact id).
      } else stream.write(`[${update.taskId}] ${text}\n`);
    },
    note(text: string): void {
      if (quiet) return;
      this.done();
      stream.write(`${text}\n`);
    },
    done(): void {
      if (tty && shown) stream.write('\r\x1b[K');
      shown = false;
    },
  };
}

/** Reads lines from stdin on demand (interactive prompts, or piped answers). */
export function lineReader(): { ask(prompt: string, io: CliIo): Promise<string | undefined>; close(): void } {
  let reader: Interface | undefined;
  let iterator: AsyncIterator<string> | undefined;
  return {
    async ask(prompt, io) {
      io.stderr.write(prompt);
      reader ??= createInterface({ input: process.stdin, terminal: false });
      iterator ??= reader[Symbol.asyncIterator]();
      const { value, done } = await iterator.next();
      return done ? undefined : value;
    },
    close: () => reader?.close(),
  };
}

interface SchemaProperty {
  type?: string;
  title?: string;
  description?: string;
  enum?: unknown[];
  oneOf?: Array<{ const?: unknown; title?: string }>;
  default?: unknown;
  items?: { enum?: unknown[] };
}

/**
 * Answers input requests: `--input KEY=JSON` first (accept with that
 * content), then, unless `interactive` is false (decline), form fields asked
 * one by one from the requested schema on stderr/stdin. A blank answer to a
 * required field declines; "!cancel" cancels the request.
 */
export function inputHandler(
  answers: Map<string, unknown>,
  interactive: boolean,
  io: CliIo,
  status: ReturnType<typeof statusReporter>,
  lines: ReturnType<typeof lineReader>,
): InputRequestHandler {
  return async (request: InputRequest, context): Promise<InputAnswer> => {
    const key = context.inputId ?? '';
    // Cast: `--input KEY=JSON` answers any request kind with the user's JSON, sent as an elicitation's content;
    // the server checks the answer (T-19).
    if (answers.has(key)) return { action: 'accept', content: answers.get(key) as ElicitContent };
    if (request.kind !== 'elicitation') throw new Error(`this command cannot answer ${request.kind} requests (key ${key})`);
    const params = request.params as {
      message?: string;
      mode?: string;
      url?: string;
      requestedSchema?: { properties?: Record<string, SchemaProperty>; required?: string[] };
    };
    if (params.mode === 'url') {
      status.note(`? ${params.message ?? key}\n  open ${params.url} to answer (declined here)`);
      return { action: 'decline' };
    }
    if (!interactive) {
      status.note(`? ${params.message ?? key} [${key}]: declined (no --input ${key}=JSON)`);
      return { action: 'decline' };
    }
    status.note(`? ${params.message ?? `The server asks for ${key}`}  (blank required field: decline; !cancel: cancel)`);
    const content: Record<string, FieldValue> = {};
    const required = new Set(params.requestedSchema?.required ?? []);
    for (const [name, property] of Object.entries(params.requestedSchema?.properties ?? {})) {
      for (;;) {
        const choices = property.enum ?? property.oneOf?.map((option) => option.const) ?? property.items?.enum;
        const hint = [
          property.type ?? 'string',
          choices ? `one of ${choices.map(String).join('|')}` : undefined,
          required.has(name) ? 'required' : undefined,
        ]
          .filter(Boolean)
          .join(', ');
        const line = await lines.ask(
          `  ${property.title ?? name} (${hint})${property.description ? ` — ${property.description}` : ''}: `,
          io,
        );
        if (line === undefined) return { action: 'decline' };
        const text = line.trim();
        if (text === '!cancel') return { action: 'cancel' };
        if (text === '') {
          if (required.has(name)) return { action: 'decline' };
          break;
        }
        const value = parseField(text, property);
        if (
          value === undefined ||
          (choices && !(Array.isArray(value) ? value.every((item) => choices.includes(item)) : choices.includes(value)))
        ) {
          io.stderr.write(`  not a valid ${hint}; again\n`);
          continue;
        }
        content[name] = value;
        break;
      }
    }
    return { action: 'accept', content };
  };
}

/** A form field's value as an elicitation answer carries it. */
type FieldValue = string | number | boolean | string[];

function parseField(text: string, property: SchemaProperty): FieldValue | undefined {
  switch (property.type) {
    case 'number':
    case 'integer': {
      const value = Number(text);
      if (!Number.isFinite(value) || (property.type === 'integer' && !Number.isInteger(value))) return undefined;
      return value;
    }
    case 'boolean':
      if (/^(y|yes|true)$/i.test(text)) return true;
      if (/^(n|no|false)$/i.test(text)) return false;
      return undefined;
    case 'array':
      return text.split(',').map((item) => item.trim());
    default:
      return text;
  }
}

/** Prints a result: text blocks as text, other blocks and `structuredContent` (without text) as JSON; or all as JSON. */
export function printResult(result: CallToolResult, json: boolean, io: CliIo): void {
  if (json) {
    io.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
    return;
  }
  const blocks = (result.content ?? []) as Array<{ type: string; text?: string }>;
  const text = blocks.map((block) => (block.type === 'text' ? (block.text ?? '') : JSON.stringify(block))).join('\n');
  if (text !== '') io.stdout.write(`${text}\n`);
  else if (result.structuredContent !== undefined) io.stdout.write(`${JSON.stringify(result.structuredContent, null, 2)}\n`);
}

/**
 * Runs `settle` (a callTool or watchTask) with Ctrl-C wired to cancel (a
 * second Ctrl-C exits at once), prints the outcome and returns its exit code.
 */
export async function runRemote(
  io: CliIo,
  status: ReturnType<typeof statusReporter>,
  json: boolean,
  settle: (signal: AbortSignal) => Promise<CallToolResult>,
): Promise<number> {
  const controller = new AbortController();
  const interrupted = new Error('interrupted (Ctrl-C): task cancelled');
  const onSigint = () => {
    if (controller.signal.aborted) process.exit(EXIT.interrupted);
    status.note('^C cancelling… (again to quit at once)');
    controller.abort(interrupted);
  };
  process.on('SIGINT', onSigint);
  try {
    const result = await settle(controller.signal);
    status.done();
    printResult(result, json, io);
    return result.isError === true ? EXIT.toolError : EXIT.completed;
  } catch (error) {
    status.done();
    if (error === interrupted) {
      io.stderr.write('taskvisor: cancelled\n');
      return EXIT.interrupted;
    }
    if (error instanceof TaskCancelledError) {
      io.stderr.write('taskvisor: the task was cancelled\n');
      return EXIT.cancelled;
    }
    if (error instanceof TaskFailedError || error instanceof JsonRpcResponseError) {
      const { code, data } = error as { code?: number; data?: unknown };
      if (json)
        io.stdout.write(
          `${JSON.stringify({ error: { code, message: error.message, ...(data !== undefined ? { data } : {}) } }, null, 2)}\n`,
        );
      io.stderr.write(`taskvisor: ${error.message}${code !== undefined ? ` (${code})` : ''}\n`);
      return EXIT.failed;
    }
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'number') {
      io.stderr.write(`taskvisor: ${(error as Error).message} (${code})\n`);
      return EXIT.failed;
    }
    io.stderr.write(`taskvisor: ${(error as Error).message}\n`);
    return EXIT.unreachable;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
