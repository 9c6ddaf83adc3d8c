// One resource: its circuit breakers' states and their timeline, a live
// chart of the last five minutes from the metric stream, its history with a
// range picker and a choice of instance (default: the sum over the server
// and every instance), the hottest values of its hotspot rules, and its
// rules with a quick enable/disable.

import { ConnectionError, api, ifMatch, resourcePath } from '../api.js';
import { h, option, replace, uid } from '../dom.js';
import { byReason, byRule, reasonColor, reasonLabel, ruleLabel } from '../blocks.js';
import { colors, timeChart } from '../charts.js';
import { localInput, number, openFor, plural, stepLabel, timeEl } from '../format.js';
import { feed } from '../live.js';
import { isPending, onSettled, outcomeUnknown, settleRuleWrite } from '../outcome.js';
import { appBadge, clusterBadges, clusterStatus, expiryBadge, isDemoRule, kindLabel, stateKind, stateLabel, strategyLabel, summary } from '../rulesinfo.js';
import { badge, confirmDialog, errorBox, loadError, messageOf, page, stateRow, table, toast } from '../ui.js';

/** breakerRefreshMs is how often the breakers' states and windows are read again. */
const breakerRefreshMs = 5000;

/**
 * shownChanges is how many breaker state changes the page lists until
 * asked for all: a flapping breaker would otherwise push the charts
 * thousands of pixels down.
 */
const shownChanges = 5;

/** ranges are the preset history ranges. */
const ranges = [['1h', '1 h', 3600e3], ['6h', '6 h', 6 * 3600e3], ['24h', '24 h', 24 * 3600e3],
  ['7d', '7 d', 7 * 86400e3], ['30d', '30 d', 30 * 86400e3]];

/**
 * historySteps answers the history's steps and bounds, asked of the API
 * once: {steps: [{name, stepMs}], maxPoints, flushIntervalMs}.
 */
let historySteps = null;
function loadHistorySteps() {
  historySteps ??= api('GET', '/metrics/history-steps').then(({ data }) => data, (err) => {
    historySteps = null;
    throw err;
  });
  return historySteps;
}

/**
 * chooseStep is the smallest of bounds' steps at which [fromMs, toMs),
 * rounded out to the step as the API does, fits in its maxPoints points.
 */
function chooseStep(bounds, fromMs, toMs) {
  for (const { name, stepMs } of bounds.steps) {
    const from = Math.floor(fromMs / stepMs) * stepMs;
    const to = Math.ceil(toMs / stepMs) * stepMs;
    if ((to - from) / stepMs <= bounds.maxPoints) {
      return { name, stepMs, from, to };
    }
  }
  const { name, stepMs } = bounds.steps[bounds.steps.length - 1];
  return { name, stepMs, from: Math.floor(fromMs / stepMs) * stepMs, to: Math.ceil(toMs / stepMs) * stepMs };
}

function section(title, ...children) {
  const id = uid('section');
  return h('section', { class: 'card', 'aria-labelledby': id }, h('h2', { id }, title), ...children);
}

/**
 * notFound is the page of an address that names no resource: one whose
 * escapes do not decode (#/resources/%E0%A4%A).
 */
function notFound() {
  return page('No such resource',
    h('p', { class: 'alert warn', role: 'status' }, 'This address names no resource: its name is not a validly escaped text.'),
    h('p', {}, h('a', { href: '#/' }, '← Overview'), ' lists the resources Sluice has seen.'));
}

