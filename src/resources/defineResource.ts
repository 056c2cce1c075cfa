/**
 * Resources as values, for modules a config file points at:
 * `export default [defineResource('readme', 'docs://readme', {...}, read)]`.
 */
import type {
  ResourceDefinition,
  ResourceOptions,
  ResourceReader,
  ResourceTemplateDefinition,
  ResourceTemplateOptions,
  ResourceTemplateReader,
} from './ResourceDefinition.js';

/** Declares a resource with a fixed URI; register it with `runtime.use(...)` or a config file. */
export function defineResource(name: string, uri: string, options: ResourceOptions, read: ResourceReader): ResourceDefinition {
  return { kind: 'resource', name, uri, options, read };
}

/** Declares a resource template (RFC 6570); register it with `runtime.use(...)` or a config file. */
export function defineResourceTemplate(
  name: string,
  uriTemplate: string,
  options: ResourceTemplateOptions,
  read: ResourceTemplateReader,
): ResourceTemplateDefinition {
  return { kind: 'resourceTemplate', name, uriTemplate, options, read };
}
