// The overview: every resource with its live figures from the metric
// stream, its rule count and a sparkline of the last five minutes, sorted
// by blocks; and, on a new install, what to do first.

import { api } from '../api.js';
import { h, option, replace } from '../dom.js';
import { sparkline } from '../charts.js';
import { ms, number } from '../format.js';
import { feed } from '../live.js';
import { badge, errorBox, field, page, table } from '../ui.js';

const listSize = 200;
const refreshMs = 15000;

function resourceLink(name) {
  return h('a', { href: `#/resources/${encodeURIComponent(name)}`, dataset: { resource: name } }, name);
}

/** gettingStarted says what to do first on an install without rules. */
function gettingStarted(canWrite) {
  return h('section', { class: 'card getting-started', 'aria-labelledby': 'start-title', id: 'getting-started' },
    h('h2', { id: 'start-title' }, 'Welcome to Sluice: no rules yet'),
    h('p', {}, 'Sluice counts every resource it sees, but limits nothing until a rule says so. To begin:'),
    h('ol', {},
      h('li', {}, canWrite ? h('a', { href: '#/rules/new' }, 'Create your first rule') : 'Ask an editor to create a rule',
        ': a flow rule caps a resource\'s requests per second or calls in flight; a circuit breaker stops calls to a failing one.'),
      h('li', {}, 'Or keep rules in a file in your repository and ', h('a', { href: '#/apply' }, 'apply it'),
        ' here or from CI (', h('code', {}, 'sluice rules apply -f rules.yaml'), ').'),
      h('li', {}, 'Send traffic through Sluice: embed the Go engine, use its middleware, or call ',
        h('code', {}, 'POST /api/v1/check'), ' from any language. Resources appear below as they are seen.'),
      h('li', {}, 'Just looking? Restart with ', h('code', {}, 'sluice --demo'), ' for demo rules and synthetic traffic.')),
    h('p', {}, 'The API reference is at ', h('a', { href: '/swagger/index.html' }, '/swagger/index.html'), '.'));
}

