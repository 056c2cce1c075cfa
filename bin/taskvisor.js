#!/usr/bin/env node
// The taskvisor command. From the package it runs the bundled CLI (dist/cli/), with plain node.
// In a source checkout (src/ next to this folder) it runs the TypeScript sources through tsx,
// a dev dependency, so the command always runs the code being edited; without tsx (a clone
// installed with --omit=dev) it falls back to dist/ (`npm run build`).
import { existsSync } from 'node:fs';
import module from 'node:module';

const source = new URL('../src/cli/run.ts', import.meta.url);
let register;
if (existsSync(source)) {
  try {
    ({ register } = await import('tsx/esm/api'));
  } catch {
    register = undefined;
  }
}
if (register) {
  register();
  await import(source.href);
} else {
  // Node >= 22.1 caches compiled code between runs (issue 15.5: hosts spawn a stdio server per conversation).
  module.enableCompileCache?.();
  await import('../dist/cli/taskvisor.js');
}
