export * from './types.js';
export * from './workflow.machine.js';
export * from './snapshots.js';
