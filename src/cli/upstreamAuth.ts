/**
 * `taskvisor upstreams auth|revoke|grants NAME`: a principal's OAuth grant
 * for an upstream that requires one (`identity: { mode: oauth }`), managed
 * from the shell. `auth` is the browser flow for a local user: it listens on
 * a loopback port (RFC 8252), prints the authorization URL (and opens it
 * with `--open`), and stores the grant — sealed, in the configured store —
 * when the browser comes back. A running server sees it on the next call.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { spawn } from 'node:child_process';
import { ConfigError, loadConfig } from '../config/loadConfig.js';
import { LOCAL_PRINCIPAL } from '../core/principal.js';
import { nodeRequestHandler } from '../transports/nodeAdapter.js';
import { oauthCallbackRoute } from '../upstreams/oauth/OAuthCallbackRoute.js';
import { openUpstreamOAuth, type ConfiguredUpstreamOAuth } from '../upstreams/oauth/fromConfig.js';
import { DEFAULT_PENDING_TTL_MS } from '../upstreams/oauth/UpstreamOAuth.js';
import { storeConfigOf } from './serveOptions.js';
import { parseCommandLine, UsageError, type CliIo } from './usage.js';

export const UPSTREAM_AUTH_USAGE = `Usage: taskvisor upstreams auth NAME [--config FILE] [--principal ID] [--open]
       taskvisor upstreams revoke NAME [--config FILE] [--principal ID]
       taskvisor upstreams grants NAME [--config FILE]

A principal's OAuth grant for an upstream configured with
identity: { mode: oauth } (docs/aggregator.md). Grants are sealed with the
credentials key and stored beside the server's task store.

  auth     Authorize in a browser: prints the URL, waits on a loopback port
           for the authorization server to send the browser back, stores
           the grant. Replaces the principal's previous grant.
  revoke   Forgets the principal's grant (and revokes it at the
           authorization server when it offers revocation).
  grants   The principals holding a grant for NAME.

Options:
  -c, --config FILE     The server's config (default ./taskvisor.yaml)
  --principal ID        Whose grant: the id the server's auth gives the
                        caller (token file name, JWT subject). Default
                        "local", the stdio principal.
  --open                Open the URL in the default browser too
  -h, --help            Show this text

Exit codes: 0 done, 1 refused or timed out, 2 a bad command line.
`;

export async function upstreamAuthCommand(verb: 'auth' | 'revoke' | 'grants', argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine(
    argv,
    { config: { type: 'string', short: 'c' }, principal: { type: 'string' }, open: { type: 'boolean' } },
    UPSTREAM_AUTH_USAGE,
    { positionals: true },
  );
  if (values.help) {
    io.stdout.write(UPSTREAM_AUTH_USAGE);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError(`upstreams ${verb}: give the name of one upstream`, UPSTREAM_AUTH_USAGE);
  const name = positionals[0]!;
  const principal = values.principal ?? LOCAL_PRINCIPAL.id;
  if (principal === '' || principal.length > 256)
    throw new UsageError('--principal: expected a principal id (1-256 characters)', UPSTREAM_AUTH_USAGE);
  const loaded = await loadConfig(values.config ?? 'taskvisor.yaml');
  const store = storeConfigOf(loaded);
  if (store.kind === 'memory')
    throw new ConfigError(`${loaded.file}: store: a memory store keeps no grant past this command; configure lowdb, sqlite or postgres`);
  const configured = await openUpstreamOAuth(loaded, store);
  if (!configured?.oauth.handles(name)) {
    await configured?.close();
    throw new ConfigError(
      `${loaded.file}: upstreams: no upstream ${JSON.stringify(name)} with identity mode oauth (and a credentials section)`,
    );
  }
  try {
    if (verb === 'grants') {
      for (const holder of (await configured.oauth.principalsOf(name)).sort()) io.stdout.write(`${holder}\n`);
      return 0;
    }
    if (verb === 'revoke') {
      const had = await configured.oauth.revoke(name, principal);
      io.stdout.write(had ? `revoked ${principal}'s grant for ${name}\n` : `${principal} holds no grant for ${name}\n`);
      return had ? 0 : 1;
    }
    return await authorizeInBrowser(configured, name, principal, values.open === true, io);
  } finally {
    await configured.close();
  }
}

/** The loopback flow: a one-shot callback listener on 127.0.0.1, the URL printed, the grant stored when the browser returns. */
async function authorizeInBrowser(
  configured: ConfiguredUpstreamOAuth,
  name: string,
  principal: string,
  open: boolean,
  io: CliIo,
): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const redirectUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/callback`;
  try {
    const done = new Promise<number>((resolve) => {
      const route = oauthCallbackRoute(configured.oauth, '/callback', (message) => io.stderr.write(`taskvisor: ${message}\n`));
      let outcome: number | undefined;
      const serve = nodeRequestHandler({
        fetch: async (request: Request) => {
          const response = await route.fetch(request);
          if (route.owns(new URL(request.url).pathname)) outcome = response.status === 200 ? 0 : 1;
          return response;
        },
      });
      // Done once the browser has the page: closing the listener earlier would cut its answer.
      server.on('request', (req, res) => void serve(req, res).then(() => outcome !== undefined && resolve(outcome)));
      setTimeout(() => resolve(-1), DEFAULT_PENDING_TTL_MS).unref();
    });
    const url = await configured.oauth.startAuthorization(name, principal, redirectUrl);
    io.stdout.write(
      `Open this URL to authorize taskvisor to call ${name} as ${principal}:\n\n  ${url.href}\n\nWaiting for the browser on ${redirectUrl} …\n`,
    );
    if (open) openInBrowser(url.href);
    const code = await done;
    if (code === 0) io.stdout.write(`authorized: ${principal} may now use ${name} through taskvisor\n`);
    else
      io.stderr.write(code === -1 ? 'taskvisor: timed out waiting for the browser\n' : 'taskvisor: the authorization was not completed\n');
    return code === 0 ? 0 : 1;
  } finally {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
}

function openInBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  spawn(command, [url], { stdio: 'ignore', detached: true })
    .on('error', () => undefined)
    .unref();
}
