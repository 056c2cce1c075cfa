/**
 * The layer rules of taskvisor (docs/architecture.md), checked by
 * `npm run lint:deps` (part of `npm test`). Layers import one way only:
 *
 *   json -> machines -> core -> tasks -> domain
 *     -> stores -> inspection -> protocol -> client -> config -> auth
 *     -> transports -> upstreams -> workflows -> operations
 *     -> server -> cli -> entry
 *
 * A module may import its own layer and the layers below it, never above,
 * and no import chain may come back to where it started (type imports count).
 * The adapters (stores … operations) are ordered too, not one bucket: an
 * adapter that imported a sibling at will could not be read, tested or
 * replaced without it, and a cycle between two of them would go unseen.
 *
 * ADDING A FOLDER: every folder under src/ must be listed in exactly one layer
 * of LAYERS below (a new top-level src folder fails the `unlayered` rule until
 * it is). Choose the lowest layer whose imports it needs.
 */

/** Bottom to top. Each entry: a layer name and its folders (top-level `machines/`, or folders and files under `src/`). */
const LAYERS = [
  // The JSON shape and JSON equality: vocabulary of every layer, the machines' context included (I-8).
  { name: 'json', paths: ['src/core/json.ts', 'src/core/sharedJson.ts'] },
  // The XState statecharts: pure and restore-safe (I-8).
  { name: 'machines', paths: ['machines'] },
  // Ids, errors, statuses, capability checks, shared constants, limits.
  { name: 'core', paths: ['src/core', 'src/limits'] },
  // The task record model: the stored record, its projections of the machine state, its checks.
  { name: 'tasks', paths: ['src/tasks'] },
  // Task actors and their supervisor, executions, the change bus, the cluster node, the tool, resource and
  // prompt models and the store port: no SDK types.
  {
    name: 'domain',
    paths: [
      'src/runtime',
      'src/tools',
      'src/resources',
      'src/prompts',
      'src/store/TaskStore.ts',
      // The workflow engine is a worker of the runtime: its model, templates, run and history know no config or upstream.
      'src/workflows/model',
      'src/workflows/templates',
      'src/workflows/engine',
      'src/workflows/history',
    ],
  },
  // The adapters, bottom to top. Task stores implement the port: they know the record, nothing else.
  { name: 'stores', paths: ['src/store'] },
  // Machine export, traces and the Stately inspector: they read the machines only.
  { name: 'inspection', paths: ['src/inspection'] },
  // The MCP SDK's side of the runtime: wire shapes, request decoding, listen streams and frames.
  { name: 'protocol', paths: ['src/protocol'] },
  // The Tasks client: it shares protocol's view of raw messages and nothing of the server.
  { name: 'client', paths: ['src/client'] },
  // Config files: their schema and loading, in terms of the tool, resource and prompt models.
  { name: 'config', paths: ['src/config'] },
  // Bearer tokens (token file, JWT): the front doors of the transports ask it who a request comes from (I-7).
  { name: 'auth', paths: ['src/auth'] },
  // Sockets: Streamable HTTP, stdio, WebSocket, admission, listen streams on the wire.
  { name: 'transports', paths: ['src/transports'] },
  // Other MCP servers taskvisor aggregates, and the runtime state file that remembers them.
  { name: 'upstreams', paths: ['src/upstreams'] },
  // Workflow files: loading them from a folder or the config, and checking the tools they call exist upstream.
  { name: 'workflows', paths: ['src/workflows/loading', 'src/workflows/index.ts'] },
  // Health, metrics, the operator API and dashboard: they look at everything below.
  { name: 'operations', paths: ['src/operations'] },
  // The composition root: builds a running service from options.
  { name: 'server', paths: ['src/server'] },
  { name: 'cli', paths: ['src/cli'] },
  // The public entry points (package.json "exports").
  { name: 'entry', paths: ['src/index.ts'] },
];

const escape = (path) => path.replace(/[.]/g, '\\.');
/** A regex matching the modules of the given paths (a folder means everything under it). */
const matching = (paths) => `^(${paths.map((path) => (path.endsWith('.ts') ? escape(path) + '$' : escape(path) + '/')).join('|')})`;

/**
 * Paths listed in a lower layer than their folder (the store port sits in
 * `domain` although its folder is an adapter) are excluded from the higher
 * layer's pattern so each module belongs to one layer only.
 */
const allPaths = LAYERS.flatMap((layer) => layer.paths);
const layerPattern = (layer) => ({
  path: matching(layer.paths),
  pathNot: allPaths.filter((path) => path.endsWith('.ts') && !layer.paths.includes(path)).map((path) => `^${escape(path)}$`),
});

/** Single files listed in `layers` (a file listed apart from its folder belongs to its own entry's layer). */
const filesOf = (layers) => layers.flatMap((layer) => layer.paths).filter((path) => path.endsWith('.ts'));

const upwardRules = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `no-upward-from-${layer.name}`,
  comment: `${layer.name} may import only ${LAYERS.slice(0, index + 1)
    .map((below) => below.name)
    .join(', ')}: layers import one way, so each can be read, tested and replaced without what sits above it`,
  severity: 'error',
  from: layerPattern(layer),
  to: {
    path: matching(LAYERS.slice(index + 1).flatMap((above) => above.paths)),
    // A file of this layer or one below, inside a folder of a layer above (core/json.ts in core/), is not above.
    pathNot: filesOf(LAYERS.slice(0, index + 1)).map((path) => `^${escape(path)}$`),
  },
}));

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'An import chain that comes back to its start ties modules into one unit no layer can own.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'unlayered',
      comment: 'Every source folder belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs.',
      severity: 'error',
      from: {},
      to: { path: '^(src|machines)/', pathNot: matching(allPaths) },
    },
    {
      name: 'unlayered-importer',
      comment: 'Every source folder belongs to a layer: add a new folder to LAYERS in .dependency-cruiser.cjs.',
      severity: 'error',
      from: { path: '^(src|machines)/', pathNot: matching(allPaths) },
      to: {},
    },
    {
      name: 'no-sdk-in-domain',
      comment: 'json, machines, core and domain carry no MCP SDK types: the adapters translate, so the runtime outlives SDK changes.',
      severity: 'error',
      from: { path: matching(LAYERS.slice(0, LAYERS.findIndex((layer) => layer.name === 'domain') + 1).flatMap((layer) => layer.paths)) },
      to: { path: '@modelcontextprotocol/' },
    },
    ...upwardRules,
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Our modules, plus the SDK's package so no-sdk-in-domain can see imports of it.
    includeOnly: ['^(src|machines)/', '^node_modules/@modelcontextprotocol/'],
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default', 'types'] },
  },
};

// The layer list for scripts/update-architecture-docs.ts (the picture in docs/architecture.md).
// Not enumerable: dependency-cruiser's config schema allows no extra keys.
Object.defineProperty(module.exports, 'layers', { value: LAYERS, enumerable: false });
