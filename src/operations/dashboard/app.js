/**
 * The taskvisor dashboard: read-only, no framework, no CDN.
 * Reads only through the operator API (/ops/api/): a list of recent tasks,
 * a live feed of task changes (server-sent events over fetch, so a bearer
 * token can be sent), one task's timeline and its workflow graph.
 * Every value from the server is written with textContent, never as HTML.
 */
const API = '/ops/api/';
const STATUSES = ['working', 'input_required', 'completed', 'failed', 'cancelled'];
const SHOWN_NUMBERS = [
  ['taskvisor_tasks_created_total', 'created'],
  ['taskvisor_tasks_finished_total', 'finished'],
  ['taskvisor_task_polls_total', 'polls'],
  ['taskvisor_listen_streams', 'listen streams'],
  ['taskvisor_listen_frames_total', 'listen frames'],
  ['taskvisor_store_write_seconds_count', 'store writes'],
  ['taskvisor_store_write_errors_total', 'store write errors'],
  ['taskvisor_backpressure_closes_total', 'backpressure closes'],
  ['taskvisor_upstream_call_seconds_count', 'upstream calls'],
  ['taskvisor_workflow_steps_total', 'workflow steps'],
  ['taskvisor_cluster_adopted_tasks_total', 'tasks adopted'],
];

const $ = (selector) => document.querySelector(selector);
const state = { tasks: new Map(), selected: undefined, token: sessionStorage.getItem('taskvisor.operatorToken') ?? undefined };

/** An element with text content (never HTML) and attributes. */
function el(tag, attributes = {}, text) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, value);
  if (text !== undefined) element.textContent = String(text);
  return element;
}

class NeedsToken extends Error {}

async function api(path, init = {}) {
  const headers = state.token ? { authorization: `Bearer ${state.token}` } : {};
  const response = await fetch(API + path, { ...init, headers, cache: 'no-store' });
  if (response.status === 401 || response.status === 403) {
    showLogin(response.status === 403 && state.token ? 'This token lacks the operator scope.' : undefined);
    throw new NeedsToken();
  }
  return response;
}

function showLogin(reason) {
  $('#login').hidden = false;
  if (reason) $('#login-reason').textContent = reason;
}

function filters() {
  return { status: $('#filter-status').value, tool: $('#filter-tool').value.trim(), owner: $('#filter-owner').value.trim() };
}

function matches(task) {
  const { status, tool, owner } = filters();
  return (!status || task.status === status) && (!tool || task.tool === tool) && (!owner || task.owner === owner);
}

async function loadTasks() {
  const { status, tool, owner } = filters();
  const query = new URLSearchParams({ limit: '200' });
  if (status) query.set('status', status);
  if (tool) query.set('tool', tool);
  if (owner) query.set('owner', owner);
  const response = await api(`tasks?${query}`);
  const { tasks } = await response.json();
  state.tasks = new Map(tasks.map((task) => [task.taskId, task]));
  renderTasks();
}

const time = (ms) => new Date(ms).toLocaleTimeString();

function renderTasks() {
  const body = $('#tasks tbody');
  const rows = [...state.tasks.values()].filter(matches).sort((a, b) => b.createdAt - a.createdAt || (a.taskId < b.taskId ? 1 : -1));
  body.replaceChildren(
    ...rows.map((task) => {
      const row = el('tr', {
        'data-task-id': task.taskId,
        'data-status': task.status,
        'aria-selected': String(task.taskId === state.selected),
      });
      row.append(
        el('td', { class: `status status-${task.status}` }, task.status),
        el('td', {}, task.workflow ? `${task.tool} (workflow)` : task.tool),
        el('td', {}, task.owner),
        el('td', { title: task.taskId }, task.taskId.slice(0, 12)),
        el('td', {}, time(task.lastUpdatedAt)),
        el('td', {}, task.errorMessage ?? task.statusMessage ?? ''),
      );
      row.addEventListener('click', () => void select(task.taskId));
      return row;
    }),
  );
  if (rows.length === 0) {
    const row = el('tr');
    row.append(el('td', { colspan: '6', class: 'muted' }, 'no tasks'));
    body.append(row);
  }
}

