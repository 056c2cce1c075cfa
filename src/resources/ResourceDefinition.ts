/**
 * How a user declares a resource or a resource template:
 * `runtime.resource(name, uri, options, read)` and
 * `runtime.resourceTemplate(name, uriTemplate, options, read)`, or the
 * `defineResource` / `defineResourceTemplate` values a config module exports.
 */
import type { JsonObject } from '../core/json.js';
import type { Completer } from './Completer.js';

/** One item of a `resources/read` result: text or base64 `blob`. */
export interface ResourceContents {
  uri: string;
  mimeType?: string;
  text?: string;
  blob?: string;
  _meta?: JsonObject;
}

/** A `ReadResourceResult` (without `resultType`: the SDK stamps it). */
export interface ReadResourceResult {
  contents: ResourceContents[];
  _meta?: JsonObject;
}

/** What a resource reader gets besides the URI. */
export interface ResourceContext {
  /** The principal reading the resource (I-7: readers decide what it may see). */
  principal: string;
  /** Fires when the request goes away. */
  signal: AbortSignal;
}

/** Listing metadata of a resource (`resources/list` entry fields besides `uri` and `name`). */
export interface ResourceOptions {
  title?: string;
  description?: string;
  mimeType?: string;
  /** Size in bytes, when known. */
  size?: number;
  annotations?: JsonObject;
  icons?: JsonObject[];
  _meta?: JsonObject;
}

/** Reads a resource: a `ReadResourceResult`, or a string (one text item with the resource's `uri` and `mimeType`). */
export type ResourceReader = (uri: string, ctx: ResourceContext) => Promise<ReadResourceResult | string> | ReadResourceResult | string;

/** A registered resource with a fixed URI. */
export interface ResourceDefinition {
  kind: 'resource';
  name: string;
  uri: string;
  options: ResourceOptions;
  read: ResourceReader;
}

/** One `resources/list` entry. */
export interface ListedResource extends ResourceOptions {
  uri: string;
  name: string;
}

export interface ResourceTemplateOptions extends ResourceOptions {
  /** Completions of the template's variables (`completion/complete` with a `ref/resource`), by variable name. */
  complete?: Record<string, Completer>;
  /** Concrete resources of this template to add to `resources/list` (optional). */
  list?: (ctx: ResourceContext) => Promise<ListedResource[]> | ListedResource[];
}

/** Reads a resource of a template; `variables` are the values the URI gave the template's variables. */
export type ResourceTemplateReader = (
  uri: string,
  variables: Record<string, string | string[]>,
  ctx: ResourceContext,
) => Promise<ReadResourceResult | string> | ReadResourceResult | string;

/** A registered resource template (RFC 6570 `uriTemplate`). */
export interface ResourceTemplateDefinition {
  kind: 'resourceTemplate';
  name: string;
  uriTemplate: string;
  options: ResourceTemplateOptions;
  read: ResourceTemplateReader;
}

/** One `resources/templates/list` entry. */
export interface ListedResourceTemplate extends ResourceOptions {
  uriTemplate: string;
  name: string;
}
