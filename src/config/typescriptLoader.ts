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

/** What a resolve hook answers (the part this hook reads and changes). */
interface ResolveResult {
  url: string;
  format?: string | null | undefined;
}

/**
 * The resolve hook's decision, given the answer of the hooks after it (tsx's,
 * then Node's). A marked URL, or a `.ts`/`.tsx` file outside node_modules
 * imported by a marked module, that tsx or Node would load as CommonJS (format
 * `commonjs`, or not yet decided: Node 22.7 and later leave a `.ts` file in a
 * package without `"type"` open until it loads, then load it as CommonJS) is
 * marked and given format `module`; tsx then compiles it as ESM. Anything
 * already loaded as ESM keeps its plain URL, so taskvisor's own modules (and a
 * tool module in a `"type": "module"` project) stay single instances. `.cts`
 * stays CommonJS: that is what its name asks for.
 */
function forcedEsm(result: ResolveResult, parentURL: string | undefined, mark: string): ResolveResult {
  if (!result.url.startsWith('file:')) return result;
  const marked = (href: string): boolean => {
    try {
      return new URL(href).searchParams.has(mark);
    } catch {
      return false;
    }
  };
  const url = new URL(result.url);
  if (url.pathname.includes('/node_modules/') || !/\.(?:ts|tsx)$/i.test(url.pathname)) return result;
  if (!url.searchParams.has(mark) && !(parentURL !== undefined && marked(parentURL))) return result;
  if (result.format === 'module' || result.format === 'module-typescript') {
    url.searchParams.delete(mark);
    return { ...result, url: url.href };
  }
  url.searchParams.set(mark, '');
  return { ...result, url: url.href, format: 'module' };
}

/**
 * {@link forcedEsm} as a `module.register` hook module, for Node without `module.registerHooks`: the same
 * steps written out as source (a function's own text is not self-contained once tsx or esbuild compiled it).
 */
const FORCE_ESM_HOOK = `
const MARK = ${JSON.stringify(TOOL_MODULE_MARK)};
const marked = (href) => { try { return new URL(href).searchParams.has(MARK); } catch { return false; } };
export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  if (!result.url.startsWith('file:')) return result;
  const url = new URL(result.url);
  if (url.pathname.includes('/node_modules/') || !/\\.(?:ts|tsx)$/i.test(url.pathname)) return result;
  if (!url.searchParams.has(MARK) && !(context.parentURL && marked(context.parentURL))) return result;
  if (result.format === 'module' || result.format === 'module-typescript') {
    url.searchParams.delete(MARK);
    return { ...result, url: url.href };
  }
  url.searchParams.set(MARK, '');
  return { ...result, url: url.href, format: 'module' };
}`;

type SyncResolve = (specifier: string, context: { parentURL?: string }) => ResolveResult;
type SyncLoad = (url: string, context: { format?: string | null }) => { format?: string | null };
interface SyncHooks {
  resolve: (specifier: string, context: { parentURL?: string }, next: SyncResolve) => ResolveResult;
  load: (url: string, context: { format?: string | null }, next: SyncLoad) => { format?: string | null };
}

/**
 * Registers {@link forcedEsm} after tsx, so it runs before tsx's hook and sees its answer: in the same chain
 * as tsx's. tsx uses Node's in-thread hooks (`module.registerHooks`, Node 22.15 and later) where it can, and
 * those run before any `module.register` hook, which would then only see what tsx already decided; where
 * they exist, this hook is one of them too, with a load hook that keeps the format it chose (Node's own
 * load would go back to the package's type).
 */
function registerForceEsmHook(): void {
  const registerHooks = (module as unknown as { registerHooks?: (hooks: SyncHooks) => unknown }).registerHooks;
  if (typeof registerHooks !== 'function') {
    module.register(`data:text/javascript,${encodeURIComponent(FORCE_ESM_HOOK)}`);
    return;
  }
  const isMarked = (href: string): boolean => {
    try {
      return new URL(href).searchParams.has(TOOL_MODULE_MARK);
    } catch {
      return false;
    }
  };
  registerHooks({
    resolve: (specifier, context, next) => forcedEsm(next(specifier, context), context.parentURL, TOOL_MODULE_MARK),
    load: (url, context, next) =>
      isMarked(url) ? { ...next(url, { ...context, format: 'module' }), format: 'module' } : next(url, context),
  });
}

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
    registerForceEsmHook();
  })();
  return registration.catch((error: unknown) => {
    registration = undefined; // tsx installed later can still be found by a long-lived process
    throw error;
  });
}
