import assert from 'node:assert/strict';
import { it } from 'node:test';
import { validEnvelope } from '../../src/protocol/taskRequestDecoder.js';

const PV = 'io.modelcontextprotocol/protocolVersion';
const CAPS = 'io.modelcontextprotocol/clientCapabilities';
const INFO = 'io.modelcontextprotocol/clientInfo';

it('validEnvelope: an envelope equal to the last valid one is valid, one that differs anywhere is judged again', () => {
  const good = () => ({
    [PV]: '2026-07-28',
    [CAPS]: { extensions: { 'io.modelcontextprotocol/tasks': {} } },
    [INFO]: { name: 'c', version: '1' },
  });
  assert.equal(validEnvelope(good()), true);
  // Equal members in another order: the same envelope.
  const reordered = { [INFO]: { version: '1', name: 'c' }, [CAPS]: good()[CAPS], [PV]: '2026-07-28' };
  assert.equal(validEnvelope(reordered), true);
  // One level down, a value of the wrong type: not the remembered envelope, and the SDK refuses it.
  assert.equal(validEnvelope({ ...good(), [INFO]: { name: 42, version: '1' } }), false);
  assert.equal(validEnvelope({ ...good(), [INFO]: [] }), false);
  assert.equal(validEnvelope(good()), true);
});
