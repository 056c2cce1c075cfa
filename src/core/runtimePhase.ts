/**
 * Where a runtime is in its life, as readiness reports it (issue 16.1):
 * `starting` until the store is open, `recovering` while unfinished tasks
 * are resumed and the cluster lease is taken, `ready` while serving,
 * `stopping` from `close()` on, `stopped` once closed.
 */
export type RuntimePhase = 'starting' | 'recovering' | 'ready' | 'stopping' | 'stopped';
