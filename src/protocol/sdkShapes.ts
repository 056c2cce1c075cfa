/**
 * The domain's JSON shapes named as the SDK's types, one function per shape, at the one place they are handed to
 * `Server.setRequestHandler`. Why these are assertions and not conversions: the domain (tools,
 * prompts, resources, machines) keeps listings and results as plain JSON with no SDK types (layers: no SDK below
 * adapters) and builds them to the SDK's schemas (tools/ToolSchema.ts, the surfaces' normalize(), protocol/envelope.ts;
 * forwarded results were parsed by the SDK client that received them). The SDK's types are zod-inferred and narrower
 * than JSON (an icon's `src`, an inputSchema's `type: 'object'`, a content block's union), which plain JSON types
 * cannot express without copying the SDK's schemas into the domain. Each function is an identity at run time (no
 * copy, no validation on the hot path); unlike the `as never` it replaces, the assertion names the target type, so
 * TypeScript still rejects a shape that cannot be it (a wrong field type, a missing array).
 */
import type {
  HandlerResultTypeMap,
  InputRequests,
  Prompt,
  GetPromptResult,
  ReadResourceResult as SdkReadResourceResult,
  Resource,
  ResourceTemplateType,
  Tool,
} from '@modelcontextprotocol/server';
import type { JsonObject } from '../core/json.js';
import type { InputRequest } from '../../machines/task/types.js';
import type { ListedTool } from '../tools/ToolRegistry.js';
import type { ListedPrompt, PromptResult } from '../prompts/PromptDefinition.js';
import type { ListedResource, ListedResourceTemplate, ReadResourceResult } from '../resources/ResourceDefinition.js';

/** `tools/list` entries: ToolSchema.ts builds each inputSchema as an object schema (`type: 'object'`). */
export const sdkTools = (tools: ListedTool[]): Tool[] => tools as Tool[];

/** A `tools/call` answer (CallToolResult or MRTR `input_required`): ToolCalls builds it (envelope.ts, T-04). */
export const sdkToolCallResult = (result: JsonObject): HandlerResultTypeMap['tools/call'] => result as HandlerResultTypeMap['tools/call'];

/** MRTR `inputRequests`: the machine's InputRequest is the spec's request (method + params) as plain JSON (T-19). */
export const sdkInputRequests = (requests: Record<string, InputRequest>): InputRequests => requests as InputRequests;

/** `prompts/list` entries: icons are the user's `{ src, ... }` objects, passed through as given. */
export const sdkPrompts = (prompts: ListedPrompt[]): Prompt[] => prompts as Prompt[];

/** A `prompts/get` result: normalize() checked `messages`; content blocks are the handler's (or the upstream's). */
export const sdkPromptResult = (result: PromptResult): GetPromptResult => result as GetPromptResult;

/** `resources/list` entries (icons and annotations as the user gave them). */
export const sdkResources = (resources: ListedResource[]): Resource[] => resources as Resource[];

/** `resources/templates/list` entries. */
export const sdkResourceTemplates = (templates: ListedResourceTemplate[]): ResourceTemplateType[] => templates as ResourceTemplateType[];

/** A `resources/read` result: normalize() checked each item's `uri`; an item is text or blob as the reader built it. */
export const sdkReadResourceResult = (result: ReadResourceResult): SdkReadResourceResult => result as SdkReadResourceResult;
