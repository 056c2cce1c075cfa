// Module hooks (registered by bench/compiledRegister.mjs): a module of src/ or machines/ that a bench
// file imports (as `../src/….js`, which tsx resolves to the `.ts` source) is loaded from the compiled
// copy of the library instead. Imports inside the copy are plain relative `.js` imports and stay in it.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let root;
let target;

/** Receives the repository root and the compiled copy's root (file URLs ending in `/`). */
export function initialize(data) {
  root = data.root;
  target = data.compiled;
}

/** `<root>src/x.ts` or `<root>machines/x.ts` → `<compiled>src/x.js`. */
export async function resolve(specifier, context, nextResolve) {
  const resolved = await nextResolve(specifier, context);
  if (!resolved.url.startsWith(root) || !resolved.url.endsWith('.ts')) return resolved;
  const relative = resolved.url.slice(root.length);
  if (!relative.startsWith('src/') && !relative.startsWith('machines/')) return resolved;
  const url = `${target}${relative.slice(0, -'.ts'.length)}.js`;
  // A missing compiled file is a bench bug: say so rather than quietly measure the source.
  if (!existsSync(fileURLToPath(url))) throw new Error(`bench: ${relative} has no compiled copy at ${url}`);
  return { url, format: 'module', shortCircuit: true };
}
