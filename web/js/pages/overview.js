// The overview, for triage: a line of totals (calls, blocked share, open
// breakers, cluster fallbacks, instances not live), then every resource
// with its figures over the last minute, its breakers' state and a
// sparkline of the last five minutes, ranked by an order it states, the
// ranked column marked; and, on a new install, what to do first. Sluice's
// own API routes are resources too, kept out of the way unless asked for.

import { api } from '../api.js';
import { blockedByText } from '../blocks.js';
import { connection } from '../connection.js';
import { h, option, replace } from '../dom.js';
import { sparkline } from '../charts.js';
import { ms, number, openFor, percent, plural, timeEl } from '../format.js';
import { feed } from '../live.js';
import { clusterStatus } from '../rulesinfo.js';
import { badge, errorBox, field, loadError, page, stateRow, table } from '../ui.js';

const listSize = 200;
const refreshMs = 15000;
/** rankSec is the span the ranking sums, as the server's: a minute smooths out single seconds. */
const rankSec = 60;
const headers = ['Resource', 'Rules', 'Blocked share', 'Blocked/s', 'Passed/s', 'Shadow-blocked/s', 'Avg RT', 'In flight', 'Last 5 min'];

/**
 * sorts are the orders offered: the server's sort, what the console calls
 * it, the column it ranks by (an index of headers) and the order stated
 * above the table. The blocked share comes first: a resource refusing
 * every call is the one to look at, however little traffic it has.
 */
const sorts = {
  '-blockedShare': { label: 'Blocked share, last minute', column: 2, stated: 'Ranked by blocked share over the last minute, highest first; ties by blocked/s, then by name.' },
  '-blockQps': { label: 'Blocked/s, last minute', column: 3, stated: 'Ranked by blocked/s over the last minute, highest first; ties by passed/s, then by name.' },
  '-passQps': { label: 'Passed/s, last minute', column: 4, stated: 'Ranked by passed/s over the last minute, highest first; ties by blocked/s, then by name.' },
  name: { label: 'Name', column: 0, stated: 'In order of name.' },
};
const defaultSort = '-blockedShare';

/**
 * ownRoute tells Sluice's own API routes, which the server guards with its
 * own engine and names "METHOD /api/v1/…", from the user's resources.
 */
export function ownRoute(name) {
  return /^[A-Z]+ \/api\/v1(\/|$)/.test(name);
}

/**
 * lastMinute is a resource's passed, blocked and shadow-blocked calls over
 * the last minute, and the share blocked: summed from the live series when
 * the stream has it, else the server's last 60 seconds (recent, per second).
 */
function lastMinute(item) {
  const s = feed.series(item.name);
  let pass = 0;
  let block = 0;
  let shadow = 0;
  if (!s || !s.t.length) {
    pass = (item.recent?.passQps ?? 0) * rankSec;
    block = (item.recent?.blockQps ?? 0) * rankSec;
    shadow = (item.recent?.shadowBlockQps ?? 0) * rankSec;
  } else {
    const since = s.t[s.t.length - 1] - rankSec;
    for (let i = s.t.length - 1; i >= 0 && s.t[i] > since; i -= 1) {
      pass += s.pass[i] ?? 0;
      block += s.block[i] ?? 0;
      shadow += s.shadow[i] ?? 0;
    }
  }
  return { pass, block, shadow, share: pass + block > 0 ? block / (pass + block) : 0 };
}

/**
 * ranked orders items for the chosen sort, highest first, the sort's tie
 * figure next, then those with calls before idle ones, as the server
 * does, then by name, so that equal resources keep their places from one
 * refresh to the next.
 */
