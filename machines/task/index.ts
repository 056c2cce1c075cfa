export * from './types.js';
export { taskMachine, statusOf, TASK_MACHINE_VERSION, deadlineError, restartError, type TaskMachine } from './task.machine.js';
