/** The `toolPolicy` and `rateLimits` config sections: accepted shapes, and errors naming file, line and field. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ConfigError, parseConfig } from '../../src/config/loadConfig.js';

const refused = (text: string): string => {
  try {
    parseConfig(text, 'taskvisor.yaml');
  } catch (error) {
    assert.ok(error instanceof ConfigError, String(error));
    return error.message;
  }
  return assert.fail('the config was accepted');
};

describe('config: toolPolicy and rateLimits', () => {
  it('a full policy and full limits parse', () => {
    const config = parseConfig(
      [
        'toolPolicy:',
        '  default: deny',
        '  local: { scopes: [admin], groups: [ops] }',
        '  rules:',
        "    - { tools: ['github_*'], scopes: [github] }",
        '    - { tools: [deploy], groups: [ops], principals: [alice] }',
        'rateLimits:',
        '  requests: { limit: 600, windowMs: 60000, burst: 100 }',
        '  taskCreations: { limit: 60, windowMs: 60000 }',
        "  tools: [{ tools: ['github_*'], limit: 30, windowMs: 60000 }]",
      ].join('\n'),
      'taskvisor.yaml',
    );
    assert.equal(config.toolPolicy?.rules.length, 2);
    assert.equal(config.rateLimits?.tools?.[0]?.limit, 30);
  });

  it('errors name the file, the line and the field', () => {
    assert.match(refused('toolPolicy:\n  rules:\n    - tools: []\n'), /taskvisor\.yaml:3:\d+: toolPolicy\.rules\[0\]\.tools: Too small/);
    assert.match(
      refused('toolPolicy:\n  rules:\n    - tools: [a]\n      scope: [x]\n'),
      /taskvisor\.yaml:4:\d+: toolPolicy\.rules\[0\]\.scope: unknown field/,
    );
    assert.match(refused('toolPolicy:\n  default: maybe\n  rules: []\n'), /taskvisor\.yaml:2:\d+: toolPolicy\.default/);
    assert.match(
      refused('rateLimits:\n  requests: { limit: 10, windowMs: 0 }\n'),
      /taskvisor\.yaml:2:\d+: rateLimits\.requests\.windowMs: Too small/,
    );
    assert.match(refused('rateLimits:\n  tools:\n    - { tools: [a], limit: 1.5, windowMs: 10 }\n'), /rateLimits\.tools\[0\]\.limit/);
  });
});
