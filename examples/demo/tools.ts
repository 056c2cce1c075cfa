/**
 * The demo tools `npm start` serves. `hello_world` is the SEP-2663 example
 * flow (spec §3): it elicits a name, then greets.
 */
import { z } from 'zod';
// The light entry for tool modules (taskvisor/tools in the package): loading it costs no start-up time.
import { defineTool, ToolError } from '../../src/tools/index.js';

/** Resolves after `ms`, or rejects as soon as `signal` fires. */
function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** The optional delay of `fail` and `tool_error`. */
const DELAY = z.number().int().min(0).max(86_400_000).optional().describe('Wait this many milliseconds first (honours cancellation)');

export default [
  defineTool('hello_world', { description: 'Asks for your name (form elicitation), then says hello.' }, async (_args, ctx) => {
    ctx.setStatus('Waiting for a name');
    const answer = await ctx.elicit('name', {
      message: 'Please enter your name.',
      requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
    });
    if (answer.action !== 'accept' || typeof answer.content?.name !== 'string') {
      return { content: [{ type: 'text', text: `No name given (${answer.action}).` }], isError: true };
    }
    return `Hello, ${answer.content.name}!`;
  }),
  defineTool(
    'sleep',
    {
      description: 'Sleeps for `ms` milliseconds, then answers `message`. Honours cancellation.',
      inputSchema: z.object({
        ms: z.number().int().min(0).max(86_400_000).describe('How long to sleep, in milliseconds'),
        message: z.string().optional().describe('What to answer when done'),
      }),
      annotations: { readOnlyHint: true, idempotentHint: true },
    },
    async ({ ms, message }, ctx) => {
      ctx.setStatus(`Sleeping for ${ms} ms`);
      await sleep(ms, ctx.signal);
      return message ?? `Slept for ${ms} ms`;
    },
  ),
  defineTool(
    'echo',
    {
      description: 'Answers the text it is given.',
      inputSchema: z.object({ text: z.string() }),
      annotations: { readOnlyHint: true, idempotentHint: true },
      taskBehavior: 'never',
    },
    ({ text }) => text,
  ),
  defineTool(
    'fail',
    {
      description: 'Raises a JSON-RPC error, after `ms` milliseconds if given (a task running it ends `failed`).',
      inputSchema: z.object({ code: z.number().int().optional(), message: z.string(), ms: DELAY }),
    },
    async ({ code, message, ms }, ctx) => {
      // The delay lets a client see the call become a task before it fails (issue 15.6).
      if (ms) {
        ctx.setStatus(`Failing in ${ms} ms`);
        await sleep(ms, ctx.signal);
      }
      throw new ToolError(code ?? -32603, message);
    },
  ),
  defineTool(
    'tool_error',
    {
      description: 'Returns a tool result with `isError: true`, after `ms` milliseconds if given (a task running it ends `completed`).',
      inputSchema: z.object({ message: z.string(), ms: DELAY }),
    },
    async ({ message, ms }, ctx) => {
      if (ms) {
        ctx.setStatus(`Answering with an error in ${ms} ms`);
        await sleep(ms, ctx.signal);
      }
      return { content: [{ type: 'text', text: message }], isError: true };
    },
  ),
];
