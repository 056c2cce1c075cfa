/**
 * The layer picture of docs/architecture.md, drawn from the same layer list
 * the dependency check enforces (`.dependency-cruiser.cjs`), so the page
 * cannot describe layers the code does not have. The block
 * sits between `<!-- generated:layers:start -->` and `<!-- generated:layers:end -->`.
 */

/** One layer as `.dependency-cruiser.cjs` lists it, bottom to top. */
export interface Layer {
  name: string;
  paths: string[];
}

const START = '<!-- generated:layers:start -->';
const END = '<!-- generated:layers:end -->';

/** A Mermaid flowchart: one box per layer with its folders, each layer pointing at the one it may import. */
export function layersDiagram(layers: readonly Layer[]): string {
  const lines = ['```mermaid', 'flowchart TB'];
  const top = [...layers].reverse();
  for (const layer of top) {
    const folders = layer.paths.map((path) => path.replace(/^src\//, '')).join('<br/>');
    lines.push(`  ${layer.name}["<b>${layer.name}</b><br/>${folders}"]`);
  }
  for (let index = 0; index < top.length - 1; index++) lines.push(`  ${top[index]!.name} --> ${top[index + 1]!.name}`);
  lines.push('```');
  return lines.join('\n');
}

/** The block as it is in `text`, or `undefined` when the markers are missing. */
export function extractLayersBlock(text: string): string | undefined {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start === -1 || end === -1 || end < start) return undefined;
  return text.slice(start + START.length, end).trim();
}

/** `text` with the block replaced by the diagram of `layers`. */
export function updateArchitectureDocs(text: string, layers: readonly Layer[]): string {
  const start = text.indexOf(START);
  const end = text.indexOf(END);
  if (start === -1 || end === -1 || end < start) throw new Error(`docs/architecture.md lacks the ${START} … ${END} markers`);
  return `${text.slice(0, start + START.length)}\n${layersDiagram(layers)}\n${text.slice(end)}`;
}
