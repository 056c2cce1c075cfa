/**
 * `upstreams[].promotion` in the config file: accepted as documented
 * (docs/configuration.md), and a bad value refused naming the file, line and
 * field, like every other config error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/loadConfig.js';

const config = (promotion: string) => `upstreams:
  - name: everything
    type: stdio
    command: node
    promotion:
${promotion}
`;

describe('upstreams[].promotion in the config file', () => {
  it('accepts the documented keys', () => {
    const parsed = parseConfig(
      config(`      taskBehavior: auto
      promoteAfterMs: 250
      timeoutMs: 600000
      tools:
        long-report: { taskBehavior: always, idempotent: true }
        send-mail: { idempotent: false, promoteAfterMs: 0 }`),
      'taskvisor.yaml',
    );
    assert.deepEqual(parsed.upstreams?.[0]?.promotion, {
      taskBehavior: 'auto',
      promoteAfterMs: 250,
      timeoutMs: 600000,
      tools: { 'long-report': { taskBehavior: 'always', idempotent: true }, 'send-mail': { idempotent: false, promoteAfterMs: 0 } },
    });
  });

  for (const [label, body, pattern] of [
    [
      'a taskBehavior that is not one of the three',
      '      tools:\n        send-mail: { taskBehavior: sometimes }',
      /^taskvisor\.yaml:\d+:\d+: upstreams\[0\]\.promotion\.tools\.send-mail\.taskBehavior: expected 'auto', 'always' or 'never'/,
    ],
    ['a negative promoteAfterMs', '      promoteAfterMs: -1', /^taskvisor\.yaml:\d+:\d+: upstreams\[0\]\.promotion\.promoteAfterMs: /],
    ['a timeoutMs of 0', '      timeoutMs: 0', /^taskvisor\.yaml:\d+:\d+: upstreams\[0\]\.promotion\.timeoutMs: /],
    ['an unknown key', '      resume: replay', /^taskvisor\.yaml:\d+:\d+: upstreams\[0\]\.promotion.*resume/],
  ] as const) {
    it(`refuses ${label}, naming file, line and field`, () => {
      assert.throws(
        () => parseConfig(config(body), 'taskvisor.yaml'),
        (error: unknown) => error instanceof ConfigError && pattern.test(error.message),
      );
    });
  }
});
