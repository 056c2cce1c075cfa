/**
 * ListenerGuard on a real Node HTTP server: a handler that
 * throws or rejects, and an upgrade handler that throws, answer 500 with a
 * reference id that the log line carries too — the detail (here a path)
 * reaches the log only — and the server keeps answering.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { ListenerGuard } from '../../src/transports/listenerGuard.js';
import { sendRaw } from '../support/rawSocket.js';

const lines: string[] = [];
const logger = {
  info: (message: string) => lines.push(message),
  error: (message: string, error?: unknown) => lines.push(`${message}: ${String(error)}`),
};
let server: Server;
let port: number;

before(async () => {
  const guard = new ListenerGuard('test', logger);
  server = createServer(
    guard.request(async (req, res) => {
      if (req.url === '/throw') throw new Error('sync failure reading /var/secret/store');
      if (req.url === '/reject') {
        await Promise.resolve();
        throw new Error('async failure reading /var/secret/store');
      }
      res.end('fine');
    }),
  );
  guard.attach(server);
  server.on(
    'upgrade',
    guard.upgrade(() => {
      throw new Error('upgrade failure reading /var/secret/store');
    }),
  );
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});
after(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('ListenerGuard', () => {
  for (const [what, head] of [
    ['a handler that throws', 'GET /throw HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    ['a handler that rejects', 'GET /reject HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n'],
    [
      'an upgrade handler that throws',
      'GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n',
    ],
  ] as const) {
    it(`${what}: 500 with a reference id, the detail in the log only, the server still answers`, async () => {
      const reply = await sendRaw(port, head);
      assert.equal(reply.status, 500, reply.text);
      const full = reply.text;
      const ref = /"ref":"([0-9a-f]{8})"/.exec(full)?.[1];
      assert.ok(ref, full);
      assert.ok(!full.includes('/var/secret'), 'no path reaches the client');
      assert.ok(
        lines.some((line) => line.includes(`ref ${ref}`) && line.includes('/var/secret/store')),
        lines.join('\n'),
      );
      const fine = await fetch(`http://127.0.0.1:${port}/ok`);
      assert.equal(await fine.text(), 'fine');
    });
  }
});
