/**
 * The OAuth redirect endpoint on taskvisor's HTTP listener
 * (`GET /oauth/callback` by default): where the authorization server sends a
 * principal's browser back with `code` and `state`. It needs no bearer token
 * — a browser following a redirect carries none — because the state is the
 * credential: it was issued to one principal for one upstream, is redeemed
 * once, and expires ({@link UpstreamOAuth.completeAuthorization}).
 *
 * The page says which upstream was authorized and nothing else; it is never
 * cached and sends no referrer (the URL held a code).
 */
import type { HttpRoutes } from '../../transports/HttpRoutes.js';
import { AuthorizationCallbackError, type UpstreamOAuth } from './UpstreamOAuth.js';

export const DEFAULT_OAUTH_CALLBACK_PATH = '/oauth/callback';

/** The route answering `path` for `oauth`. */
export function oauthCallbackRoute(
  oauth: UpstreamOAuth,
  path: string = DEFAULT_OAUTH_CALLBACK_PATH,
  log: (message: string) => void = () => {},
): HttpRoutes {
  return {
    owns: (pathname) => pathname === path,
    async fetch(request) {
      if (request.method !== 'GET') return page(405, 'Only GET is served here.', { allow: 'GET' });
      const params = new URL(request.url).searchParams;
      const state = params.get('state');
      const code = params.get('code');
      if (params.get('error') !== null) return page(400, 'The authorization was not granted. Start again from your client.');
      if (!state || !code || state.length > 256 || code.length > 4096) return page(400, 'This is not a complete authorization response.');
      try {
        const done = await oauth.completeAuthorization({ state, code, iss: params.get('iss') ?? undefined });
        return page(200, `taskvisor may now call ${escapeHtml(done.upstream)} for you. You can close this window and retry your request.`);
      } catch (error) {
        if (error instanceof AuthorizationCallbackError) return page(400, escapeHtml(error.message));
        log(`oauth callback failed: ${(error as Error).message}`);
        return page(500, 'The authorization could not be completed. Start again from your client.');
      }
    },
  };
}

function page(status: number, text: string, headers: Record<string, string> = {}): Response {
  return new Response(`<!doctype html><meta charset="utf-8"><title>taskvisor</title><p>${text}</p>\n`, {
    status,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-store',
      'referrer-policy': 'no-referrer',
      'content-security-policy': "default-src 'none'",
      ...headers,
    },
  });
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** `base` with `callback` in front of it: the callback path answers first, everything else as before. */
export function withCallbackRoute(base: HttpRoutes, callback: HttpRoutes): HttpRoutes {
  return {
    owns: (pathname) => callback.owns(pathname) || base.owns(pathname),
    fetch: (request, client) =>
      callback.owns(new URL(request.url).pathname) ? callback.fetch(request, client) : base.fetch(request, client),
  };
}
