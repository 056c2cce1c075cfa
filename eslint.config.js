// ESLint, type-aware (issue 19 item 5): the rules that catch what the compiler
// cannot — promises nobody awaits or handles, async functions that never
// await, methods passed around without their `this`, assertions that change
// nothing. Formatting is prettier's job, layering dependency-cruiser's.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  {
    // bench/.compiled: the library the bench compiles for itself, left behind when a bench run is killed.
    ignores: ['dist/**', 'node_modules/**', 'coverage/**', '**/*.d.ts', 'bench/.compiled/**'],
  },
  {
    files: ['**/*.ts'],
    languageOptions: {
      parser: tseslint.parser,
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        // node:test's describe/it/hooks return promises the runner itself awaits.
        {
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/require-await': 'error',
      '@typescript-eslint/unbound-method': 'error',
      '@typescript-eslint/no-unnecessary-type-assertion': 'error',
    },
  },
  {
    // Tests and benchmarks write stand-ins for real asynchronous code: tool handlers, SDK request and
    // notification handlers, fake stores, scripted actors. Their `async` without an `await` is the
    // point — it keeps them on the promise path the API documents (a throw arrives as a rejection,
    // as it does in production) — so require-await is off here and only here. The rules that find
    // real mistakes (floating promises, unbound methods, needless assertions) stay on.
    //
    // no-misused-promises' checksVoidReturn.arguments (an async callback passed where a void one is
    // expected) is off here too, for cost: it resolves the signature of every call's arguments, and the
    // tests are mostly calls (assert.*, it(), fixtures), so it was 74% of the whole lint's rule time
    // (TIMING=1) and `npm test` runs lint cold in CI. Its value here is low: a test's callback that
    // rejects unseen makes node:test fail the file on the unhandled rejection anyway. Its other checks
    // (conditionals, spreads, returns, properties) are cheap and stay; src keeps the whole rule.
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
    },
  },
);
