/**
 * What a load costs the two processes, read from /proc (Linux only): the
 * server's CPU (all its threads) and how often the server's main thread and
 * the load generator's thread went to sleep waiting (voluntary context
 * switches). A closed-loop client that sleeps once per answer makes every
 * answer's `writev` also pay for waking it on the other core; answers that
 * leave in bursts (after a blocking group commit) do not.
 * This is why the memory store, which answers each create at once, can run
 * below sqlite at c=64.
 */
import { readFileSync } from 'node:fs';

/** One reading; `undefined` where /proc is not there. */
export interface ThreadReading {
  /** Server CPU, user + system, every thread, ms (10 ms resolution). */
  serverCpuMs: number;
  /** Voluntary context switches of the server's main thread. */
  serverSleeps: number;
  /** Voluntary context switches of this process's main thread (the load generator). */
  clientSleeps: number;
}

/** Clock ticks per second of /proc/<pid>/stat (USER_HZ: 100 on every Linux build that matters here). */
const TICKS_PER_SECOND = 100;

function voluntarySwitches(pid: number): number {
  const status = readFileSync(`/proc/${pid}/task/${pid}/status`, 'utf8');
  return Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)?.[1] ?? NaN);
}

function cpuMs(pid: number): number {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
}

/** Reads the server `pid` and this process now. */
export function readThreads(pid: number): ThreadReading | undefined {
  try {
    return { serverCpuMs: cpuMs(pid), serverSleeps: voluntarySwitches(pid), clientSleeps: voluntarySwitches(process.pid) };
  } catch {
    return undefined;
  }
}

/** `after − before`, or `undefined` when either is missing. */
export function threadDelta(before: ThreadReading | undefined, after: ThreadReading | undefined): ThreadReading | undefined {
  if (!before || !after) return undefined;
  return {
    serverCpuMs: after.serverCpuMs - before.serverCpuMs,
    serverSleeps: after.serverSleeps - before.serverSleeps,
    clientSleeps: after.clientSleeps - before.clientSleeps,
  };
}

/** The sum of several deltas (the slices of one partner), or `undefined` when any is missing. */
export function sumThreads(deltas: readonly (ThreadReading | undefined)[]): ThreadReading | undefined {
  if (deltas.length === 0 || deltas.some((delta) => delta === undefined)) return undefined;
  return deltas.reduce<ThreadReading>(
    (total, delta) => ({
      serverCpuMs: total.serverCpuMs + delta!.serverCpuMs,
      serverSleeps: total.serverSleeps + delta!.serverSleeps,
      clientSleeps: total.clientSleeps + delta!.clientSleeps,
    }),
    { serverCpuMs: 0, serverSleeps: 0, clientSleeps: 0 },
  );
}
