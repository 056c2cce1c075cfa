/** docs/architecture.md draws the layers the dependency check enforces. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { describe, it } from 'node:test';
import { extractLayersBlock, layersDiagram, updateArchitectureDocs, type Layer } from '../../src/inspection/architectureDocs.js';

const layers = (createRequire(import.meta.url)('../../.dependency-cruiser.cjs') as { layers: Layer[] }).layers;

describe('docs/architecture.md', () => {
  it('has the layer picture of .dependency-cruiser.cjs (run npm run docs:architecture when this fails)', async () => {
    const text = await readFile(new URL('../../docs/architecture.md', import.meta.url), 'utf8');
    assert.equal(extractLayersBlock(text), layersDiagram(layers));
  });

  it('every layer of the check is in the picture, bottom layer last, each pointing at the one below', () => {
    const diagram = layersDiagram(layers);
    assert.ok(layers.length >= 5, 'the layer list is read from the dependency-cruiser config');
    for (const layer of layers) for (const path of layer.paths) assert.ok(diagram.includes(path.replace(/^src\//, '')), path);
    for (let index = 1; index < layers.length; index++)
      assert.ok(diagram.includes(`${layers[index]!.name} --> ${layers[index - 1]!.name}`));
  });

  it('refuses a page without the markers instead of writing the picture somewhere else', () => {
    assert.throws(() => updateArchitectureDocs('# no markers', layers), /markers/);
  });
});
