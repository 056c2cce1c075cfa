/**
 * TypeScript tool modules: the published package is plain
 * JavaScript and does not depend on a TypeScript loader. When a config names
 * a `.ts`/`.mts`/`.cts` tool module, tsx (an optional peer dependency) is
 * registered once, then; `.js`/`.mjs` modules need nothing.
 */

const TYPESCRIPT_MODULE = /\.(?:ts|mts|cts)$/i;

let registration: Promise<void> | undefined;

/** tsx is not installed where taskvisor can import it. */
export class TypeScriptLoaderMissingError extends Error {
  constructor() {
    super(
      'TypeScript tool modules need the tsx loader: install it next to taskvisor (npm install --save-dev tsx) or name the compiled .js module',
    );
    this.name = 'TypeScriptLoaderMissingError';
  }
}

/** Whether `file` needs a TypeScript loader to be imported. */
export function isTypeScriptModule(file: string): boolean {
  return TYPESCRIPT_MODULE.test(file);
}

/**
 * Registers tsx's ESM loader once per process (registering again under
 * `node --import tsx` is harmless). Rejects with a
 * {@link TypeScriptLoaderMissingError} when tsx cannot be found.
 */
export function ensureTypeScriptLoader(): Promise<void> {
  registration ??= (async () => {
    let api: { register: () => unknown };
    try {
      api = await import('tsx/esm/api');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      if (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') throw new TypeScriptLoaderMissingError();
      throw error;
    }
    api.register();
  })();
  return registration.catch((error: unknown) => {
    registration = undefined; // tsx installed later can still be found by a long-lived process
    throw error;
  });
}
