/**
 * What recovery says about a task whose worker was a held upstream call
 * (server-directed promotion of upstream calls) of a tool not marked
 * idempotent: the request lived in the process that sent it, so after a
 * restart or an adoption it is gone, and it is not sent again (it may have
 * had effects). Never silent: the task ends `failed` saying so.
 */
const HELD_CALL_LOST = 'a held call does not survive that';

/** Why such a task ends `failed` on restart or adoption. */
export function heldCallLost(upstream: string, cause: 'restart' | 'adopted'): string {
  const lost =
    cause === 'adopted'
      ? `The instance holding this task's call to the upstream server ${upstream} lost its cluster lease`
      : `The server restarted while it held this task's call to the upstream server ${upstream}`;
  return `${lost}; ${HELD_CALL_LOST}, and the tool is not marked idempotent, so it was not sent again`;
}

/** Whether `reason` is one {@link heldCallLost} gave (the task then ends from its own snapshot, like a plain restart). */
export function isHeldCallLost(reason: string): boolean {
  return reason.includes(HELD_CALL_LOST);
}
