// The fleet: the services that embed the engine and report to this server,
// filterable by app, each with its state, version, the rules revision in
// force and how far behind the current one it is, and its last report.
// The list is read again every few seconds.

import { ConnectionError, api, etagVersion } from '../api.js';
import { h, option, replace } from '../dom.js';
import { ago, timeEl } from '../format.js';
import { badge, field, loadError, page, stateRow, table } from '../ui.js';

/** refreshMs is how often the list is read again. */
const refreshMs = 5000;

const columns = ['Instance', 'App', 'State', 'Version', 'Rules in force', 'Last report', 'First seen'];

/** stateKinds colours an instance's state. */
const stateKinds = { live: 'ok', stale: 'warn', gone: 'muted' };

/** stateHints says what an instance's state means. */
const stateHints = {
  live: 'reported in the last 10 s',
  stale: 'no report for more than 10 s',
  gone: 'no report for more than 5 min',
};

/** render draws the Instances page. */
export function render(ctx) {
  const apps = new Set();
  const appInput = h('select', {}, option('', 'Every app'));
  const appField = field({ label: 'App', id: 'instances-app', input: appInput });
  let app = ctx.params.get('app') ?? '';
  const summaryEl = h('p', { id: 'instances-summary', role: 'status' });
  const tbody = h('tbody', { id: 'instances' }, stateRow(columns.length, 'loading', 'Loading the instances…'));
  // revision is the current rules revision, as the snapshot's ETag says.
  let revision = null;
  let seq = 0;

  function drawApps() {
    if (app) {
      apps.add(app);
    }
    replace(appInput, option('', 'Every app'), [...apps].sort().map((a) => option(a, a, a === app)));
    appInput.value = app;
  }

  /**
   * loadRevision reads the current rules revision from the snapshot's
   * ETag, asking only whether it moved since the last read (304 if not).
   */
  async function loadRevision() {
    try {
      const { headers } = await api('GET', '/rules/snapshot', { headers: revision === null ? {} : { 'If-None-Match': `"${revision}"` } });
      revision = etagVersion(headers) ?? revision;
    } catch (err) {
      if (err.status !== 304) {
        revision = null;
      }
    }
  }

  function behind(i) {
    if (revision === null) {
      return String(i.rulesRevision);
    }
    const n = revision - i.rulesRevision;
    return [String(i.rulesRevision), ' ', n > 0
      ? badge(`${n} behind`, i.state === 'live' ? 'warn' : 'muted', `The current revision is ${revision}`)
      : badge('current', 'ok', `The current revision is ${revision}`)];
  }

  function row(i, now) {
    return h('tr', { dataset: { instance: i.id, state: i.state } },
      h('th', { scope: 'row' }, i.id, h('div', { class: 'muted small' }, `${i.hostname || 'unknown host'}, pid ${i.pid}`)),
      h('td', {}, i.app || h('span', { class: 'muted' }, '(no app)')),
      h('td', {}, badge(i.state, stateKinds[i.state] ?? 'muted', stateHints[i.state])),
      h('td', {}, i.version || '—'),
      h('td', { class: 'num' }, behind(i)),
      h('td', {}, ago(i.lastSeen, now)),
      h('td', {}, timeEl(i.firstSeen)));
  }

  async function load() {
    const mine = ++seq;
    ctx.setParams({ app });
    try {
      const [{ data }] = await Promise.all([api('GET', '/instances', { query: { app } }), loadRevision()]);
      if (mine !== seq) {
        return;
      }
      const items = [...data.items].sort((a, b) => a.app.localeCompare(b.app) || a.id.localeCompare(b.id));
      for (const i of items) {
        if (i.app) {
          apps.add(i.app);
        }
      }
      drawApps();
      const now = Date.now();
      const count = (state) => items.filter((i) => i.state === state).length;
      summaryEl.textContent = items.length
        ? `${items.length} instance${items.length === 1 ? '' : 's'}: ${count('live')} live, ${count('stale')} stale, ${count('gone')} gone.`
          + (revision === null ? '' : ` Current rules revision: ${revision}.`)
        : '';
      replace(tbody, items.length ? items.map((i) => row(i, now)) : stateRow(columns.length, 'empty',
        h('p', {}, app ? `No instance of ${app} has reported yet.` : 'No instance has reported yet.'),
        h('p', {}, 'A Go service that embeds the engine takes its rules from this server and reports its traffic back. '
          + 'Create a token of role instance on the Tokens page, then run the example service:'),
        h('pre', {}, h('code', {}, `go run ./cmd/sluice-example -server ${window.location.origin} -token <instance token> -app shop`)),
        h('p', {}, 'It appears here within a second.')));
    } catch (err) {
      if (mine === seq && !(err instanceof ConnectionError && tbody.querySelector('tr[data-instance]'))) {
        replace(tbody, loadError(columns.length, err, load));
      }
    }
  }

  appInput.addEventListener('change', () => {
    app = appInput.value;
    load();
  });
  drawApps();
  load();
  const timer = setInterval(load, refreshMs);

  return {
    ...page('Instances',
      h('p', {}, 'Services that embed the engine: they run this server\'s rules (those of their app, and those of no app) and report their traffic, which the resources\' figures add up. '
        + 'Read again every 5 s.'),
      h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter instances', onsubmit: (e) => e.preventDefault() }, appField.row),
      summaryEl,
      table('Instances', columns, tbody)),
    cleanup() {
      seq += 1;
      clearInterval(timer);
    },
  };
}
