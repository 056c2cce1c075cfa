/**
 * The Tasks extension's identity and the one test of "did this request
 * declare it". Capabilities are read from each request's own `_meta`
 * envelope, never remembered from initialisation (T-01, T-33).
 */

/** The extension id (SEP-2663) under `capabilities.extensions`. */
export const TASKS_EXTENSION_ID = 'io.modelcontextprotocol/tasks';

/** `{ extensions: { "io.modelcontextprotocol/tasks": {} } }`: what a client or server declares to support tasks (T-11). */
export function tasksCapability(): { extensions: { [TASKS_EXTENSION_ID]: Record<string, never> } } {
  return { extensions: { [TASKS_EXTENSION_ID]: {} } };
}

/**
 * Whether a `clientCapabilities` object declares the tasks extension. Any
 * object counts as declared (D-12: `{}` means supported, settings may come
 * later); `null`, arrays and scalars do not, and the legacy
 * `capabilities.tasks` never does (T-37).
 */
export function declaresTasksExtension(capabilities: unknown): boolean {
  if (!isPlainObject(capabilities)) return false;
  const extensions = capabilities['extensions'];
  return isPlainObject(extensions) && isPlainObject(extensions[TASKS_EXTENSION_ID]);
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}
