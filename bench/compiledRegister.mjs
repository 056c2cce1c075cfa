// `--import`ed into every bench child process (bench/compiledLibrary.ts): when TASKVISOR_BENCH_COMPILED
// names a compiled copy of the library, registers bench/compiledHooks.mjs, which loads src/ and machines/
// from that copy. Without it, a no-op (the sources run through tsx).
import { register } from 'node:module';
import { pathToFileURL } from 'node:url';

const compiled = process.env.TASKVISOR_BENCH_COMPILED;
if (compiled) {
  register('./compiledHooks.mjs', import.meta.url, {
    data: { root: new URL('..', import.meta.url).href, compiled: pathToFileURL(`${compiled}/`).href },
  });
}
