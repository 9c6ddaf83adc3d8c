// The overview: every resource with its live figures from the metric
// stream, its rule count and a sparkline of the last five minutes, ranked
// by its blocks over the last minute; and, on a new install, what to do
// first. Sluice's own API routes are resources too, kept out of the way
// unless asked for.

import { api } from '../api.js';
import { blockedByText } from '../blocks.js';
import { connection } from '../connection.js';
import { h, option, replace } from '../dom.js';
import { sparkline } from '../charts.js';
import { ms, number, timeEl } from '../format.js';
import { feed } from '../live.js';
import { badge, errorBox, field, loadError, page, stateRow, table } from '../ui.js';

const listSize = 200;
const refreshMs = 15000;
/** rankSec is the span the ranking sums: a minute smooths out single seconds. */
const rankSec = 60;
const headers = ['Resource', 'Rules', 'Passed/s', 'Blocked/s', 'Avg RT', 'In flight', 'Last 5 min'];

/**
 * ownRoute tells Sluice's own API routes, which the server guards with its
 * own engine and names "METHOD /api/v1/…", from the user's resources.
 */
export function ownRoute(name) {
  return /^[A-Z]+ \/api\/v1(\/|$)/.test(name);
}

/**
 * lastMinute is a resource's passed and blocked calls over the last
 * minute: summed from the live series when the stream has it, else the
 * last finished minute the list answered.
 */
function lastMinute(item) {
  const s = feed.series(item.name);
  if (!s || !s.t.length) {
    return { pass: item.lastMinute?.pass ?? 0, block: item.lastMinute?.block ?? 0 };
  }
  const since = s.t[s.t.length - 1] - rankSec;
  let pass = 0;
  let block = 0;
  for (let i = s.t.length - 1; i >= 0 && s.t[i] > since; i -= 1) {
    pass += s.pass[i] ?? 0;
    block += s.block[i] ?? 0;
  }
  return { pass, block };
}

/**
 * ranked orders items for the chosen sort: by the last minute's blocks or
 * passes, highest first, the other figure next, then by name, so that
 * equal resources keep their places from one refresh to the next.
 */
function ranked(items, sort) {
  if (sort === 'name') {
    return items;
  }
  const minute = new Map(items.map((it) => [it.name, lastMinute(it)]));
  const [first, second] = sort === '-passQps' ? ['pass', 'block'] : ['block', 'pass'];
  return [...items].sort((a, b) => {
    const ma = minute.get(a.name);
    const mb = minute.get(b.name);
    return mb[first] - ma[first] || mb[second] - ma[second] || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
  });
}

/**
 * blockedBy names the rules that blocked the resource in the last finished
 * minute, and their kinds, under its name; nothing when none did.
 */
function blockedBy(item) {
  const text = blockedByText(item.lastMinute?.blockedBy);
  return text ? h('span', { class: 'blocked-by', dataset: { role: 'blocked-by' } }, `Blocked last minute by ${text}`) : null;
}

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
      option('-blockQps', 'Most blocked in the last minute', ctx.params.get('sort') !== '-passQps' && ctx.params.get('sort') !== 'name'),
      option('-passQps', 'Most passed in the last minute', ctx.params.get('sort') === '-passQps'),
      option('name', 'Name', ctx.params.get('sort') === 'name')),
  });
  const showOwn = h('input', { type: 'checkbox', id: 'overview-own', checked: ctx.params.get('own') === '1' });
  const ownToggle = h('div', { class: 'field check' }, showOwn,
    h('label', { for: 'overview-own' }, 'Show Sluice\'s own API routes'));
  const tbody = h('tbody', {}, stateRow(headers.length, 'loading', 'Loading the resources…'));
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
    row.rt.textContent = ms(figures?.avgRtMs ?? 0, figures?.completeQps);
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
        pass: h('td', { class: 'num', dataset: { label: headers[2] } }),
        block: h('td', { class: 'num', dataset: { label: headers[3] } }),
        rt: h('td', { class: 'num', dataset: { label: headers[4] } }),
        conc: h('td', { class: 'num', dataset: { label: headers[5] } }),
        badges: h('span', { class: 'badges' }, breakerBadges(it.name)),
        spark: sparkline(sparkEl),
      };
      row.tr = h('tr', { dataset: { resource: it.name } },
        h('th', { scope: 'row' }, resourceLink(it.name), it.name.startsWith('demo:') ? badge('demo', 'info') : null,
          ownRoute(it.name) ? badge('Sluice API', 'info', 'one of Sluice\'s own API routes') : null, row.badges,
          blockedBy(it)),
        h('td', { class: 'num', dataset: { label: headers[1] } }, String(it.rules)),
        row.pass, row.block, row.rt, row.conc,
        h('td', { class: 'spark-cell', dataset: { label: headers[6] } }, sparkEl));
      rows.set(it.name, row);
      liveCells(row, feed.latest(it.name) ?? it.live);
      return row.tr;
    });
    replace(tbody, trs.length ? trs : stateRow(headers.length, 'empty',
      search.input.value ? 'No resource matches the search.' : 'No resource has been seen yet. Resources appear here when traffic reaches Sluice or a rule names them.'));
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
      const own = data.items.filter((it) => ownRoute(it.name)).length;
      const items = showOwn.checked ? data.items : data.items.filter((it) => !ownRoute(it.name));
      drawRows(ranked(items, sort.input.value));
      const shown = data.total > data.items.length
        ? `Showing ${items.length} of ${data.total} resources; search to narrow the list.`
        : `${items.length} resource${items.length === 1 ? '' : 's'}.`;
      note.textContent = own && !showOwn.checked
        ? `${shown} ${own} of Sluice's own API route${own === 1 ? ' is' : 's are'} hidden.`
        : shown;
    } catch (err) {
      if (!rows.size) {
        replace(tbody, loadError(headers.length, err, load));
      } else {
        // The rows stay, marked as old by the connection banner.
        errors.show(err);
      }
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
      setParams();
      load();
    }, 250);
  });
  function setParams() {
    ctx.setParams({
      q: search.input.value,
      sort: sort.input.value === '-blockQps' ? '' : sort.input.value,
      own: showOwn.checked ? '1' : '',
    });
  }
  sort.input.addEventListener('change', () => {
    setParams();
    load();
  });
  showOwn.addEventListener('change', () => {
    setParams();
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

  // While the server does not answer, the figures are the last ones it
  // gave: the table stops looking live (no red of blocking rows, greyed
  // numbers) and says since when, wherever the banner has scrolled.
  const tableWrap = h('div', { class: 'overview-table' }, table('Resources', headers, tbody));
  const staleNote = h('p', { class: 'alert warn', id: 'overview-stale', hidden: true });
  const undoConnection = connection.subscribe((state) => {
    tableWrap.classList.toggle('stale', state.stale);
    staleNote.hidden = !state.stale;
    if (state.stale) {
      replace(staleNote, 'Not live: these are the figures of ', timeEl(state.since, true), ', the server\'s last answer.');
    }
  });

  const p = page('Overview',
    start,
    errors.el,
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => e.preventDefault() }, search.row, sort.row, ownToggle),
    staleNote,
    tableWrap,
    note,
    h('p', { class: 'muted small' }, 'Live figures come once a second from the metric stream; the list and its order refresh every 15 s.'));
  return {
    ...p,
    cleanup() {
      undoConnection();
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

