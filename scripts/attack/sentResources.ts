/**
 * Attacks on what a client makes the server do or keep by what it sends:
 * replies it never reads (outbound bytes), requests whose shape costs CPU
 * (keys in `_meta` and `arguments`), and huge strings kept in its tasks and
 * served to the operator. Each wraps the attack module of its own, run as
 * the attacker principal against the harness's server.
 */
import { TOKENS, type AttackScenario } from './harness.js';
import { outboundReplies } from './outboundReplies.js';
import { requestShapeAttack, type ShapeTarget } from './requestShape.js';
import { storedStringsAttack } from './storedStrings.js';

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });
const MiB = 1024 * 1024;

export const unreadHttpReplies: AttackScenario = {
  name: 'outbound-replies',
  resource: 'outbound bytes per HTTP connection and per principal (pipelined, never read)',
  limit: 'limits.maxOutboundBufferBytes (8 MiB), maxOutboundBytesPerPrincipal (64 MiB), maxPipelinedRequests (1), outboundGraceMs (10 s)',
  quick: true,
  limits: (scale) => (scale < 1 ? { maxOutboundBufferBytes: MiB, outboundGraceMs: 1_000 } : {}),
  async run(target, scale) {
    const outcome = await outboundReplies({
      baseUrl: target.url,
      sockets: scale < 1 ? 4 : 30,
      pipelined: scale < 1 ? 4 : 10,
      textBytes: scale < 1 ? MiB : 3_000_000,
      durationMs: scale < 1 ? 8_000 : 40_000,
      headers: bearer(TOKENS.attacker),
      bystanderHeaders: bearer(TOKENS.bystander),
    });
    return `${outcome.attackersClosed} of ${outcome.attackers} unread sockets closed in ${outcome.heldMs} ms`;
  },
};

function requestShape(target: ShapeTarget): AttackScenario {
  return {
    name: `request-shape-${target}`,
    resource: `CPU per request: 200,000 ${target === 'array' ? 'array items' : `keys in ${target === 'meta' ? '`_meta`' : '`arguments`'}`}, back to back`,
    limit: 'limits.maxJsonKeys (10,000), maxJsonNodes (200,000), maxMetaNodes (256), maxJsonDepth (64), judged before any schema',
    quick: target === 'meta',
    async run(attacked, scale) {
      const report = await requestShapeAttack(attacked.url, {
        target,
        durationMs: scale < 1 ? 3_000 : 20_000,
        idleSamples: 20,
        headers: bearer(TOKENS.attacker),
        bystanderHeaders: bearer(TOKENS.bystander),
      });
      const statuses = Object.entries(report.attackStatuses)
        .map(([status, count]) => `${count}× ${status}`)
        .join(', ');
      return `${report.attackRequests} bodies of ${(report.bodyBytes / MiB).toFixed(1)} MiB answered ${statuses}`;
    },
  };
}

export const metaKeys = requestShape('meta');
export const argumentKeys = requestShape('arguments');

export const storedStrings: AttackScenario = {
  name: 'stored-strings',
  resource: 'stored bytes per task (4 MB error messages), then the operator lists tasks',
  limit: 'statusMessage 4,096 and error.message 16,384 characters; /ops/api/tasks pages of 1 MiB',
  quick: true,
  async run(target, scale) {
    const report = await storedStringsAttack({
      url: target.url,
      headers: bearer(TOKENS.attacker),
      operatorHeaders: bearer(TOKENS.operator),
      tasks: scale < 1 ? 8 : 72,
      messageBytes: scale < 1 ? MiB : 4_000_000,
    });
    if (!report.listOk)
      throw new Error(`GET /ops/api/tasks answered ${report.listStatus}${report.listRef ? ` (ref ${report.listRef})` : ''}`);
    return `${report.created} tasks stored; /ops/api/tasks answered ${report.listStatus}: ${(report.listBytes / 1024).toFixed(1)} KiB in ${report.listMs} ms`;
  },
};
