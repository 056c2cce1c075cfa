/**
 * limits: maxJsonDepth judged two ways — on the text before parsing
 * (`exceedsJsonDepth`) and on a short message's parsed value
 * (`exceedsValueDepth`, the HTTP fast lane). The lane's
 * answers equal the SDK path's only while both judges agree on every input.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { exceedsJsonDepth, exceedsValueDepth } from '../../src/limits/jsonDepth.js';

/** JSON values with deep chains of objects and arrays, and strings full of brackets, quotes and escapes. */
const deepJson = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(
      fc.constant(null),
      fc.boolean(),
      fc.double({ noNaN: true, noDefaultInfinity: true }),
      fc.string({ unit: fc.constantFrom('{', '[', ']', '}', '"', '\\', 'a', 'é') }),
    ),
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(fc.string({ unit: fc.constantFrom('{', '[', '"', '\\', 'k') }), tie('value'), { maxKeys: 3 }),
  ),
}));

describe('JSON depth', () => {
  it('the parsed-value judge agrees with the text judge for every value and limit', () => {
    fc.assert(
      fc.property(deepJson.value, fc.integer({ min: 0, max: 8 }), fc.boolean(), (value, max, pretty) => {
        const text = JSON.stringify(value, null, pretty ? 2 : undefined);
        assert.equal(exceedsValueDepth(JSON.parse(text), max), exceedsJsonDepth(text, max), text);
      }),
      { numRuns: 2_000 },
    );
  });

  it('counts each array and object level, and stops at the limit on a hostile value', () => {
    const nested = (levels: number) => JSON.parse('['.repeat(levels) + ']'.repeat(levels)) as unknown;
    assert.equal(exceedsValueDepth(nested(64), 64), false);
    assert.equal(exceedsValueDepth(nested(65), 64), true);
    assert.equal(exceedsValueDepth({ a: [{ b: 1 }] }, 3), false);
    assert.equal(exceedsValueDepth({ a: [{ b: {} }] }, 3), true);
    assert.equal(exceedsValueDepth('[[[[', 1), false);
    // 100,000 levels: no stack overflow, the walk ends after the limit.
    assert.equal(exceedsValueDepth(nested(100_000), 64), true);
  });
});
