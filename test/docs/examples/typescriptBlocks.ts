/**
 * The docs' TypeScript blocks as files of the consumer project, and one
 * compiler run over all of them against the installed package's
 * declarations. A `fragment` block uses names its page defines elsewhere
 * (`runtime`, `entry`, `req`): they are declared after its code, typed as the
 * package and the frameworks type them, so the block's own lines keep their
 * numbers and its calls are still checked.
 */
import { writeFile } from 'node:fs/promises';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { REPO_ROOT, runNode } from '../../support/processes.js';
import type { DocBlock } from '../../support/docBlocks.js';

/** Each name a fragment may use without defining it, and its declaration. */
const FRAGMENT_NAMES: Record<string, string> = {
  runtime: "declare const runtime: import('taskvisor').TaskvisorRuntime;",
  entry: "declare const entry: import('taskvisor/transports').HttpEntry;",
  z: "import { z } from 'zod';",
  defineTool: "import { defineTool } from 'taskvisor';",
  taskvisorExpress: "import { taskvisorExpress } from 'taskvisor/transports';",
  ExpressLikeRequest: "import type { ExpressLikeRequest } from 'taskvisor/transports';",
  req: "declare const req: import('node:http').IncomingMessage & { body?: unknown; user?: { sub: string } };",
  res: "declare const res: import('node:http').ServerResponse;",
  request: 'declare const request: Request;',
  parsedBody: 'declare const parsedBody: unknown;',
  principal: "declare const principal: import('taskvisor').Principal | null;",
  app: "declare const app: import('express').Express;",
  passport: "declare const passport: { authenticate(strategy: string, options: object): import('express').RequestHandler };",
  Bun: 'declare const Bun: { serve(options: { port: number; fetch(request: Request): Response | Promise<Response> }): unknown };',
  Deno: 'declare const Deno: { serve(options: { port: number }, handler: (request: Request) => Response | Promise<Response>): unknown };',
  name: 'declare const name: string;',
  options: "declare const options: import('taskvisor').ToolOptions;",
  handler: "declare const handler: import('taskvisor').ToolHandler;",
  result: "declare const result: import('taskvisor').ToolResult;",
  jwksUrl: 'declare const jwksUrl: string;',
  issuer: 'declare const issuer: string;',
};

/** The names a module's top level declares (imports, variables, functions, classes). */
function declaredNames(code: string): Set<string> {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.ES2022, true);
  const names = new Set<string>();
  const bind = (name: ts.BindingName) => {
    if (ts.isIdentifier(name)) names.add(name.text);
    else for (const element of name.elements) if (!ts.isOmittedExpression(element)) bind(element.name);
  };
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const clause = statement.importClause;
      if (clause?.name) names.add(clause.name.text);
      const bindings = clause?.namedBindings;
      if (bindings && ts.isNamespaceImport(bindings)) names.add(bindings.name.text);
      if (bindings && ts.isNamedImports(bindings)) for (const element of bindings.elements) names.add(element.name.text);
    } else if (ts.isVariableStatement(statement)) {
      for (const declaration of statement.declarationList.declarations) bind(declaration.name);
    } else if ((ts.isFunctionDeclaration(statement) || ts.isClassDeclaration(statement)) && statement.name) {
      names.add(statement.name.text);
    }
  }
  return names;
}

/** The file a block is checked (and run) as: its code, then what a fragment leaves undefined, then `export {}`. */
export function typescriptSource(block: DocBlock): string {
  const tail: string[] = [];
  if (block.directive?.kind === 'fragment') {
    const declared = declaredNames(block.code);
    for (const [name, declaration] of Object.entries(FRAGMENT_NAMES)) {
      if (!declared.has(name) && new RegExp(`\\b${name}\\b`).test(block.code)) tail.push(declaration);
    }
  }
  // A module, so blocks declaring the same names do not collide.
  return `${block.code}\n${tail.join('\n')}\nexport {};\n`;
}

/**
 * Type-checks `files` (absolute paths in `project`, each a block's) in one compiler run; returns
 * each error as `page:line: message`, the line the page's.
 */
export async function typecheckBlocks(project: string, files: Map<string, DocBlock>): Promise<string[]> {
  await writeFile(
    join(project, 'tsconfig.json'),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        noEmit: true,
        module: 'nodenext',
        moduleResolution: 'nodenext',
        target: 'ES2022',
        lib: ['ES2022'],
        skipLibCheck: true,
        types: ['node'],
      },
      files: [...files.keys()].map((file) => relative(project, file)),
    }),
  );
  const tsc = join(REPO_ROOT, 'node_modules', 'typescript-native', 'bin', 'tsc');
  const checked = await runNode([tsc, '-p', 'tsconfig.json', '--pretty', 'false'], { cwd: project, timeoutMs: 180_000 });
  if (checked.code === 0) return [];
  const errors: string[] = [];
  for (const line of `${checked.stdout}${checked.stderr}`.split('\n')) {
    const located = /^(.+?)\((\d+),(\d+)\): (error .*)$/.exec(line);
    if (!located) {
      if (line.trim() !== '' && errors.length > 0) errors[errors.length - 1] += ` ${line.trim()}`;
      else if (line.trim() !== '') errors.push(line);
      continue;
    }
    const block = files.get(join(project, located[1]!));
    errors.push(
      block
        ? `${block.page}:${block.codeLine + Number(located[2]) - 1}: ${located[4]}`
        : `${located[1]}(${located[2]},${located[3]}): ${located[4]}`,
    );
  }
  return errors;
}
