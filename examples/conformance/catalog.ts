/**
 * What the server scenarios of `@modelcontextprotocol/conformance` expect a
 * server to offer (tools, resources, a template, prompts), written only
 * against taskvisor's public API: `npm run conformance` serves this module
 * (examples/conformance/taskvisor.yaml) and runs every server scenario
 * against it over HTTP. Each definition says which scenario it answers.
 */
import { definePrompt, defineResource, defineResourceTemplate, defineTool } from '../../src/tools/index.js';

/** A 1×1 red PNG. */
const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==';
/** A 44-byte WAV header with no samples (8 kHz mono 16-bit). */
const WAV = 'UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA=';

const pause = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** Synchronous tools: the suite's client speaks 2025-11-25, where tasks never apply (T-37). */
const sync = { taskBehavior: 'never' as const };
const noArgs = { type: 'object', properties: {} } as const;

export default [
  // tools-call-simple-text
  defineTool('test_simple_text', { ...sync, description: 'Returns simple text', inputSchema: noArgs }, () => ({
    content: [{ type: 'text', text: 'This is a simple text response for testing.' }],
  })),
  // tools-call-image
  defineTool('test_image_content', { ...sync, description: 'Returns an image', inputSchema: noArgs }, () => ({
    content: [{ type: 'image', data: PNG, mimeType: 'image/png' }],
  })),
  // tools-call-audio
  defineTool('test_audio_content', { ...sync, description: 'Returns audio', inputSchema: noArgs }, () => ({
    content: [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }],
  })),
  // tools-call-embedded-resource
  defineTool('test_embedded_resource', { ...sync, description: 'Returns an embedded resource', inputSchema: noArgs }, () => ({
    content: [
      {
        type: 'resource',
        resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
      },
    ],
  })),
  // tools-call-mixed-content
  defineTool('test_multiple_content_types', { ...sync, description: 'Returns text, an image and a resource', inputSchema: noArgs }, () => ({
    content: [
      { type: 'text', text: 'Multiple content types test:' },
      { type: 'image', data: PNG, mimeType: 'image/png' },
      {
        type: 'resource',
        resource: {
          uri: 'test://mixed-content-resource',
          mimeType: 'application/json',
          text: JSON.stringify({ test: 'data', value: 123 }),
        },
      },
    ],
  })),
  // tools-call-with-logging
  defineTool(
    'test_tool_with_logging',
    { ...sync, description: 'Logs three messages while it runs', inputSchema: noArgs },
    async (_args, ctx) => {
      ctx.log('info', 'Tool execution started');
      await pause(50, ctx.signal);
      ctx.log('info', 'Tool processing data');
      await pause(50, ctx.signal);
      ctx.log('info', 'Tool execution completed');
      return 'Logging tool finished';
    },
  ),
  // tools-call-error: a tool error is a result with isError, not a JSON-RPC error
  defineTool('test_error_handling', { ...sync, description: 'Always fails', inputSchema: noArgs }, () => ({
    isError: true,
    content: [{ type: 'text', text: 'This tool intentionally returns an error for testing' }],
  })),
  // tools-call-with-progress
  defineTool(
    'test_tool_with_progress',
    { ...sync, description: 'Reports progress 0, 50, 100 of 100', inputSchema: noArgs },
    async (_args, ctx) => {
      ctx.progress(0, 100);
      await pause(50, ctx.signal);
      ctx.progress(50, 100);
      await pause(50, ctx.signal);
      ctx.progress(100, 100);
      return 'Progress tool finished';
    },
  ),
  // tools-call-sampling
  defineTool(
    'test_sampling',
    {
      ...sync,
      description: 'Asks the client to sample from its model',
      inputSchema: { type: 'object', properties: { prompt: { type: 'string' } }, required: ['prompt'] },
    },
    async (args, ctx) => {
      const answer = (await ctx.requestInput('sample', {
        method: 'sampling/createMessage',
        params: { messages: [{ role: 'user', content: { type: 'text', text: String(args.prompt) } }], maxTokens: 100 },
      })) as { content?: { text?: string } };
      return `LLM response: ${answer.content?.text ?? JSON.stringify(answer)}`;
    },
  ),
  // tools-call-elicitation
  defineTool(
    'test_elicitation',
    {
      ...sync,
      description: 'Asks the user for a username and an email',
      inputSchema: { type: 'object', properties: { message: { type: 'string' } }, required: ['message'] },
    },
    async (args, ctx) => {
      const answer = await ctx.elicit('user', {
        message: String(args.message),
        requestedSchema: {
          type: 'object',
          properties: {
            username: { type: 'string', description: "User's response" },
            email: { type: 'string', description: "User's email address" },
          },
          required: ['username', 'email'],
        },
      });
      return `User response: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
    },
  ),
  // elicitation-sep1034-defaults
  defineTool(
    'test_elicitation_sep1034_defaults',
    { ...sync, description: 'Elicits with defaults', inputSchema: noArgs },
    async (_args, ctx) => {
      const answer = await ctx.elicit('defaults', {
        message: 'Please review these defaults',
        requestedSchema: {
          type: 'object',
          properties: {
            name: { type: 'string', default: 'John Doe' },
            age: { type: 'integer', default: 30 },
            score: { type: 'number', default: 95.5 },
            status: { type: 'string', enum: ['active', 'inactive', 'pending'], default: 'active' },
            verified: { type: 'boolean', default: true },
          },
        },
      } as never);
      return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
    },
  ),
  // elicitation-sep1330-enums
  defineTool(
    'test_elicitation_sep1330_enums',
    { ...sync, description: 'Elicits every enum form', inputSchema: noArgs },
    async (_args, ctx) => {
      const answer = await ctx.elicit('enums', {
        message: 'Please choose',
        requestedSchema: {
          type: 'object',
          properties: {
            untitledSingle: { type: 'string', enum: ['option1', 'option2', 'option3'] },
            titledSingle: {
              type: 'string',
              oneOf: [
                { const: 'value1', title: 'First Option' },
                { const: 'value2', title: 'Second Option' },
                { const: 'value3', title: 'Third Option' },
              ],
            },
            legacyEnum: { type: 'string', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
            untitledMulti: { type: 'array', items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
            titledMulti: {
              type: 'array',
              items: {
                anyOf: [
                  { const: 'value1', title: 'First Choice' },
                  { const: 'value2', title: 'Second Choice' },
                  { const: 'value3', title: 'Third Choice' },
                ],
              },
            },
          },
        },
      } as never);
      return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.content ?? {})}`;
    },
  ),
  // json-schema-2020-12: the schema is published as written ($schema, $defs, $ref kept)
  defineTool(
    'json_schema_2020_12_tool',
    {
      ...sync,
      description: 'Tool with JSON Schema 2020-12 features',
      inputSchema: {
        $schema: 'https://json-schema.org/draft/2020-12/schema',
        type: 'object',
        $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
        properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
        additionalProperties: false,
      },
    },
    (args) => `Hello ${String(args.name ?? 'nobody')}`,
  ),

  // resources-read-text, resources-list
  defineResource('static-text', 'test://static-text', { description: 'A static text resource', mimeType: 'text/plain' }, (uri) => ({
    contents: [{ uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' }],
  })),
  // resources-read-binary
  defineResource('static-binary', 'test://static-binary', { description: 'A static PNG', mimeType: 'image/png' }, (uri) => ({
    contents: [{ uri, mimeType: 'image/png', blob: PNG }],
  })),
  // resources-subscribe, resources-unsubscribe
  defineResource(
    'watched-resource',
    'test://watched-resource',
    { description: 'A resource clients may subscribe to', mimeType: 'text/plain' },
    (uri) => ({
      contents: [{ uri, mimeType: 'text/plain', text: 'Watched resource content.' }],
    }),
  ),
  // resources-templates-read
  defineResourceTemplate(
    'template-data',
    'test://template/{id}/data',
    { description: 'Data by id', mimeType: 'application/json' },
    (uri, { id }) => ({
      contents: [
        { uri, mimeType: 'application/json', text: JSON.stringify({ id, templateTest: true, data: `Data for ID: ${String(id)}` }) },
      ],
    }),
  ),

  // prompts-get-simple, prompts-list
  definePrompt('test_simple_prompt', { description: 'A simple prompt' }, () => ({
    messages: [{ role: 'user', content: { type: 'text', text: 'This is a simple prompt for testing.' } }],
  })),
  // prompts-get-with-args, completion-complete
  definePrompt(
    'test_prompt_with_arguments',
    {
      description: 'A prompt with two arguments',
      arguments: [
        {
          name: 'arg1',
          description: 'First test argument',
          required: true,
          complete: (value) => ['paris', 'park', 'party'].filter((word) => word.startsWith(value)),
        },
        { name: 'arg2', description: 'Second test argument', required: true },
      ],
    },
    ({ arg1, arg2 }) => ({
      messages: [{ role: 'user', content: { type: 'text', text: `Prompt with arguments: arg1='${arg1}', arg2='${arg2}'` } }],
    }),
  ),
  // prompts-get-embedded-resource
  definePrompt(
    'test_prompt_with_embedded_resource',
    {
      description: 'A prompt embedding a resource',
      arguments: [{ name: 'resourceUri', description: 'The resource to embed', required: true }],
    },
    ({ resourceUri }) => ({
      messages: [
        {
          role: 'user',
          content: {
            type: 'resource',
            resource: { uri: String(resourceUri), mimeType: 'text/plain', text: 'Embedded resource content for testing.' },
          },
        },
        { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
      ],
    }),
  ),
  // prompts-get-with-image
  definePrompt('test_prompt_with_image', { description: 'A prompt with an image' }, () => ({
    messages: [
      { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
      { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
    ],
  })),
];
