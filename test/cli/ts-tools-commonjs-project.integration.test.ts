/**
 * A TypeScript tool module in a project whose package.json has no
 * `"type": "module"` (what `npm init` writes): tsx would compile its `.ts`
 * files to CommonJS, and their imports of taskvisor would be a `require()` of
 * the ES module the CLI is still evaluating, refused by Node ("Cannot
 * require() ES Module … in a cycle"). Tool modules are loaded as ES modules
 * whatever the host project's type, with the `.ts` files they import; the
 * tool is then called through the real CLI.
 */
import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { after, before, describe, it } from 'node:test';
import { CLI, REPO_ROOT, runNode, tempDir } from '../support/processes.js';

let project: Awaited<ReturnType<typeof tempDir>>;
before(async () => {
  project = await tempDir('taskvisor-cjs-project-');
  // npm init's package.json: no "type", so .ts files default to CommonJS.
  await writeFile(join(project.path, 'package.json'), JSON.stringify({ name: 'cjs-project', version: '1.0.0', main: 'index.js' }));
  // The CLI here runs the sources: the module imports the same taskvisor instance the CLI evaluates.
  const taskvisorTools = pathToFileURL(join(REPO_ROOT, 'src', 'tools', 'index.ts')).href;
  await writeFile(join(project.path, 'greeting.ts'), "export const greeting: string = 'hello from a CommonJS project';\n");
  await writeFile(
    join(project.path, 'tools.ts'),
    `import { defineTool } from '${taskvisorTools}';\n` +
      "import { greeting } from './greeting';\n" +
      "export const tools = [defineTool('greet', { description: 'Greets.' }, async () => greeting)];\n",
  );
  await writeFile(join(project.path, 'taskvisor.yaml'), 'store:\n  kind: memory\ntools:\n  - ./tools.ts\n');
});
after(async () => {
  await project?.remove();
});

describe('a .ts tool module in a CommonJS project (package.json without "type")', () => {
  it('loads as an ES module, with the .ts files it imports, and its tool answers', async () => {
    const server = `${process.execPath} ${CLI} serve --config taskvisor.yaml --stdio`;
    const { code, stdout, stderr } = await runNode([CLI, 'call', '--stdio', server, 'greet'], { cwd: project.path });
    assert.doesNotMatch(stderr, /cannot load|Cannot require/, stderr);
    assert.equal(code, 0, stderr);
    assert.match(stdout, /hello from a CommonJS project/);
  });
});
