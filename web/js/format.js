// Times and numbers as people read them: times in the browser's own zone
// with UTC on hover, numbers with their unit.

import { h } from './dom.js';

/** zone is the browser's time zone, named on chart axes. */
export const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });
const clock = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/** utc writes a time as "2026-03-02 14:05:00 UTC". */
export function utc(date) {
  return date.toISOString().replace('T', ' ').replace(/\.\d+Z$/, ' UTC');
}

function toDate(value) {
  if (value === null || value === undefined || value === '') {
    return null;
  }
  const d = value instanceof Date ? value : new Date(value);
  return Number.isNaN(d.getTime()) ? null : d;
}

/** localTime writes a time in the browser's zone, date included. */
export function localTime(value) {
  const d = toDate(value);
  return d ? dateTime.format(d) : '—';
}

/** clockTime writes a time of day in the browser's zone. */
export function clockTime(value) {
  const d = toDate(value);
  return d ? clock.format(d) : '—';
}

/**
 * timeEl is a <time> element: the browser's zone as text, the time in UTC
 * on hover (title) and in its datetime attribute.
 */
export function timeEl(value, short) {
  const d = toDate(value);
  if (!d) {
    return h('span', { class: 'muted' }, '—');
  }
  return h('time', { datetime: d.toISOString(), title: utc(d) }, short ? clockTime(d) : dateTime.format(d));
}

const grouped = new Intl.NumberFormat(undefined, { maximumFractionDigits: 0 });
const oneDecimal = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/**
 * decimalNumber reads text written as a JSON number (100, -2.5, 1e3), as
 * the API's number fields take them, and answers null for anything else:
 * 0x10, 0b101, Infinity, 1_000, .5 are no numbers here, though Number()
 * reads most of them.
 */
export function decimalNumber(text) {
  return /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/.test(text) ? Number(text) : null;
}

/** number writes n with one decimal under 100 and none above. */
export function number(n) {
  if (n === null || n === undefined || Number.isNaN(n)) {
    return '—';
  }
  return Math.abs(n) < 100 ? oneDecimal.format(n) : grouped.format(n);
}

/**
 * percent writes a share (0 to 1) as a percentage, one decimal at most:
 * "100%", "12.5%", and "<0.1%" for a share too small to show but not 0.
 */
export function percent(share) {
  if (share > 0 && share < 0.001) {
    return '<0.1%';
  }
  return `${oneDecimal.format(share * 100)}%`;
}

/** rate writes a rate in requests a second. */
export function rate(qps) {
  return `${number(qps)}/s`;
}

/**
 * ms writes an average response time in milliseconds: "—" when no call
 * completed (completed, a count or rate, is 0), "<1 ms" under a
 * millisecond — the engine counts whole milliseconds, so 0 with calls
 * completed is fast, not missing.
 */
export function ms(value, completed) {
  if (value === null || value === undefined || Number.isNaN(value) || (!value && !completed)) {
    return '—';
  }
  return value < 1 ? '<1 ms' : `${number(value)} ms`;
}

/** plural writes a count with its noun: "1 error", "3 errors". */
export function plural(n, noun, nouns = `${noun}s`) {
  return `${number(n)} ${n === 1 ? noun : nouns}`;
}

/**
 * stepLabel names a history step for people by its length, as the API
 * answers it: "5 min", "1 h", "1 day".
 */
export function stepLabel(stepMs) {
  if (stepMs % 86400e3 === 0) {
    const days = stepMs / 86400e3;
    return `${number(days)} ${days === 1 ? 'day' : 'days'}`;
  }
  if (stepMs % 3600e3 === 0) {
    return `${number(stepMs / 3600e3)} h`;
  }
  return `${number(stepMs / 60e3)} min`;
}

/**
 * span writes a length of time for people, to the minute above an hour:
 * "45 s", "12 min", "3 h 20 min", "2 days 4 h".
 */
export function span(msValue) {
  const s = Math.max(0, Math.floor(msValue / 1000));
  if (s < 60) {
    return `${s} s`;
  }
  const min = Math.floor(s / 60);
  if (min < 60) {
    return `${min} min`;
  }
  const hours = Math.floor(min / 60);
  if (hours < 24) {
    return min % 60 ? `${hours} h ${min % 60} min` : `${hours} h`;
  }
  const days = Math.floor(hours / 24);
  const unit = days === 1 ? 'day' : 'days';
  return hours % 24 ? `${days} ${unit} ${hours % 24} h` : `${days} ${unit}`;
}

/**
 * openFor says how long a breaker has been open and when it lets a probe
 * through, as an on-call operator asks it: "open for 12 s, next probe in
 * 8 s". retryMs is its rule's retryTimeoutMs, undefined when not known.
 */
export function openFor(sinceMs, retryMs, nowMs = Date.now()) {
  const probe = retryMs === undefined ? ''
    : sinceMs + retryMs > nowMs ? `, next probe in ${span(sinceMs + retryMs - nowMs)}` : ', the next call probes';
  return `open for ${span(nowMs - sinceMs)}${probe}`;
}

let agoTimer = 0;

/**
 * tickAgo rewrites every relative time on the page each second: "12 s ago"
 * keeps counting when nothing redraws its page, as in an outage, where a
 * frozen "0 s ago" would read as live.
 */
function tickAgo() {
  const now = Date.now();
  for (const el of document.querySelectorAll('time[data-ago]')) {
    el.textContent = `${span(now - Date.parse(el.dateTime))} ago`;
  }
}

/** ago is a <time> element reading how long ago value was ("12 s ago"), ticking, the time on hover. */
export function ago(value, nowMs = Date.now()) {
  const d = toDate(value);
  if (!d) {
    return h('span', { class: 'muted' }, '—');
  }
  agoTimer ||= setInterval(tickAgo, 1000);
  return h('time', { datetime: d.toISOString(), title: `${dateTime.format(d)} (${utc(d)})`, dataset: { ago: '' } }, `${span(nowMs - d.getTime())} ago`);
}

/**
 * localInput writes a time for a datetime-local input, in the browser's
 * zone, to the minute or with seconds.
 */
export function localInput(value, seconds) {
  const d = toDate(value);
  if (!d) {
    return '';
  }
  return new Date(d.getTime() - d.getTimezoneOffset() * 60e3).toISOString().slice(0, seconds ? 19 : 16);
}

/** appsText writes a scope (docs/api.md, "Per-app scopes"): its apps, or all when there is none. */
export function appsText(apps) {
  return apps?.length ? apps.join(', ') : 'all';
}

/**
 * parseApps reads the apps typed in a scope field, separated by commas or
 * spaces: null when there are none (no scope), for the API to check the
 * names themselves.
 */
export function parseApps(text) {
  const apps = text.split(/[\s,]+/).filter(Boolean);
  return apps.length ? apps : null;
}
