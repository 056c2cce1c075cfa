/**
 * Test data for the store suites.
 */
import { randomUUID } from 'node:crypto';
import type { TaskRecord } from '../../src/tasks/TaskRecord.js';

/**
 * A plausible `working` task record (with a nested, JSON-only snapshot) with
 * `overrides` applied. Every call gets a fresh random `taskId` unless one is
 * given. No key is ever `undefined`, so the record survives a JSON round trip
 * unchanged and deep-equals what any store returns.
 */
export function makeRecord(overrides: Partial<TaskRecord> = {}): TaskRecord {
  const now = overrides.createdAt ?? Date.now();
  return {
    taskId: randomUUID(),
    owner: 'alice',
    tool: 'slow_echo',
    status: 'working',
    statusMessage: 'starting',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: 60_000,
    pollIntervalMs: 500,
    version: 1,
    machineVersion: 1,
    snapshot: {
      status: 'active',
      value: { running: 'working' },
      context: {
        taskId: 'in-snapshot',
        args: { text: 'héllo "quoted" \\ \n newline', n: 3, nested: { list: [1, 'two', { three: null }], flag: true } },
        issuedKeys: [],
        answers: {},
        inputRequests: {},
        cancelRequested: false,
      },
      children: {},
      historyValue: {},
    },
    ...overrides,
  };
}
