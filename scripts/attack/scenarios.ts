/**
 * Every scenario of `npm run attack`, one per resource a client can hold.
 * A new resource gets a scenario here and a row in docs/security.md's table.
 */
import type { AttackScenario } from './harness.js';
import { argumentKeys, metaKeys, storedStrings, unreadHttpReplies } from './sentResources.js';
import {
  halfSentBodies,
  idleConnections,
  legacySessions,
  liveTasks,
  unreadListenStreams,
  unreadWebSocketReplies,
} from './heldResources.js';

export const SCENARIOS: readonly AttackScenario[] = [
  unreadHttpReplies,
  metaKeys,
  argumentKeys,
  storedStrings,
  liveTasks,
  unreadListenStreams,
  legacySessions,
  idleConnections,
  unreadWebSocketReplies,
  halfSentBodies,
];