function renderOverview(overview) {
  const phase = $('#phase');
  phase.dataset.ready = String(overview.ready);
  phase.textContent = overview.ready ? 'ready' : `not ready: ${overview.reasons.join('; ') || overview.phase}`;
  const counts = { ...overview.live, ...overview.finished };
  $('#counts').replaceChildren(
    ...STATUSES.flatMap((status) => [
      el('span', { class: `status status-${status}` }, status),
      el('span', { id: `count-${status}` }, counts[status] ?? 0),
    ]),
  );
  $('#numbers').replaceChildren(
    ...SHOWN_NUMBERS.filter(([name]) => overview.metrics[name] !== undefined).flatMap(([name, label]) => [
      el('dt', {}, label),
      el('dd', { 'data-metric': name }, Math.round(overview.metrics[name] * 100) / 100),
    ]),
  );
  const upstreams = overview.upstreams.map((upstream) =>
    el(
      'li',
      { 'data-upstream': upstream.name, 'data-state': upstream.state },
      `${upstream.name}: ${upstream.state} (${upstream.toolCount} tools)${upstream.lastError ? ` — ${upstream.lastError}` : ''}`,
    ),
  );
  $('#upstreams').replaceChildren(...(upstreams.length ? upstreams : [el('li', { class: 'muted' }, 'none configured')]));
}

async function select(taskId) {
  state.selected = taskId;
  renderTasks();
  const response = await api(`tasks/${encodeURIComponent(taskId)}`);
  if (!response.ok || state.selected !== taskId) return;
  renderDetail(await response.json());
}

function renderDetail({ task, timeline, workflow }) {
  $('#detail').hidden = false;
  $('#detail').dataset.taskId = task.taskId;
  $('#detail').dataset.status = task.status;
  $('#detail-id').textContent = task.taskId;
  $('#detail-summary').textContent =
    `${task.tool} for ${task.owner}: ${task.status}, created ${new Date(task.createdAt).toLocaleString()}` +
    (task.expiresAt ? `, expires ${new Date(task.expiresAt).toLocaleString()}` : '');
  $('#timeline').replaceChildren(
    ...timeline.map((entry) => {
      const detail =
        entry.kind === 'input'
          ? `asks for input: ${entry.inputRequestKeys.join(', ')}`
          : entry.kind === 'error'
            ? `error: ${entry.errorMessage}`
            : entry.kind === 'result'
              ? 'result ready'
              : entry.kind === 'created'
                ? 'created'
                : (entry.statusMessage ?? 'status changed');
      return el('li', { 'data-kind': entry.kind, 'data-status': entry.status }, `${time(entry.at)} ${entry.status} — ${detail}`);
    }),
  );
  $('#workflow').hidden = !workflow;
  if (workflow) renderGraph(workflow);
}

const SVG = 'http://www.w3.org/2000/svg';
const svg = (tag, attributes = {}, text) => {
  const element = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value));
  if (text !== undefined) element.textContent = String(text);
  return element;
};