function ranked(items, sort) {
  if (sort === 'name') {
    return items;
  }
  const minute = new Map(items.map((it) => [it.name, lastMinute(it)]));
  const keys = { '-blockedShare': ['share', 'block'], '-blockQps': ['block', 'pass'], '-passQps': ['pass', 'block'] }[sort];
  const active = (m) => (m.pass + m.block > 0 ? 1 : 0);
  return [...items].sort((a, b) => {
    const ma = minute.get(a.name);
    const mb = minute.get(b.name);
    return mb[keys[0]] - ma[keys[0]] || mb[keys[1]] - ma[keys[1]] || active(mb) - active(ma)
      || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
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
  const chosen = Object.hasOwn(sorts, ctx.params.get('sort') ?? '') ? ctx.params.get('sort') : defaultSort;
  const sort = field({
    label: 'Sort by', id: 'overview-sort',
    input: h('select', {}, Object.entries(sorts).map(([value, s]) => option(value, s.label, value === chosen))),
  });
  const showOwn = h('input', { type: 'checkbox', id: 'overview-own', checked: ctx.params.get('own') === '1' });
  const ownToggle = h('div', { class: 'field check' }, showOwn,
    h('label', { for: 'overview-own' }, 'Show Sluice\'s own API routes'));
  const tbody = h('tbody', {}, stateRow(headers.length, 'loading', 'Loading the resources…'));
  const note = h('p', { class: 'muted', role: 'status' });
  const order = h('p', { class: 'overview-order', id: 'overview-order' });
  const summaryEl = h('p', { class: 'overview-summary', id: 'overview-summary' }, 'Loading the totals…');
  const rows = new Map();
  // resource → rule → {state, since (ms)}, of every breaker not closed.
  const breakers = new Map();
  // retryTimeoutMs of every breaker rule, by name: when its next probe comes.
  const retryMs = new Map();
  const totals = { summary: null, cluster: null, instances: null };

  function drawSummary() {
    if (!totals.summary) {
      return;
    }
    const { passQps, blockQps, shadowBlockQps, blockedShare } = totals.summary;
    const open = [...breakers.values()].reduce((n, rules) => n + rules.size, 0);
    const fig = (name, text, bad) => h('span', { class: bad ? 'fig bad' : 'fig', dataset: { summary: name } }, text);
    const parts = [
      fig('calls', `${number(passQps + blockQps)} calls/s`),
      fig('blocked', `${percent(blockedShare)} blocked`, blockQps > 0),
      fig('shadow', `${number(shadowBlockQps)} shadow-blocked/s`),
      fig('breakers', `${plural(open, 'breaker')} open`, open > 0),
    ];
    if (totals.cluster) {
      const falling = totals.cluster.rules.filter((r) => r.fallingBack).length;
      parts.push(fig('cluster', `${plural(falling, 'cluster rule')} falling back`, falling > 0));
    }
    if (totals.instances) {
      const known = totals.instances.filter((i) => i.state !== 'gone');
      const notLive = known.filter((i) => i.state !== 'live').length;
      parts.push(fig('instances', known.length ? `${number(notLive)} of ${plural(known.length, 'instance')} not live` : 'no instances', notLive > 0));
    }
    replace(summaryEl, h('strong', {}, 'Last minute: '), parts.flatMap((el, i) => (i ? [' · ', el] : [el])));
  }

  function breakerBadges(name) {
    const now = Date.now();
    return [...(breakers.get(name) ?? new Map()).entries()].map(([rule, b]) => (b.state === 'open'
      ? h('span', { class: 'breaker-state', dataset: { rule } }, badge('breaker open', 'bad', rule), ' ',
        h('span', { class: 'muted small breaker-clock' }, openFor(b.since, retryMs.get(rule), now)))
      : h('span', { class: 'breaker-state', dataset: { rule } }, badge('breaker half-open', 'warn', rule))));
  }

  function liveCells(row, item, figures) {
    const minute = lastMinute(item);
    row.share.textContent = minute.pass + minute.block > 0 ? percent(minute.share) : '—';
    row.block.textContent = number(minute.block / rankSec);
    row.pass.textContent = number(minute.pass / rankSec);
    row.shadow.textContent = number(minute.shadow / rankSec);
    row.rt.textContent = ms(figures?.avgRtMs ?? 0, figures?.completeQps);
    row.conc.textContent = number(figures?.concurrency ?? 0);
    row.tr.classList.toggle('blocking', minute.block > 0);
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
      const cell = (i) => h('td', { class: 'num', dataset: { label: headers[i] } });
      const row = {
        name: it.name,
        item: it,
        share: cell(2),
        block: cell(3),
        pass: cell(4),
        shadow: cell(5),
        rt: cell(6),
        conc: cell(7),
        badges: h('span', { class: 'badges' }, breakerBadges(it.name)),
        spark: sparkline(sparkEl),
      };
      row.tr = h('tr', { dataset: { resource: it.name } },
        h('th', { scope: 'row' }, resourceLink(it.name), it.name.startsWith('demo:') ? badge('demo', 'info') : null,
          ownRoute(it.name) ? badge('Sluice API', 'info', 'one of Sluice\'s own API routes') : null, row.badges,
          blockedBy(it)),
        h('td', { class: 'num', dataset: { label: headers[1] } }, String(it.rules)),
        row.share, row.block, row.pass, row.shadow, row.rt, row.conc,
        h('td', { class: 'spark-cell', dataset: { label: headers[8] } }, sparkEl));
      rows.set(it.name, row);
      liveCells(row, it, feed.latest(it.name) ?? it.live);
      return row.tr;
    });
    replace(tbody, trs.length ? trs : stateRow(headers.length, 'empty',
      search.input.value ? 'No resource matches the search.' : 'No resource has been seen yet. Resources appear here when traffic reaches Sluice or a rule names them.'));
    if (focused) {
      tbody.querySelector(`a[data-resource="${CSS.escape(focused)}"]`)?.focus();
    }
  }

  // The ranked column is marked in its header, for eyes and screen readers.
  const tableEl = table('Resources', headers, tbody);
  function markOrder() {
    const s = sorts[sort.input.value];
    order.textContent = `${s.stated} The order refreshes every 15 s; the figures every second.`;
    tableEl.querySelectorAll('thead th').forEach((th, i) => {
      th.querySelector('.sort-mark')?.remove();
      if (i === s.column) {
        th.setAttribute('aria-sort', i === 0 ? 'ascending' : 'descending');
        th.append(h('span', { class: 'sort-mark', 'aria-hidden': 'true' }, i === 0 ? ' ↑' : ' ↓'));
      } else {
        th.removeAttribute('aria-sort');
      }
    });
  }

  async function load() {
    try {
      const { data } = await api('GET', '/resources', {
        query: { q: search.input.value, sort: sort.input.value, pageSize: listSize },
      });
      errors.clear();
      totals.summary = data.summary;
      drawSummary();
      const own = data.items.filter((it) => ownRoute(it.name)).length;
      const items = showOwn.checked ? data.items : data.items.filter((it) => !ownRoute(it.name));
      markOrder();
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

  function redrawBadges() {
    for (const row of rows.values()) {
      replace(row.badges, breakerBadges(row.name));
    }
  }

  async function loadBreakers() {
    try {
      const [{ data }, rules] = await Promise.all([
        api('GET', '/breakers'),
        api('GET', '/rules', { query: { kind: 'circuitBreaker', pageSize: 500 } }),
      ]);
      for (const r of rules.data.items) {
        retryMs.set(r.name, r.retryTimeoutMs);
      }
      breakers.clear();
      for (const b of data.items) {
        if (b.state !== 'closed') {
          setBreaker(b.resource, b.rule, b.state, Date.parse(b.since));
        }
      }
      redrawBadges();
      drawSummary();
    } catch {
      // The badges are extra; the table stands without them.
    }
  }

  function setBreaker(resource, rule, state, since) {
    if (!breakers.has(resource)) {
      breakers.set(resource, new Map());
    }
    if (state === 'closed') {
      breakers.get(resource).delete(rule);
    } else {
      breakers.get(resource).set(rule, { state, since });
    }
    if (!breakers.get(resource).size) {
      breakers.delete(resource);
    }
  }

  async function loadTotals() {
    const [cluster, instances] = await Promise.all([
      clusterStatus(api),
      api('GET', '/instances').then(({ data }) => data.items, () => null),
    ]);
    totals.cluster = cluster;
    totals.instances = instances;
    drawSummary();
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
      sort: sort.input.value === defaultSort ? '' : sort.input.value,
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
      liveCells(row, row.item, feed.latest(row.name));
    }
  });
  const unsubscribeBreakers = feed.subscribeBreakers((e) => {
    setBreaker(e.resource, e.rule, e.to, Date.parse(e.time));
    const row = rows.get(e.resource);
    if (row) {
      replace(row.badges, breakerBadges(e.resource));
    }
    drawSummary();
  });
  const timer = setInterval(() => {
    load();
    loadTotals();
  }, refreshMs);
  // An open breaker's clock counts every second.
  const clockTimer = setInterval(() => {
    for (const row of rows.values()) {
      if (breakers.has(row.name)) {
        replace(row.badges, breakerBadges(row.name));
      }
    }
  }, 1000);

  loadStart();
  loadTotals();
  loadBreakers();
  load();

  // While the server does not answer, the figures are the last ones it
  // gave: the table stops looking live (no red of blocking rows, greyed
  // numbers) and says since when, wherever the banner has scrolled.
  const tableWrap = h('div', { class: 'overview-table' }, tableEl);
  const staleNote = h('p', { class: 'alert warn', id: 'overview-stale', hidden: true });
  const undoConnection = connection.subscribe((state) => {
    tableWrap.classList.toggle('stale', state.stale);
    summaryEl.classList.toggle('stale', state.stale);
    staleNote.hidden = !state.stale;
    if (state.stale) {
      replace(staleNote, 'Not live: these are the figures of ', timeEl(state.since, true), ', the server\'s last answer.');
    }
  });

  const p = page('Overview',
    start,
    errors.el,
    summaryEl,
    h('form', { class: 'toolbar', role: 'search', onsubmit: (e) => e.preventDefault() }, search.row, sort.row, ownToggle),
    staleNote,
    order,
    tableWrap,
    note,
    h('p', { class: 'muted small' }, 'Blocked share, blocked/s, passed/s and shadow-blocked/s are over the last minute; avg RT and in flight are the last second. The totals leave out Sluice\'s own API routes. Live figures come once a second from the metric stream.'));
  markOrder();
  return {
    ...p,
    cleanup() {
      undoConnection();
      unsubscribe();
      unsubscribeBreakers();
      clearInterval(timer);
      clearInterval(clockTimer);
      clearTimeout(typing);
      for (const row of rows.values()) {
        row.spark.destroy();
      }
    },
  };
}
