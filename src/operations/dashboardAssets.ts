/**
 * The dashboard's files: three static files shipped in the
 * package (`src/operations/dashboard/`), read once and served with a strict
 * Content-Security-Policy: scripts, styles and connections from this origin
 * only, no inline code, no framing. No CDN: the machines may be offline.
 */
import { readFile } from 'node:fs/promises';
import { BASE_HEADERS, json } from './httpResponses.js';

export const DASHBOARD_PREFIX = '/ui/';

const FILES: Record<string, { file: string; type: string }> = {
  '/ui/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/app.js': { file: 'app.js', type: 'text/javascript; charset=utf-8' },
  '/ui/app.css': { file: 'app.css', type: 'text/css; charset=utf-8' },
};

const CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const cache = new Map<string, Promise<string>>();

/** The response for `pathname` under the dashboard (`/ui` redirects to `/ui/`). */
export async function dashboardAsset(pathname: string): Promise<Response> {
  if (pathname === '/ui') return new Response(null, { status: 308, headers: { location: '/ui/', ...BASE_HEADERS } });
  const entry = FILES[pathname];
  if (!entry) return json(404, { error: 'not found' });
  let text = cache.get(entry.file);
  if (!text) {
    text = readFile(new URL(`./dashboard/${entry.file}`, import.meta.url), 'utf8');
    cache.set(entry.file, text);
    text.catch(() => cache.delete(entry.file));
  }
  return new Response(await text, {
    status: 200,
    headers: {
      'content-type': entry.type,
      'content-security-policy': CSP,
      'x-frame-options': 'DENY',
      'referrer-policy': 'no-referrer',
      ...BASE_HEADERS,
    },
  });
}