/** Layers by longest path from a step without dependencies; onFailure steps in a last row. */
function renderGraph(graph) {
  $('#workflow-name').textContent = graph.workflow;
  const depth = new Map();
  const needs = new Map(graph.nodes.map((node) => [node.id, []]));
  for (const [from, to] of graph.edges) needs.get(to)?.push(from);
  const depthOf = (id, seen = new Set()) => {
    if (depth.has(id)) return depth.get(id);
    if (seen.has(id)) return 0;
    seen.add(id);
    const value = Math.max(-1, ...(needs.get(id) ?? []).map((need) => depthOf(need, seen))) + 1;
    depth.set(id, value);
    return value;
  };
  const main = graph.nodes.filter((node) => node.phase === 'main');
  const failure = graph.nodes.filter((node) => node.phase !== 'main');
  for (const node of main) depthOf(node.id);
  const columns = new Map();
  const place = new Map();
  const width = 150;
  const height = 44;
  for (const node of main) {
    const column = depth.get(node.id);
    const row = columns.get(column) ?? 0;
    columns.set(column, row + 1);
    place.set(node.id, { x: 10 + column * (width + 40), y: 10 + row * (height + 16) });
  }
  const mainRows = Math.max(1, ...columns.values());
  failure.forEach((node, index) => place.set(node.id, { x: 10 + index * (width + 40), y: 30 + mainRows * (height + 16) }));
  const root = $('#workflow-graph');
  const edges = graph.edges
    .filter(([from, to]) => place.has(from) && place.has(to))
    .map(([from, to]) => {
      const a = place.get(from);
      const b = place.get(to);
      return svg('line', { x1: a.x + width, y1: a.y + height / 2, x2: b.x, y2: b.y + height / 2 });
    });
  const nodes = graph.nodes
    .filter((node) => place.has(node.id))
    .map((node) => {
      const { x, y } = place.get(node.id);
      const group = svg('g', { class: `step state-${node.state}`, 'data-step': node.id, 'data-state': node.state });
      group.append(
        svg('title', {}, `${node.id}: ${node.state}${node.error ? ` — ${node.error}` : ''}`),
        svg('rect', { x, y, width, height }),
        svg('text', { x: x + 8, y: y + 15 }, node.id),
        svg(
          'text',
          { x: x + 8, y: y + 32, class: 'muted' },
          `${node.state}${node.durationMs !== undefined ? ` ${node.durationMs} ms` : ''}`,
        ),
      );
      return group;
    });
  const bottom = Math.max(...[...place.values()].map((p) => p.y + height), height) + 10;
  const right = Math.max(...[...place.values()].map((p) => p.x + width), width) + 10;
  root.setAttribute('viewBox', `0 0 ${right} ${bottom}`);
  root.setAttribute('height', String(bottom));
  root.replaceChildren(...edges, ...nodes);
}

/** The live feed: server-sent events read from a fetch stream (EventSource cannot send a token). */
async function follow() {
  for (let delay = 500; ; delay = Math.min(delay * 2, 10_000)) {
    try {
      const response = await api('events');
      if (!response.ok || !response.body) throw new Error(`events: HTTP ${response.status}`);
      $('#feed').textContent = 'live feed: connected';
      delay = 500;
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        let end;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = block
            .split('\n')
            .filter((line) => line.startsWith('data: '))
            .map((line) => line.slice(6))
            .join('\n');
          if (event && data) onEvent(event, JSON.parse(data));
        }
      }
    } catch (error) {
      if (error instanceof NeedsToken) return;
    }
    $('#feed').textContent = 'live feed: reconnecting';
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}

/** Counts and numbers follow task changes at once (debounced), not only the periodic overview. */
let overviewTimer;
function refreshOverviewSoon() {
  if (overviewTimer !== undefined) return;
  overviewTimer = setTimeout(() => {
    overviewTimer = undefined;
    api('overview')
      .then((response) => response.json())
      .then(renderOverview, () => undefined);
  }, 250);
}

function onEvent(type, data) {
  if (type === 'overview') return renderOverview(data);
  if (type !== 'task') return;
  refreshOverviewSoon();
  const known = state.tasks.get(data.taskId);
  const task = {
    ...(known ?? {}),
    taskId: data.taskId,
    tool: data.tool,
    owner: data.owner,
    status: data.status,
    createdAt: data.createdAt,
    lastUpdatedAt: data.lastUpdatedAt,
    statusMessage: data.statusMessage,
  };
  const error = data.entries.find((entry) => entry.kind === 'error');
  if (error) task.errorMessage = error.errorMessage;
  state.tasks.set(data.taskId, task);
  renderTasks();
  if (state.selected === data.taskId) void select(data.taskId).catch(() => undefined);
}

async function start() {
  $('#login').hidden = true;
  try {
    renderOverview(await (await api('overview')).json());
    await loadTasks();
    void follow();
  } catch (error) {
    if (!(error instanceof NeedsToken)) $('#feed').textContent = `live feed: ${error.message}`;
  }
}

$('#login-form').addEventListener('submit', (event) => {
  event.preventDefault();
  state.token = $('#token').value.trim() || undefined;
  if (state.token) sessionStorage.setItem('taskvisor.operatorToken', state.token);
  void start();
});
for (const input of ['#filter-status', '#filter-tool', '#filter-owner']) {
  $(input).addEventListener('change', () => void loadTasks().catch(() => undefined));
}
void start();
