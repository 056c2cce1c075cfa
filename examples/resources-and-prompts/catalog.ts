/**
 * A module of resources, a resource template, a prompt and a tool that
 * reports progress and logs: what `taskvisor.yaml` next to it loads, and what
 * `server.ts` / `stdio.ts` register through the runtime API.
 */
import { z } from 'zod';
import { definePrompt, defineResource, defineResourceTemplate, defineTool } from '../../src/tools/index.js';

const NOTES: Record<string, string> = {
  groceries: 'milk, eggs, bread',
  ideas: 'an actor per long-running call',
  todo: 'write the docs',
};

export default [
  // A resource with a fixed URI: a string answer is one text item.
  defineResource(
    'readme',
    'notes://readme',
    { title: 'About these notes', mimeType: 'text/plain' },
    () => 'Notes live at notes://note/{name}.',
  ),

  // A template: every URI it matches is a resource; `complete` suggests values for its variable.
  defineResourceTemplate(
    'note',
    'notes://note/{name}',
    {
      description: 'One note by name',
      mimeType: 'text/plain',
      complete: { name: (value) => Object.keys(NOTES).filter((name) => name.startsWith(value)) },
      list: () => Object.keys(NOTES).map((name) => ({ uri: `notes://note/${name}`, name: `note ${name}`, mimeType: 'text/plain' })),
    },
    (uri, { name }) => {
      const text = NOTES[String(name)];
      if (text === undefined) throw Object.assign(new Error(`No note named ${String(name)}`), { code: -32602, data: { uri } });
      return { contents: [{ uri, mimeType: 'text/plain', text }] };
    },
  ),

  // A prompt with a required, completable argument.
  definePrompt(
    'summarize_note',
    {
      description: 'Ask the model to summarize one note',
      arguments: [
        {
          name: 'name',
          description: 'The note',
          required: true,
          complete: (value) => Object.keys(NOTES).filter((name) => name.startsWith(value)),
        },
        { name: 'style', description: 'How (default: one line)' },
      ],
    },
    ({ name, style }) => ({
      description: `Summary of ${name}`,
      messages: [
        { role: 'user', content: { type: 'text', text: `Summarize this note (${style ?? 'one line'}):` } },
        {
          role: 'user',
          content: { type: 'resource', resource: { uri: `notes://note/${name}`, mimeType: 'text/plain', text: NOTES[String(name)] ?? '' } },
        },
      ],
    }),
  ),

  // A tool that reports progress (notifications/progress for a synchronous call, the statusMessage of a task)
  // and logs (notifications/message, as the client's level allows).
  defineTool(
    'count_notes',
    {
      description: 'Counts the notes, slowly',
      inputSchema: z.object({ stepMs: z.number().int().min(0).max(1000).default(0) }),
      taskBehavior: 'never',
    },
    async ({ stepMs }, ctx) => {
      const names = Object.keys(NOTES);
      ctx.log('debug', { starting: names.length });
      for (const [index, name] of names.entries()) {
        ctx.progress(index + 1, names.length, `counted ${name}`);
        await new Promise((resolve) => setTimeout(resolve, stepMs));
      }
      ctx.log('info', `counted ${names.length} notes`, 'notes');
      return `${names.length} notes`;
    },
  ),
];
