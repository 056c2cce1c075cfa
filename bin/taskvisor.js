#!/usr/bin/env node
// Runs the TypeScript CLI through tsx, so config files may point at .ts tool modules.
import { register } from 'tsx/esm/api';

register();
await import('../src/cli/run.ts');
