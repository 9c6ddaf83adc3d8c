// What a flow or hotspot rule would have blocked over the last day and
// week, as the server estimates it from the minute history (docs/impact.md):
// a panel for the rule form, refreshed as its fields change, and the lines
// an apply plan shows under each rule it creates or changes.

import { api } from './api.js';
import { h, replace } from './dom.js';
import { number, timeEl } from './format.js';
import { messageOf } from './ui.js';

/** estimable are the kinds the server estimates. */
const estimable = new Set(['flow', 'hotspot']);

/** rangeLabel words a range of history. */
const rangeLabel = { '24h': 'Last 24 hours', '7d': 'Last 7 days' };

/** calls words a count of calls. */
function calls(n) {
  return `${number(n)} call${n === 1 ? '' : 's'}`;
}

/** blocked words the bounds of what would have been blocked. */
function blocked(low, high) {
  return low === high ? calls(high) : `${number(low)} to ${calls(high)}`;
}

/** rangeLines draws one range of an estimate. */
function rangeLines(r) {
  const label = rangeLabel[r.range] ?? r.range;
  if (!r.minutesSeen) {
    return h('li', {}, h('strong', {}, `${label}: `), 'no traffic recorded, so nothing to estimate from.');
  }
  if (!r.minutesBlocked) {
    return h('li', {}, h('strong', {}, `${label}: `), `would have blocked nothing of ${calls(r.calls)}.`);
  }
  return h('li', {}, h('strong', {}, `${label}: `),
    `would have blocked about ${blocked(r.blockedLow, r.blockedHigh)} of ${calls(r.calls)}, in ${number(r.minutesBlocked)} minute${r.minutesBlocked === 1 ? '' : 's'}.`,
    h('ul', { class: 'impact-minutes' }, r.minutes.map((m) => h('li', {}, timeEl(m.time), ': ',
      `${calls(m.calls)}, ${number(m.busiestSecond)} in the busiest second → ${blocked(m.blockedLow, m.blockedHigh)} blocked`))));
}

/** estimateView draws an estimate: each range, then its notes. */
export function estimateView(est) {
  return [
    h('ul', { class: 'impact-ranges' }, est.ranges.map(rangeLines)),
    est.notes.length ? h('ul', { class: 'impact-notes muted' }, est.notes.map((n) => h('li', {}, n))) : null,
  ];
}

/**
 * impactPanel is the rule form's estimate: update(rule) asks the server
 * again, half a second after the last change, for a flow or hotspot rule,
 * and hides the panel for other kinds. An answer that comes after a newer
 * question is dropped.
 */
export function impactPanel() {
  const body = h('div', { 'aria-live': 'polite' });
  const el = h('section', { class: 'card impact', id: 'rule-impact', 'aria-labelledby': 'rule-impact-title', hidden: true },
    h('h3', { id: 'rule-impact-title' }, 'What this rule would have blocked (estimate)'),
    h('p', { class: 'muted' }, 'From the resource\'s minute history: each minute\'s calls and its busiest second, not every second, so the figures are bounds (docs/impact.md in the repository says how they are made).'),
    body);
  let timer = null;
  let asked = 0;
  async function ask(rule, n) {
    try {
      const { data } = await api('POST', '/rules/impact', { body: rule });
      if (n === asked) {
        replace(body, estimateView(data));
      }
    } catch (err) {
      if (n === asked) {
        replace(body, h('p', { class: 'muted' }, err.status === 422
          ? 'Complete the fields to see the estimate.'
          : `No estimate: ${messageOf(err)}`));
      }
    }
  }
  return {
    el,
    update(rule) {
      clearTimeout(timer);
      el.hidden = !estimable.has(rule.kind) || !rule.resource;
      if (el.hidden) {
        return;
      }
      const n = ++asked;
      timer = setTimeout(() => ask(rule, n), 500);
    },
    cleanup() {
      clearTimeout(timer);
    },
  };
}
