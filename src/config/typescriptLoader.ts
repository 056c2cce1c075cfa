/**
 * TypeScript tool modules: the published package is plain
 * JavaScript and does not depend on a TypeScript loader. When a config names
 * a `.ts`/`.mts`/`.cts` tool module, tsx (an optional peer dependency) is
 * registered once, then; `.js`/`.mjs` modules need nothing.
 *
 * A `.ts` file takes its module format from the nearest package.json: in a
 * project without `"type": "module"` (what `npm init` writes) tsx compiles it
 * to CommonJS, and its `import … from 'taskvisor'` becomes a `require()` of
 * the ES module taskvisor itself is still evaluating, which Node refuses
 * ("Cannot require() ES Module … in a cycle"). Tool modules are written as
 * ES modules whatever the host project's type, so a resolve hook loads a tool
 * module, and the project's `.ts`/`.tsx` files it imports, as ESM.
 */
import module from 'node:module';

const TYPESCRIPT_MODULE = /\.(?:ts|mts|cts)$/i;

let registration: Promise<void> | undefined;

/** The query that marks a tool module's URL and, through the hook, the project's TypeScript files it imports. */
export const TOOL_MODULE_MARK = 'taskvisor-tool-module';

/**
 * The resolve hook (module.register runs it on the loader thread, so it is
 * self-contained source; registered after tsx, it runs before tsx's and sees
 * its answer). A marked URL, or a `.ts`/`.tsx` file outside node_modules
 * imported by a marked module, that tsx would load as CommonJS is marked and
 * given format `module`; tsx then compiles it as ESM. Anything tsx already
 * loads as ESM keeps its plain URL, so taskvisor's own modules (and a tool
 * module in a `"type": "module"` project) stay single instances. `.cts`
 * stays CommonJS: that is what its name asks for.
 */
const FORCE_ESM_HOOK = `
const MARK = ${JSON.stringify(TOOL_MODULE_MARK)};
const marked = (url) => { try { return new URL(url).searchParams.has(MARK); } catch { return false; } };
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (!result.url.startsWith('file:')) return result;
  const url = new URL(result.url);
  if (url.pathname.includes('/node_modules/') || !/\\.(?:ts|tsx)$/i.test(url.pathname)) return result;
  if (!url.searchParams.has(MARK) && !(context.parentURL && marked(context.parentURL))) return result;
  if (result.format !== 'commonjs' && result.format !== 'commonjs-typescript') {
    url.searchParams.delete(MARK);
    return { ...result, url: url.href };
  }
  url.searchParams.set(MARK, '');
  return { ...result, url: url.href, format: 'module' };
}`;

/** The URL to import a tool module at: marked, so the hook loads it as an ES module. */
export function toolModuleUrl(fileUrl: string): string {
  const url = new URL(fileUrl);
  if (/\.(?:ts|tsx)$/i.test(url.pathname)) url.searchParams.set(TOOL_MODULE_MARK, '');
  return url.href;
}

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
    module.register(`data:text/javascript,${encodeURIComponent(FORCE_ESM_HOOK)}`);
  })();
  return registration.catch((error: unknown) => {
    registration = undefined; // tsx installed later can still be found by a long-lived process
    throw error;
  });
}