/** render draws the overview. */
export function render(ctx) {
  const errors = errorBox();
  const start = h('div');
  const search = field({
    label: 'Search resources', id: 'overview-search',
    input: h('input', { type: 'search', value: ctx.params.get('q') ?? '', placeholder: 'name contains…' }),
  });
  const sort = field({
    label: 'Sort by', id: 'overview-sort',
    input: h('select', {},
      option('-blockQps', 'Blocked per second', ctx.params.get('sort') !== '-passQps' && ctx.params.get('sort') !== 'name'),
      option('-passQps', 'Passed per second', ctx.params.get('sort') === '-passQps'),
      option('name', 'Name', ctx.params.get('sort') === 'name')),
  });
  const tbody = h('tbody');
  const note = h('p', { class: 'muted', role: 'status' });
  const rows = new Map();
  const openBreakers = new Map();

  function breakerBadges(name) {
    const open = [...(openBreakers.get(name) ?? new Map()).entries()].filter(([, state]) => state !== 'closed');
    return open.map(([rule, state]) => badge(`breaker ${state === 'halfOpen' ? 'half-open' : state}`, state === 'open' ? 'bad' : 'warn', rule));
  }

  function liveCells(row, figures) {
    row.pass.textContent = number(figures?.passQps ?? 0);
    row.block.textContent = number(figures?.blockQps ?? 0);
    row.rt.textContent = ms(figures?.avgRtMs ?? 0);
    row.conc.textContent = number(figures?.concurrency ?? 0);
    row.tr.classList.toggle('blocking', (figures?.blockQps ?? 0) > 0);
    const s = feed.series(row.name);
    if (s) {
      row.spark.setData(s.t, s.pass, s.block);
    }
  }

  function drawRows(items) {
    const focused = document.activeElement?.dataset?.resource;
    for (const row of rows.values()) {
      row.spark.destroy();
    }
    rows.clear();
    const trs = items.map((it) => {
      const sparkEl = h('div', { class: 'spark', role: 'img', 'aria-label': `passed (green) and blocked (red) per second over the last 5 minutes of ${it.name}` });
      const row = {
        name: it.name,
        pass: h('td', { class: 'num' }),
        block: h('td', { class: 'num' }),
        rt: h('td', { class: 'num' }),
        conc: h('td', { class: 'num' }),
        badges: h('span', { class: 'badges' }, breakerBadges(it.name)),
        spark: sparkline(sparkEl),
      };
      row.tr = h('tr', { dataset: { resource: it.name } },
        h('th', { scope: 'row' }, resourceLink(it.name), it.name.startsWith('demo:') ? badge('demo', 'info') : null, row.badges),
        h('td', { class: 'num' }, String(it.rules)),
        row.pass, row.block, row.rt, row.conc,
        h('td', {}, sparkEl));
      rows.set(it.name, row);
      liveCells(row, feed.latest(it.name) ?? it.live);
      return row.tr;
    });
    replace(tbody, trs.length ? trs : h('tr', {}, h('td', { colspan: 7, class: 'empty' },
      search.input.value ? 'No resource matches the search.' : 'No resource has been seen yet. Resources appear here when traffic reaches Sluice or a rule names them.')));
    if (focused) {
      tbody.querySelector(`a[data-resource="${CSS.escape(focused)}"]`)?.focus();
    }
  }

  async function load() {
    try {
      const { data } = await api('GET', '/resources', {
        query: { q: search.input.value, sort: sort.input.value, pageSize: listSize },
      });
      errors.clear();
      drawRows(data.items);
      note.textContent = data.total > data.items.length
        ? `Showing ${data.items.length} of ${data.total} resources; search to narrow the list.`
        : `${data.total} resource${data.total === 1 ? '' : 's'}.`;
    } catch (err) {
      errors.show(err);
    }
  }

  async function loadBreakers() {
    try {
      const { data } = await api('GET', '/breakers');
      openBreakers.clear();
      for (const b of data.items) {
        if (!openBreakers.has(b.resource)) {
          openBreakers.set(b.resource, new Map());
        }
        openBreakers.get(b.resource).set(b.rule, b.state);
      }
      for (const row of rows.values()) {
        replace(row.badges, breakerBadges(row.name));
      }
    } catch {
      // The badges are extra; the table stands without them.
    }
  }

  async function loadStart() {
    try {
      const { data } = await api('GET', '/rules', { query: { pageSize: 1 } });
      replace(start, data.total === 0 ? gettingStarted(ctx.session.canWrite) : null);
    } catch (err) {
      errors.show(err);
    }
  }

  let typing = 0;
  search.input.addEventListener('input', () => {
    clearTimeout(typing);
    typing = setTimeout(() => {
      ctx.setParams({ q: search.input.value, sort: sort.input.value === '-blockQps' ? '' : sort.input.value });
      load();
    }, 250);
  });
  sort.input.addEventListener('change', () => {
    ctx.setParams({ q: search.input.value, sort: sort.input.value === '-blockQps' ? '' : sort.input.value });
    load();
  });

  const unsubscribe = feed.subscribe(() => {
    for (const row of rows.values()) {
      liveCells(row, feed.latest(row.name));
    }
  });
  const unsubscribeBreakers = feed.subscribeBreakers((e) => {
    if (!openBreakers.has(e.resource)) {
      openBreakers.set(e.resource, new Map());
    }
    openBreakers.get(e.resource).set(e.rule, e.to);
    const row = rows.get(e.resource);
    if (row) {
      replace(row.badges, breakerBadges(e.resource));
    }
  });
  const timer = setInterval(load, refreshMs);

  loadStart();
  loadBreakers().then(load);

  const p = page('Overview',
    start,
    errors.el,
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => e.preventDefault() }, search.row, sort.row),
    table('Resources', ['Resource', 'Rules', 'Passed /s', 'Blocked /s', 'Avg RT', 'In flight', 'Last 5 min'], tbody),
    note,
    h('p', { class: 'muted small' }, 'Live figures come once a second from the metric stream; the list itself refreshes every 15 s.'));
  return {
    ...p,
    cleanup() {
      unsubscribe();
      unsubscribeBreakers();
      clearInterval(timer);
      clearTimeout(typing);
      for (const row of rows.values()) {
        row.spark.destroy();
      }
    },
  };
}

