/** What the {@link UpstreamManager} is built from, and the health it reports per upstream. */
import type { CallerCredentials } from '../auth/CallerCredentials.js';
import type { PromptRegistry } from '../prompts/PromptRegistry.js';
import type { ResourceRegistry } from '../resources/ResourceRegistry.js';
import type { Logger } from '../runtime/Logger.js';
import type { ToolRegistry } from '../tools/ToolRegistry.js';
import type { UpstreamState } from '../../machines/upstream/index.js';
import type { UpstreamCredentialSource } from './identity/UpstreamCredentialSource.js';
import type { UpstreamSpec } from './UpstreamSpec.js';

export interface UpstreamManagerOptions {
  upstreams: UpstreamSpec[];
  /** First part of every upstream tool name (`<namespace>_<prefix>_<tool>`). Default `x`. */
  namespace?: string;
  /** The runtime state file (secret, discover cache, health). */
  stateFile: string;
  tools: ToolRegistry;
  /** Where upstream resources and templates are served (`<namespace>-<prefix>+<uri>`); none: not forwarded. */
  resources?: ResourceRegistry;
  /** Where upstream prompts are served (`<namespace>_<prefix>_<prompt>`); none: not forwarded. */
  prompts?: PromptRegistry;
  logger: Logger;
  /** The callers' bearer tokens, for upstreams whose identity is `passthrough` or `tokenExchange`. */
  callerCredentials?: CallerCredentials;
  /** Per-principal credential sources by upstream name (e.g. per-principal OAuth); such an upstream gets per-principal connections. */
  credentialSources?: Readonly<Record<string, UpstreamCredentialSource>>;
}

/** One upstream's health, as `taskvisor upstreams` prints it. */
export interface UpstreamStatus {
  name: string;
  state: UpstreamState | 'not started';
  lastError: string | null;
  retryAt: number | null;
  toolCount: number;
  protocolVersion: string | null;
  tasks: boolean;
}
