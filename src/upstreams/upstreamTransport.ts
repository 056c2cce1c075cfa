/**
 * The SDK client transport to one upstream (Streamable HTTP, or a stdio
 * child), and what a stdio child says outside the protocol: the tail of its
 * stderr and the non-protocol lines it wrote to stdout (the SDK drops them
 * silently). Both end up in the errors of a connection that fails, which
 * would otherwise only say it timed out.
 */
import { StreamableHTTPClientTransport, type Transport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import type { Logger } from '../runtime/Logger.js';
import { tapStdoutNoise, type StdoutNoise } from './stdoutNoise.js';
import type { UpstreamSpec } from './UpstreamSpec.js';
import type { UpstreamConnectionAuth } from './identity/UpstreamCredentialSource.js';

/** What the upstream's process wrote outside the protocol. */
export class ChildOutput {
  private stderrTail = '';
  private stdoutNoise: StdoutNoise | undefined;

  constructor(
    private readonly spec: UpstreamSpec,
    private readonly logger: Logger,
  ) {}

  stderr(chunk: Buffer): void {
    this.stderrTail = (this.stderrTail + chunk.toString('utf8')).slice(-2000);
  }

  stdout(noise: StdoutNoise): void {
    // Once per connection, though the SDK's era probe and the session are two processes saying the same.
    if (this.stdoutNoise === undefined) {
      this.logger.error(
        `upstream ${this.spec.name} wrote non-protocol output to stdout (a stdio MCP server may write only JSON-RPC messages there; logs belong on stderr): "${noise.first}"`,
      );
    }
    this.stdoutNoise = noise;
  }

  /** " (stderr: <its last line>)" when it wrote any. */
  stderrNote(): string {
    return this.stderrTail.trim() ? ` (stderr: ${this.stderrTail.trim().split('\n').slice(-1)[0]})` : '';
  }

  /** "; its stdout had …" when the child wrote what the SDK drops. */
  noiseNote(): string {
    const noise = this.stdoutNoise;
    if (!noise) return '';
    return `; its stdout had ${noise.lines} non-protocol line${noise.lines === 1 ? '' : 's'}, the first: "${noise.first}"`;
  }
}

/**
 * The transport `spec` names; a stdio child's stray output goes to `output`.
 * `auth` (a per-principal connection, Streamable HTTP only) adds its headers
 * after the configured ones and brings its auth provider.
 */
export function createUpstreamTransport(spec: UpstreamSpec, output: ChildOutput, auth?: UpstreamConnectionAuth): Transport {
  if (spec.type === 'streamable-http') {
    const headers = { ...(spec.headers ?? {}), ...(auth?.headers ?? {}) };
    return new StreamableHTTPClientTransport(new URL(spec.url), {
      ...(Object.keys(headers).length > 0 ? { requestInit: { headers } } : {}),
      ...(auth?.authProvider ? { authProvider: auth.authProvider } : {}),
    });
  }
  const transport = new StdioClientTransport({
    command: spec.command,
    ...(spec.args ? { args: spec.args } : {}),
    // The child gets the parent's environment plus the configured variables.
    env: { ...(process.env as Record<string, string>), ...(spec.env ?? {}) },
    ...(spec.cwd ? { cwd: spec.cwd } : {}),
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (chunk: Buffer) => output.stderr(chunk));
  tapStdoutNoise(transport, (noise) => output.stdout(noise));
  return transport;
}
