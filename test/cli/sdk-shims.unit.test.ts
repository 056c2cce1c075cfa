/**
 * src/cli/sdkShims.ts stands in for the SDK's Node shims in the bundled CLI
 * (scripts/build.js): its validator must answer exactly as the SDK's own
 * `DefaultJsonSchemaValidator` (Ajv), which it loads on first use.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { DefaultJsonSchemaValidator as SdkValidator, process as sdkProcess } from '@modelcontextprotocol/server/_shims';
import { DefaultJsonSchemaValidator, process } from '../../src/cli/sdkShims.js';

const SCHEMAS = [
  // No $schema: the SDK's default dialect.
  { type: 'object', properties: { name: { type: 'string', minLength: 2 }, age: { type: 'integer', minimum: 0 } }, required: ['name'] },
  { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { email: { type: 'string', format: 'email' } } },
  { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'array', prefixItems: [{ type: 'number' }], items: false },
] as const;

const INPUTS: unknown[] = [
  { name: 'Ada', age: 36 },
  { name: 'A' },
  { age: -1 },
  { email: 'ada@example.org' },
  { email: 'not an email' },
  [1],
  [1, 2],
  'text',
];

describe('the bundled CLI’s SDK shims (cold start)', () => {
  it('validates as the SDK’s own validator does, valid and invalid inputs, every dialect', () => {
    const ours = new DefaultJsonSchemaValidator();
    const theirs = new SdkValidator();
    for (const schema of SCHEMAS) {
      const mine = ours.getValidator(schema);
      const sdk = theirs.getValidator(schema);
      for (const input of INPUTS) assert.deepEqual(mine(input), sdk(input), `${JSON.stringify(schema)} on ${JSON.stringify(input)}`);
    }
    // The fixture exercises both outcomes.
    const first = ours.getValidator(SCHEMAS[0]);
    assert.equal(first({ name: 'Ada' }).valid, true);
    assert.equal(first({ name: 'A' }).valid, false);
  });

  it('exports the same process object', () => {
    assert.equal(process, sdkProcess);
  });
});
