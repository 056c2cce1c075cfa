/**
 * taskvisor/client against the demo tools (docs/getting-started.md): spawns
 * `taskvisor serve --stdio --demo` (its store in ./.taskvisor of the working
 * directory), or connects to the URL given as the first argument, then
 *
 *   - sleeps 1.5 s as a task, printing each status change;
 *   - runs hello_world, answering the name it asks for in a callback;
 *   - starts a one-minute sleep and cancels it with an AbortSignal.
 *
 *   node --import tsx examples/client/demo.ts                            # spawns the demo over stdio
 *   node --import tsx examples/client/demo.ts http://127.0.0.1:3000/mcp  # npm start elsewhere
 *
 * In your project the import is `taskvisor/client`.
 */
import { fileURLToPath } from 'node:url';
import { TasksClient, type CallToolResult, type TasksEndpoint } from '../../src/client/index.js';

const url = process.argv[2];
const endpoint: TasksEndpoint = url
  ? { url }
  : {
      command: process.execPath,
      args: [fileURLToPath(new URL('../../bin/taskvisor.js', import.meta.url)), 'serve', '--stdio', '--demo', '--quiet'],
    };

/** The text of a result's first content block. */
const text = (result: CallToolResult) => result.content.map((block) => (block.type === 'text' ? block.text : `[${block.type}]`)).join(' ');

const client = await TasksClient.connect(endpoint, {
  // Answers every input request; giving it declares form elicitation to the server.
  onInputRequest: (request) => {
    console.log(`asked: ${String(request.params?.message ?? request.kind)}`);
    return { action: 'accept', content: { name: 'Ada' } };
  },
});
try {
  const slept = await client.callTool(
    'sleep',
    { ms: 1500, message: 'rested' },
    {
      onTask: (taskId) => console.log(`sleep is task ${taskId}`),
      onStatus: ({ status, statusMessage }) => console.log(`  ${status}${statusMessage ? `: ${statusMessage}` : ''}`),
    },
  );
  console.log(`sleep: ${text(slept)}`);

  console.log(`hello_world: ${text(await client.callTool('hello_world'))}`);

  // Aborting the signal cancels the task (tasks/cancel); the call then rejects with the signal's reason.
  const cancel = new AbortController();
  await client
    .callTool(
      'sleep',
      { ms: 60_000 },
      { signal: cancel.signal, onTask: () => setTimeout(() => cancel.abort(new Error('changed my mind')), 500) },
    )
    .then(
      () => console.log('the long sleep finished (not cancelled)'),
      (error: unknown) => console.log(`the long sleep: cancelled (${(error as Error).message})`),
    );
} finally {
  await client.close();
}
