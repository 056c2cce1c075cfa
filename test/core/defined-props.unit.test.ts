/** `definedProps` keeps what the conditional spreads it replaces keep: defined members, in their order. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { definedProps } from '../../src/core/definedProps.js';

describe('definedProps', () => {
  it('leaves out undefined members and keeps null, 0, false and empty strings', () => {
    const result = definedProps({ a: undefined, b: null, c: 0, d: false, e: '' });
    assert.deepEqual(result, { b: null, c: 0, d: false, e: '' });
    assert.equal(Object.hasOwn(result, 'a'), false);
  });

  it('keeps the members in the order given, as the spreads did', () => {
    const z = 1;
    const y: string | undefined = undefined;
    const x = 'x';
    assert.deepEqual(Object.keys({ first: 0, ...definedProps({ z, y, x }) }), ['first', 'z', 'x']);
  });

  it('types maybe-undefined members as optional and keeps the others required', () => {
    const maybe: number | undefined = 2;
    const typed: { name: string; count?: number } = definedProps({ name: 'n', count: maybe });
    assert.deepEqual(typed, { name: 'n', count: 2 });
  });
});
