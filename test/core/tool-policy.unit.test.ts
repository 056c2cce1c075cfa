/** core/toolPolicy.ts: globs, first match decides, principals / groups / all scopes, the default. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { globMatcher, ToolPolicy } from '../../src/core/toolPolicy.js';

describe('ToolPolicy', () => {
  const policy = new ToolPolicy({
    rules: [
      { tools: ['github_admin_*'], principals: ['root'] },
      { tools: ['github_*'], scopes: ['github', 'read'] },
      { tools: ['ops_?ob'], groups: ['ops', 'sre'] },
      { tools: ['public_*'] },
    ],
  });

  it('globs: * any run, ? one character, everything else literal', () => {
    assert.ok(globMatcher('github_*')('github_create_issue'));
    assert.ok(!globMatcher('github_*')('xgithub_a'));
    assert.ok(globMatcher('a.b')('a.b'));
    assert.ok(!globMatcher('a.b')('axb'), 'a dot is literal');
    assert.ok(globMatcher('ops_?ob')('ops_job'));
    assert.ok(!globMatcher('ops_?ob')('ops_jjob'));
  });

  it('a long name against many stars is decided without backtracking blow-up', () => {
    const name = 'a'.repeat(100_000);
    assert.equal(globMatcher('*a*a*a*a*b')(name), false);
    assert.equal(globMatcher('*a*a*a*a*a')(name), true);
    assert.equal(globMatcher('a*')(''), false);
    assert.equal(globMatcher('*')(''), true);
  });

  it('the first matching rule decides (a narrower rule first wins over a broader one)', () => {
    const holder = { id: 'alice', scopes: ['github', 'read'] };
    assert.equal(policy.allows(holder, 'github_create_issue'), true);
    assert.equal(policy.allows(holder, 'github_admin_delete'), false, 'the admin rule names principals only');
    assert.equal(policy.allows({ id: 'root' }, 'github_admin_delete'), true);
  });

  it('scopes: all of them; groups: any of them; a rule naming nobody lets everyone pass', () => {
    assert.equal(policy.allows({ id: 'a', scopes: ['github'] }, 'github_x'), false, 'one scope of two is not enough');
    assert.equal(policy.allows({ id: 'a', groups: ['sre'] }, 'ops_job'), true);
    assert.equal(policy.allows({ id: 'a', groups: ['dev'] }, 'ops_job'), false);
    assert.equal(policy.allows({ id: 'anyone' }, 'public_echo'), true);
  });

  it('a name no rule matches gets the default: allow unless deny', () => {
    assert.equal(policy.allows({ id: 'a' }, 'other'), true);
    const strict = new ToolPolicy({ rules: [], default: 'deny' });
    assert.equal(strict.allows({ id: 'a', scopes: ['everything'] }, 'other'), false);
    assert.equal(strict.restricts, true);
    assert.equal(ToolPolicy.allowAll.restricts, false);
  });
});
