// What the TypeScript processes of the multi-round-trip benchmark measure about themselves, as
// benchmarks/mrtr_load.py does for the Python ones: CPU time and run-queue wait.
import { readdirSync, readFileSync } from 'node:fs';

/** This process's CPU time so far, user + system, every thread (process.cpuUsage()), in seconds. */
export const cpuSeconds = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
};

/**
 * A reader of the seconds this process's threads spent runnable but waiting for a CPU, so far
 * (Linux schedstat): summed thread by thread from the first reading on, as mrtr_load.RunQueueWait.
 * Always 0 without /proc.
 */
export function runQueueWait() {
  const seen = new Map();
  let total = 0;
  return () => {
    let tasks = [];
    try {
      tasks = readdirSync('/proc/self/task');
    } catch {
      return 0;
    }
    for (const task of tasks) {
      try {
        const waited = Number(readFileSync(`/proc/self/task/${task}/schedstat`, 'utf8').split(' ')[1]);
        total += Math.max(0, waited - (seen.get(task) ?? 0));
        seen.set(task, waited);
      } catch {
        // a thread that ended
      }
    }
    return total / 1e9;
  };
}
