/**
 * Store folders are private: lowdb names each record file after
 * its task id, and without auth a task id is the only secret guarding the
 * task, so a folder any local user can list leaks every task. Folders
 * taskvisor creates get mode 0700; an existing folder with group or other
 * access is left alone (it may be shared on purpose) but reported.
 */
import { mkdir, stat } from 'node:fs/promises';

/** Mode of every folder taskvisor creates for its stores and state. */
export const PRIVATE_DIR_MODE = 0o700;

/**
 * Creates `dir` and its missing parents with mode 0700 (returns the first
 * folder created, as `mkdir` does) and calls `warn` for each of `checked`
 * that already existed with group or other permissions.
 */
export async function ensurePrivateDir(
  dir: string,
  warn: (message: string) => void,
  checked: readonly string[] = [dir],
): Promise<string | undefined> {
  const firstCreated = await mkdir(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  for (const folder of checked) {
    // Folders this call created are 0700 (mkdir's mode, narrowed by the umask only).
    if (firstCreated !== undefined && isWithin(folder, firstCreated)) continue;
    const mode = (await stat(folder)).mode & 0o777;
    if ((mode & 0o077) !== 0) {
      warn(
        `folder ${folder} has mode 0${mode.toString(8)}: other local users can list the task files in it; chmod 700 it (taskvisor creates its folders 0700)`,
      );
    }
  }
  return firstCreated;
}

/** Whether `folder` is `ancestor` or inside it. */
function isWithin(folder: string, ancestor: string): boolean {
  return folder === ancestor || folder.startsWith(ancestor.endsWith('/') ? ancestor : `${ancestor}/`);
}

/** The default warning: one line on stderr (stores have no logger of their own). */
export const warnOnStderr = (message: string): void => void process.stderr.write(`taskvisor: warning: ${message}\n`);