/** render draws a resource's page. */
export function render(ctx) {
  let name;
  try {
    name = decodeURIComponent(ctx.match[1]);
  } catch {
    return notFound();
  }
  const errors = errorBox();
  const facts = h('p', { class: 'muted' });
  const cleanups = [];
  let gone = false;

  // Circuit breakers: a state badge each and the timeline of transitions,
  // which the server stores as the engine reports them.
  const breakerBody = h('tbody');
  const timeline = h('ol', { class: 'timeline', id: 'breaker-timeline' });
  let showAllChanges = false;
  const moreChanges = h('button', {
    type: 'button', class: 'link', id: 'breaker-timeline-more', hidden: true, 'aria-controls': 'breaker-timeline',
    onclick: () => {
      showAllChanges = !showAllChanges;
      drawBreakers();
    },
  });
  const breakerSection = section('Circuit breakers',
    table('Circuit breakers', ['Rule', 'Strategy', 'State', 'Since', 'Window'], breakerBody),
    h('h3', {}, 'State changes, last 24 hours'),
    timeline,
    moreChanges,
    h('p', { class: 'muted small' }, 'Newest first; the server keeps every transition as long as the metrics.'));
  breakerSection.hidden = true;
  let breakers = [];
  let transitions = [];
  // breakerMarks are the last 24 hours' transitions as the live chart
  // marks them; historyMarks those of the history's range, for its chart.
  let breakerMarks = [];
  let historyMarks = [];
  // historyRange is the history chart's range, in seconds, end exclusive.
  let historyRange = [0, 0];
  // retryTimeoutMs of each breaker rule of the resource, from its rules.
  const retryMs = new Map();

  /** breakerClock is an open breaker's openFor, redrawn every second. */
  function breakerClock(b) {
    if (b.state !== 'open') {
      return '';
    }
    return openFor(Date.parse(b.since), retryMs.get(b.rule));
  }
  const clocks = new Map(); // rule → [breaker, element]

  function clockEl(b) {
    const el = h('span', { class: 'muted small breaker-clock' }, breakerClock(b));
    clocks.set(b.rule, [b, el]);
    return el;
  }

  function drawBreakers() {
    clocks.clear();
    breakerSection.hidden = breakers.length === 0 && transitions.length === 0;
    replace(breakerBody, breakers.map((b) => h('tr', { dataset: { rule: b.rule } },
      h('th', { scope: 'row' }, b.rule),
      h('td', {}, strategyLabel(b.strategy)),
      h('td', {}, badge(stateLabel(b.state), stateKind(b.state)), ' ', clockEl(b)),
      h('td', {}, timeEl(b.since)),
      h('td', {}, `${plural(b.window.total, 'call')}, ${plural(b.window.errors, 'error')}, ${number(b.window.slow)} slow`))));
    // The server lists them oldest first, those of one millisecond in the
    // order they happened: reversed, never re-sorted by time.
    const events = [...transitions].reverse();
    for (const b of breakers) {
      if (!transitions.some((e) => e.rule === b.rule)) {
        events.push({ time: b.since, rule: b.rule, from: null, to: b.state });
      }
    }
    moreChanges.hidden = events.length <= shownChanges;
    moreChanges.textContent = showAllChanges ? `Show the newest ${shownChanges} only` : `Show all ${events.length} changes`;
    moreChanges.setAttribute('aria-expanded', String(showAllChanges));
    const shown = showAllChanges ? events : events.slice(0, shownChanges);
    replace(timeline, shown.length ? shown.map((e) => h('li', { dataset: { state: e.to } },
      timeEl(e.time), ' ', h('strong', {}, e.rule), ' ',
      e.from ? [badge(stateLabel(e.from), stateKind(e.from)), ' → '] : 'is ',
      badge(stateLabel(e.to), stateKind(e.to)),
      e.from ? null : ' (since then)')) : h('li', { class: 'muted' }, 'No state change yet.'));
  }

  async function loadBreakers() {
    try {
      const [states, changes] = await Promise.all([
        api('GET', '/breakers'),
        api('GET', '/breakers/transitions', { query: { resource: name } }),
      ]);
      breakers = states.data.items.filter((b) => b.resource === name);
      transitions = changes.data.items;
      breakerMarks = transitions.map((e) => ({ time: Date.parse(e.time) / 1000, state: e.to }));
      drawBreakers();
      markBreakers();
    } catch (err) {
      // A refresh that failed for want of a server is the connection
      // banner's news; the page reloads when the server is back.
      if (!(err instanceof ConnectionError)) {
        errors.show(err);
      }
    }
  }
  cleanups.push(feed.subscribeBreakers((e) => {
    if (e.resource === name) {
      loadBreakers();
    }
  }));

  // Live: the last five minutes from the stream.
  const liveEl = h('div', { class: 'chart', id: 'live-chart' });
  const inFlightEl = h('div', { class: 'chart', id: 'inflight-chart' });
  const liveSection = section('Live: last 5 minutes', liveEl,
    h('h3', {}, 'Calls in flight'), inFlightEl,
    h('p', { class: 'muted small' }, 'One point a second from the metric stream; the server keeps the last five minutes, so the charts start full. '
      + 'A gap is a time without figures: the server was down, out of reach, or too busy to take that second\'s. Concurrency rules limit the calls in flight; '
      + 'an adaptive concurrency rule\'s limit is drawn dashed from when the page opened (the server\'s five minutes do not keep it).'));
  let live = null;
  let inFlight = null;

  function drawLive() {
    const s = feed.series(name);
    if (s) {
      live.setData(s.t, s.pass, s.block, s.shadow, s.rt);
      inFlight.setData(s.t, s.conc, s.limit);
    } else {
      live.setData([], [], [], [], []);
      inFlight.setData([], [], []);
    }
    explainAdaptive(feed.latest(name));
  }

  // explainAdaptive writes the latest change of the resource's adaptive
  // limit, as the stream tells it, in its rule's row.
  function explainAdaptive(latest) {
    const text = latest?.adaptiveLimit
      ? `Limit now ${number(latest.adaptiveLimit)}${latest.adaptiveChange ? `; last change: ${latest.adaptiveChange}` : ''}.`
      : '';
    for (const el of rulesBody.querySelectorAll('.adaptive-explanation')) {
      el.textContent = text;
    }
  }

  // History: a range picker and a chart of the stored minutes.
  const rangeName = uid('range');
  const historyEl = h('div', { class: 'chart', id: 'history-chart' });
  const historyNote = h('p', { class: 'muted', role: 'status', id: 'history-note' });
  // historyKey tells a gap from a zero, which the chart's legend cannot.
  const historyKey = h('p', { class: 'muted small', id: 'history-key' });
  const fromInput = h('input', { type: 'datetime-local', id: 'history-from' });
  const toInput = h('input', { type: 'datetime-local', id: 'history-to' });
  const customForm = h('form', { class: 'toolbar end', hidden: true, id: 'history-custom' },
    h('div', { class: 'field' }, h('label', { for: 'history-from' }, 'From (your time)'), fromInput),
    h('div', { class: 'field' }, h('label', { for: 'history-to' }, 'To (your time)'), toInput),
    h('div', { class: 'field' }, h('button', { type: 'submit' }, 'Show')));
  const picker = h('fieldset', { class: 'segmented', id: 'history-range' },
    h('legend', {}, 'Range'),
    [...ranges, ['custom', 'Custom', 0]].map(([value, label]) => {
      const id = `${rangeName}-${value}`;
      return h('span', {},
        h('input', { type: 'radio', name: rangeName, id, value, checked: value === (ctx.params.get('range') ?? '1h') }),
        h('label', { for: id }, label));
    }));
  const instanceInput = h('select', { id: 'history-instance' }, option('', 'all (summed)'));
  instanceInput.value = ctx.params.get('instance') ?? '';
  const instanceField = h('div', { class: 'field' }, h('label', { for: 'history-instance' }, 'Instance'), instanceInput);
  // The adaptive limit over the history's steps, beside the calls in
  // flight and latency it follows: drawn when a step has one.
  const limitEl = h('div', { class: 'chart', id: 'adaptive-history-chart' });
  const limitBlock = h('div', { hidden: true }, h('h3', {}, 'Adaptive limit'), limitEl,
    h('p', { class: 'muted small' }, 'Per step, the latest limit of the adaptive concurrency rule (its least and greatest dashed), the most calls in flight at once, and the mean response time.'));
  let limitChart = null;
  // The history's blocks stacked by the kind of rule that blocked, and
  // summed per rule over the range: drawn when a step has blocks.
  const blocksEl = h('div', { class: 'chart', id: 'blocks-history-chart' });
  const blocksBody = h('tbody', { id: 'blocks-by-rule' });
  const blocksBlock = h('div', { hidden: true, id: 'blocks-history' }, h('h3', {}, 'Blocked by reason'), blocksEl,
    h('p', { class: 'muted small' }, 'Per step, the blocked calls stacked by the kind of rule that blocked them; "system" is what no rule of the resource decided (system rules, the rate limit service\'s per-request limits). Below, each rule\'s blocks over the range.'),
    table('Blocked by rule over the range', ['Rule', 'Kind', 'Blocked'], blocksBody));
  let blocksChart = null;
  let blocksReasons = '';
  let blocksParts = [];
  const historySection = section('History', h('div', { class: 'toolbar end' }, picker, instanceField), customForm, historyNote, historyEl, historyKey, blocksBlock, limitBlock);

  /**
   * loadInstances offers the instances that report to the server; the
   * one chosen stays offered even when it is no longer listed.
   */
  async function loadInstances() {
    try {
      const { data } = await api('GET', '/instances');
      const chosen = instanceInput.value;
      const ids = data.items.map((i) => i.id);
      if (chosen && !ids.includes(chosen)) {
        ids.push(chosen);
      }
      const apps = new Map(data.items.map((i) => [i.id, i.app]));
      replace(instanceInput, option('', 'all (summed)'),
        ids.map((id) => option(id, apps.get(id) ? `${id} (${apps.get(id)})` : id, id === chosen)));
      instanceInput.value = chosen;
    } catch (err) {
      if (!(err instanceof ConnectionError)) {
        errors.show(err);
      }
    }
  }
  let history = null;
  let historyStep = '';
  let historyStepMs = 60000;
  let historySeq = 0;

  /**
   * markBreakers marks the breakers' changes on the charts: on the
   * history's, those of its range, at the start of the step they fell in,
   * where that step's figures are drawn.
   */
  function markBreakers() {
    live?.setMarks(breakerMarks);
    const stepS = historyStepMs / 1000;
    // A change seen since the history loaded is in the last 24 hours'.
    const seen = new Set(historyMarks.map((m) => `${m.time} ${m.state}`));
    const since = breakerMarks.filter((m) => m.time >= historyRange[0] && m.time < historyRange[1] && !seen.has(`${m.time} ${m.state}`));
    history?.setMarks([...historyMarks, ...since].map((m) => ({ ...m, time: Math.floor(m.time / stepS) * stepS })));
  }

  /**
   * historyTransitions are the breakers' changes over the history's range
   * (at most the server's 1,000 newest): a 7-day chart marks a change of
   * 5 days ago, which the last 24 hours' list leaves out.
   */
  async function historyTransitions(from, to) {
    const { data } = await api('GET', '/breakers/transitions', { query: { resource: name, from, to } });
    return data.items.map((e) => ({ time: Date.parse(e.time) / 1000, state: e.to }));
  }

  async function loadHistory(fromMs, toMs) {
    const seq = ++historySeq;
    historyNote.textContent = 'Loading…';
    try {
      const bounds = await loadHistorySteps();
      const step = chooseStep(bounds, fromMs, toMs);
      const instance = instanceInput.value;
      const [{ data }, marks] = await Promise.all([
        api('GET', `${resourcePath(name)}/metrics`, {
          query: { from: Math.floor(fromMs), to: Math.ceil(toMs), step: step.name, instance },
        }),
        historyTransitions(Math.floor(fromMs), Math.ceil(toMs)),
      ]);
      if (seq !== historySeq) {
        return;
      }
      historyMarks = marks;
      historyRange = [Math.floor(fromMs) / 1000, Math.ceil(toMs) / 1000];
      if (historyStep !== step.name) {
        history?.destroy();
        history = timeChart(historyEl, {
          height: 280,
          long: true,
          leftLabel: `calls per ${stepLabel(step.stepMs)}`,
          rightLabel: 'avg response time (ms)',
          series: [
            { label: 'Passed', color: colors.pass, unit: 'calls' },
            { label: 'Blocked', color: colors.block, unit: 'calls' },
            { label: 'Shadow-blocked', color: colors.shadow, unit: 'calls', dash: [6, 4] },
            { label: 'Errors', color: colors.error, unit: 'calls' },
            { label: 'Avg RT', color: colors.rt, unit: 'ms', side: 'right', dash: [2, 3] },
          ],
        });
        historyStep = step.name;
        historyStepMs = step.stepMs;
      }
      markBreakers();
      const from = Date.parse(data.from);
      const to = Date.parse(data.to);
      const byTime = new Map(data.points.map((p) => [Date.parse(p.time), p]));
      // A step without a row had no traffic if a server was up in it (the
      // history's covered spans), and is unknown if none was: an outage is
      // a gap, not a zero. The step still under way, which the flusher has
      // not written yet, is left blank too.
      const covered = data.covered.map((c) => [Date.parse(c.from), Date.parse(c.to)]);
      const isCovered = (t) => covered.some(([a, b]) => a <= t && t < b);
      const cols = [[], [], [], [], [], []];
      const now = Date.now();
      let unknown = 0;
      for (let t = from; t < to; t += step.stepMs) {
        const p = byTime.get(t);
        const done = t + step.stepMs <= now;
        const idle = done && isCovered(t);
        const none = p || idle ? 0 : null;
        if (!p && done && !idle) {
          unknown += 1;
        }
        cols[0].push(t / 1000);
        cols[1].push(p?.pass ?? none);
        cols[2].push(p?.block ?? none);
        cols[3].push(p?.shadowBlock ?? none);
        cols[4].push(p?.error ?? none);
        cols[5].push(p && p.complete > 0 ? p.avgRtMs : null);
      }
      history.setData(...cols);
      drawLimitHistory(data.points, from, to, step.stepMs);
      drawBlocks(data.points, from, to, step.stepMs);
      historyEl.dataset.traffic = String(data.points.length);
      historyEl.dataset.unknown = String(unknown);
      historyEl.dataset.instance = instance;
      historyNote.textContent = `${instance ? `Instance ${instance} only. ` : ''}${number(cols[0].length)} steps of ${stepLabel(step.stepMs)}; ${number(data.points.length)} with traffic. `
        + `Figures are as fresh as the last flush (every ${number(bounds.flushIntervalMs / 1000)} s).`;
      replace(historyKey, unknown
        ? `A gap in the lines: no Sluice server was up (${plural(unknown, 'step')} of this range), so what happened is unknown. 0: a server was up and the resource had no calls.`
        : '0 on the lines: a Sluice server was up and the resource had no calls.');
    } catch (err) {
      if (seq === historySeq) {
        historyNote.textContent = err.status === 404 && !instanceInput.value ? 'Sluice has not seen this resource yet: no history.' : messageOf(err);
      }
    }
  }

  // drawBlocks stacks the history's blocks by reason and lists them by
  // rule, if any step has blocks by rule (an instance's own history has
  // none).
  function drawBlocks(points, from, to, stepMs) {
    const stack = byReason(points, from, to, stepMs, Date.now());
    blocksBlock.hidden = stack.reasons.length === 0;
    blocksEl.dataset.reasons = stack.reasons.join(',');
    if (blocksBlock.hidden) {
      return;
    }
    // The stack's top first, so that each lower part is drawn over it.
    const order = stack.reasons.map((r, i) => i).reverse();
    const key = `${stepMs}:${blocksEl.dataset.reasons}`;
    const tops = stack.reasons.map((r, i) => stack.ys[i].map((v, k) => (v === null ? null : stack.ys.slice(0, i + 1).reduce((n, ys) => n + (ys[k] ?? 0), 0))));
    if (blocksReasons !== key) {
      blocksChart?.destroy();
      blocksChart = timeChart(blocksEl, {
        height: 220,
        long: true,
        leftLabel: `blocked calls per ${stepLabel(stepMs)}`,
        series: order.map((i) => ({
          label: reasonLabel(stack.reasons[i]),
          color: reasonColor(stack.reasons[i]),
          fill: `${reasonColor(stack.reasons[i])}66`,
          unit: 'calls',
          shown: (k) => blocksParts[i]?.[k],
        })),
      });
      blocksReasons = key;
    }
    blocksParts = stack.ys;
    blocksChart.setData(stack.xs, ...order.map((i) => tops[i]));
    replace(blocksBody, byRule(points).map((b) => h('tr', { dataset: { rule: b.rule, reason: b.reason } },
      h('th', { scope: 'row' }, b.rule || ruleLabel(b)),
      h('td', {}, reasonLabel(b.reason)),
      h('td', { class: 'num' }, number(b.blocked)))));
  }

  // drawLimitHistory draws the adaptive limit of the history's points, if
  // any has one.
  function drawLimitHistory(points, from, to, stepMs) {
    limitBlock.hidden = !points.some((p) => p.adaptiveLimitLast > 0);
    if (limitBlock.hidden) {
      return;
    }
    limitChart ??= timeChart(limitEl, {
      height: 200,
      long: true,
      leftLabel: 'calls in flight',
      rightLabel: 'avg response time (ms)',
      series: [
        { label: 'Limit', color: colors.block, unit: 'calls' },
        { label: 'Least limit', color: colors.block, unit: 'calls', dash: [4, 4] },
        { label: 'Greatest limit', color: colors.block, unit: 'calls', dash: [4, 4] },
        { label: 'Most in flight', color: colors.conc, unit: 'calls' },
        { label: 'Avg RT', color: colors.rt, unit: 'ms', side: 'right', dash: [2, 3] },
      ],
    });
    const byTime = new Map(points.map((p) => [Date.parse(p.time), p]));
    const cols = [[], [], [], [], [], []];
    for (let t = from; t < to; t += stepMs) {
      const p = byTime.get(t);
      const limited = p?.adaptiveLimitLast > 0;
      cols[0].push(t / 1000);
      cols[1].push(limited ? p.adaptiveLimitLast : null);
      cols[2].push(limited ? p.adaptiveLimitMin : null);
      cols[3].push(limited ? p.adaptiveLimitMax : null);
      cols[4].push(p ? p.maxConcurrency : null);
      cols[5].push(p && p.complete > 0 ? p.avgRtMs : null);
    }
    limitChart.setData(...cols);
    limitEl.dataset.limits = String(cols[1].filter((v) => v !== null).length);
  }

  // A custom range keeps its bounds in the URL (from, to: RFC 3339), so
  // that a reload or a shared link shows the same range.
  const customFrom = Date.parse(ctx.params.get('from') ?? '');
  const customTo = Date.parse(ctx.params.get('to') ?? '');
  let customFromURL = ctx.params.get('range') === 'custom' && !Number.isNaN(customFrom) && !Number.isNaN(customTo);
  if (customFromURL) {
    fromInput.value = localInput(customFrom);
    toInput.value = localInput(customTo);
  }

  function pickRange() {
    const value = picker.querySelector('input:checked')?.value ?? '1h';
    customForm.hidden = value !== 'custom';
    if (value === 'custom') {
      if (customFromURL) {
        customFromURL = false;
        showCustom();
        return;
      }
      ctx.setParams({ range: 'custom', instance: instanceInput.value });
      const now = Date.now();
      fromInput.value ||= localInput(now - 24 * 3600e3);
      toInput.value ||= localInput(now);
      fromInput.focus();
      return;
    }
    ctx.setParams({ range: value === '1h' ? '' : value, instance: instanceInput.value });
    const span = ranges.find(([v]) => v === value)[2];
    const now = Date.now();
    loadHistory(now - span, now);
  }
  picker.addEventListener('change', pickRange);
  customForm.addEventListener('submit', (e) => {
    e.preventDefault();
    showCustom();
  });
  instanceInput.addEventListener('change', () => {
    if (picker.querySelector('input:checked')?.value === 'custom') {
      showCustom();
    } else {
      pickRange();
    }
  });

  function showCustom() {
    const from = new Date(fromInput.value).getTime();
    const to = new Date(toInput.value).getTime();
    if (Number.isNaN(from) || Number.isNaN(to) || from >= to) {
      historyNote.textContent = 'Give a "from" before the "to".';
      return;
    }
    ctx.setParams({ range: 'custom', from: new Date(from).toISOString(), to: new Date(to).toISOString(), instance: instanceInput.value });
    loadHistory(from, to);
  }

  // The hottest values of the last minute, per hotspot rule: the top ones
  // by passes and by blocks. The panel is hidden while the server answers
  // 404 (a resource neither its engine nor an instance tracks, or a server
  // without the endpoint) or 405.
  const hotBody = h('div', { id: 'hot-values' });
  const hotSection = section('Hottest values, last minute', hotBody,
    h('p', { class: 'muted small' }, 'Per hotspot rule, the values of its parameter passed and blocked most over the last minute, summed over the server\'s own engine (the check API\'s traffic) and every instance reporting: each reports its top 20 of each ranking, so a sum with a full ranking is an estimate.'));
  hotSection.hidden = true;

  function hotTable(caption, rows, by) {
    return table(caption, ['Value', 'Passed', 'Blocked'], h('tbody', {}, rows.length
      ? rows.map((v) => h('tr', { dataset: { value: v.value } }, h('th', { scope: 'row' }, v.value),
        h('td', { class: by === 'pass' ? 'num strong' : 'num' }, number(v.pass)),
        h('td', { class: by === 'block' ? 'num strong' : 'num' }, number(v.block))))
      : stateRow(3, 'empty', by === 'pass' ? 'No value passed.' : 'No value was blocked.')));
  }

  async function loadHotValues() {
    try {
      const { data } = await api('GET', `${resourcePath(name)}/hot-values`);
      hotSection.hidden = data.rules.length === 0;
      replace(hotBody, data.rules.map((r) => h('div', { class: 'hot-rule', dataset: { rule: r.rule } },
        h('h3', {}, `${r.rule}: per value of ${r.paramKey}`),
        r.approximate ? h('p', { class: 'muted small' }, 'Estimates: this rule sees more values than the sketch counts one by one.') : null,
        h('div', { class: 'split' },
          h('div', {}, h('h4', {}, 'Most passed'), hotTable(`Values of ${r.paramKey} with the most passes, rule ${r.rule}`, r.byPass, 'pass')),
          h('div', {}, h('h4', {}, 'Most blocked'), hotTable(`Values of ${r.paramKey} with the most blocks, rule ${r.rule}`, r.byBlock, 'block'))))));
    } catch (err) {
      if (err.status === 404 || err.status === 405) {
        hotSection.hidden = true;
      } else if (!(err instanceof ConnectionError)) {
        errors.show(err);
      }
    }
  }

  // Rules of the resource, with a quick enable/disable.
  const rulesBody = h('tbody', {}, stateRow(5, 'loading', 'Loading the rules…'));
  const rulesSection = section('Rules', table('Rules of the resource', ['Rule', 'Kind', 'Mode', 'What it does', 'Enabled'], rulesBody),
    ctx.session.canWrite ? h('p', {}, h('a', { class: 'button', href: `#/rules/new?${new URLSearchParams({ resource: name })}` }, 'New rule for this resource')) : null);

  async function toggle(rule, input) {
    const enabling = input.checked;
    // The box stays as it was until the change is confirmed and made.
    input.checked = rule.enabled;
    const answer = await confirmDialog({
      title: `${enabling ? 'Enable' : 'Disable'} ${rule.name}?`,
      message: enabling
        ? `The rule starts limiting ${name} at once.`
        : `The rule stops limiting ${name} at once; its traffic is then counted, never limited by it.`,
      confirmLabel: enabling ? 'Enable the rule' : 'Disable the rule',
      askReason: true,
    });
    if (!answer) {
      return;
    }
    input.disabled = true;
    errors.clear();
    try {
      const { data } = await api('PATCH', `/rules/${rule.id}`, { body: { enabled: enabling }, headers: ifMatch(rule.version, answer.reason) });
      input.checked = data.enabled;
      Object.assign(rule, data);
      toast(`${rule.name} is now ${rule.enabled ? 'enabled' : 'disabled'} (version ${rule.version}).`);
    } catch (err) {
      input.checked = rule.enabled;
      if (outcomeUnknown(err)) {
        settleRuleWrite({
          rule, version: rule.version, actor: ctx.session.me.name,
          what: `${enabling ? 'Enable' : 'Disable'} ${rule.name}`,
          describe: (rev) => `${rule.name} is now ${rev.rule.enabled ? 'enabled' : 'disabled'}`,
        });
        return;
      }
      if (err.status === 412) {
        errors.text(`${rule.name} was changed by someone else meanwhile; the rules below are reloaded. Check them, then try again.`);
        loadRules();
      } else {
        errors.show(err);
      }
    } finally {
      input.disabled = !ctx.session.canWrite || isPending(`rule:${rule.id}`);
    }
  }

  // promote makes a shadow rule enforce, once confirmed: its would-be
  // blocks (the dashed Shadow-blocked series above) become blocks.
  async function promote(rule, button) {
    const answer = await confirmDialog({
      title: `Enforce ${rule.name}?`,
      message: `The rule stops only counting what it would block and starts blocking ${name}'s calls over its limit at once: the Shadow-blocked series above shows how many that would have been.`,
      confirmLabel: 'Enforce the rule',
      askReason: true,
    });
    if (!answer) {
      return;
    }
    button.disabled = true;
    errors.clear();
    try {
      const { data } = await api('PATCH', `/rules/${rule.id}`, { body: { mode: 'enforce' }, headers: ifMatch(rule.version, answer.reason) });
      toast(`${data.name} now enforces (version ${data.version}).`);
      loadRules();
    } catch (err) {
      if (outcomeUnknown(err)) {
        settleRuleWrite({
          rule, version: rule.version, actor: ctx.session.me.name,
          what: `Enforce ${rule.name}`,
          describe: (rev) => `${rule.name} now ${rev.rule.mode === 'enforce' ? 'enforces' : 'only counts what it would block'}`,
        });
        return;
      }
      button.disabled = false;
      if (err.status === 412) {
        errors.text(`${rule.name} was changed by someone else meanwhile; the rules below are reloaded. Check them, then try again.`);
        loadRules();
      } else {
        errors.show(err);
      }
    }
  }

  // modeCell is a rule's mode; a shadow rule's has its promotion.
  function modeCell(r) {
    if (r.mode !== 'shadow') {
      return 'enforce';
    }
    if (!ctx.session.canWrite) {
      return badge('shadow', 'warn');
    }
    const button = h('button', { type: 'button', class: 'small', 'aria-label': `Enforce ${r.name}`, disabled: isPending(`rule:${r.id}`) }, 'Enforce');
    button.addEventListener('click', () => promote(r, button));
    return [badge('shadow', 'warn'), ' ', button];
  }

  async function loadRules() {
    try {
      const [{ data }, cluster] = await Promise.all([api('GET', '/rules', { query: { resource: name, pageSize: 500 } }), clusterStatus(api)]);
      for (const r of data.items) {
        if (r.retryTimeoutMs) {
          retryMs.set(r.name, r.retryTimeoutMs);
        }
      }
      drawBreakers();
      replace(rulesBody, data.items.length ? data.items.map((r) => {
        const check = h('input', { type: 'checkbox', checked: r.enabled, disabled: !ctx.session.canWrite || isPending(`rule:${r.id}`), 'aria-label': `Enabled: ${r.name}`, dataset: { rule: r.name } });
        check.addEventListener('change', () => toggle(r, check));
        return h('tr', { dataset: { rule: r.name } },
          h('th', { scope: 'row' }, h('a', { href: `#/rules/${r.id}/edit` }, r.name), isDemoRule(r) ? badge('demo', 'info') : null,
            [appBadge(r), expiryBadge(r), ...clusterBadges(r, cluster)].filter(Boolean).map((b) => [' ', b])),
          h('td', {}, kindLabel(r.kind)),
          h('td', {}, modeCell(r)),
          h('td', {}, summary(r), r.kind === 'adaptiveConcurrency' ? h('p', { class: 'adaptive-explanation small', role: 'status' }) : null),
          h('td', {}, check));
      }) : stateRow(5, 'empty', 'No rule names this resource: its traffic is counted, never limited.'));
      facts.textContent = `${data.total} rule${data.total === 1 ? '' : 's'}.`;
      explainAdaptive(feed.latest(name));
    } catch (err) {
      replace(rulesBody, loadError(5, err, loadRules));
    }
  }

  const p = page(name,
    h('p', {}, h('a', { href: '#/' }, '← Overview'), ' · ', h('a', { href: `#/rules?${new URLSearchParams({ resource: name })}` }, 'Rules of this resource')),
    facts, errors.el, breakerSection, liveSection, historySection, hotSection, rulesSection);

  // The charts measure their width, so they are made once the page is in.
  requestAnimationFrame(() => {
    if (gone) {
      return;
    }
    live = timeChart(liveEl, {
      height: 240,
      leftLabel: 'calls/s',
      rightLabel: 'avg response time (ms)',
      series: [
        { label: 'Passed', color: colors.pass, unit: '/s' },
        { label: 'Blocked', color: colors.block, unit: '/s' },
        { label: 'Shadow-blocked', color: colors.shadow, unit: '/s', dash: [6, 4] },
        { label: 'Avg RT', color: colors.rt, unit: 'ms', side: 'right', dash: [2, 3] },
      ],
    });
    inFlight = timeChart(inFlightEl, {
      height: 160,
      leftLabel: 'calls in flight',
      series: [{ label: 'In flight', color: colors.conc, unit: 'calls' }, { label: 'Adaptive limit', color: colors.block, unit: 'calls', dash: [4, 4] }],
    });
    markBreakers();
    drawLive();
    cleanups.push(feed.subscribe(drawLive));
    pickRange();
  });
  loadBreakers();
  loadRules();
  cleanups.push(onSettled(loadRules));
  loadInstances();
  loadHotValues();
  // The breakers' window figures and the hottest values move without an
  // event to announce it.
  const clockTimer = setInterval(() => {
    for (const [b, el] of clocks.values()) {
      el.textContent = breakerClock(b);
    }
  }, 1000);
  const breakerTimer = setInterval(() => {
    if (!breakerSection.hidden) {
      loadBreakers();
    }
    loadHotValues();
  }, breakerRefreshMs);

  return {
    ...p,
    cleanup() {
      gone = true;
      clearInterval(breakerTimer);
      clearInterval(clockTimer);
      historySeq += 1;
      for (const undo of cleanups) {
        undo();
      }
      live?.destroy();
      inFlight?.destroy();
      history?.destroy();
      blocksChart?.destroy();
    },
  };
}
