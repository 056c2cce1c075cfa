export * from './types.js';
export { backoffDelay } from './backoff.js';
export {
  upstreamMachine,
  UPSTREAM_MACHINE_VERSION,
  upstreamStateOf,
  errorText,
  type UpstreamMachine,
  type UpstreamState,
} from './upstream.machine.js';
export {
  upstreamSupervisorMachine,
  UPSTREAM_SUPERVISOR_MACHINE_VERSION,
  upstreamChildId,
  type UpstreamSupervisorMachine,
} from './supervisor.machine.js';
