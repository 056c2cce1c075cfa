/**
 * The process around `main`: runs `taskvisor` with `process.argv` and sets
 * the exit code (bin/taskvisor.js imports this module).
 */
import { main } from './main.js';

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`taskvisor: ${(error as Error).stack ?? String(error)}\n`);
    process.exit(1);
  },
);
