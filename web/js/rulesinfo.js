// What the console knows about rule fields: the server's field tables
// (GET /rules/fields: labels, help, defaults, ranges, options, when each
// field applies, and the demo's marks), the order fields are listed in, and
// a one-line summary of a rule.

import { api } from './api.js';
import { h } from './dom.js';
import { number, span, utc } from './format.js';

let schema = null;
let loading = null;

/**
 * loadRuleSchema fetches the rule field tables once; pages that render
 * rules run after it (app.js waits for it once signed in).
 */
export async function loadRuleSchema() {
  if (schema) {
    return schema;
  }
  loading ??= api('GET', '/rules/fields').then(({ data }) => {
    schema = data;
    return data;
  }).finally(() => {
    loading = null;
  });
  return loading;
}

/** ruleSchema is the loaded field tables: {envelope, kinds, demo}. */
export function ruleSchema() {
  return schema ?? { envelope: [], kinds: [], demo: { namePrefix: null, descriptionPrefix: null } };
}

/** kindOf is a kind's entry in the tables: {kind, label, title, help, fields}. */
export function kindOf(kind) {
  return ruleSchema().kinds.find((k) => k.kind === kind);
}

/** kindLabel names a kind for people. */
export function kindLabel(kind) {
  return kindOf(kind)?.label ?? kind;
}

/** fieldOf is a kind's field entry, if it has one. */
function fieldOf(kind, name) {
  return kindOf(kind)?.fields.find((f) => f.name === name);
}

/** optionLabel is the form's short label of a field's option: its words before a colon. */
function optionLabel(kind, name, value) {
  const label = fieldOf(kind, name)?.options?.find((o) => o.value === value)?.label;
  return label ? label.split(':')[0] : value;
}

/** strategyLabel names a circuit breaker strategy as the rule form does. */
export function strategyLabel(strategy) {
  return optionLabel('circuitBreaker', 'strategy', strategy);
}

/**
 * formWords rewrites an API message about a kind's fields in the form's
 * words: a field's name becomes its label and an option's value its
 * label, each with the API's name after it for those who write rules as
 * files ("is required with Warm up (warmUp)").
 */
export function formWords(kind, message) {
  const fields = kindOf(kind)?.fields ?? [];
  const names = new Map();
  for (const f of fields) {
    names.set(f.name, f.label);
    for (const o of f.options ?? []) {
      names.set(o.value, o.label.split(':')[0]);
    }
  }
  return message.replace(/\b[a-z][A-Za-z]*[A-Z][A-Za-z]*\b|\b[a-z]+\b/g, (word) => {
    const label = names.get(word);
    if (!label || label === word) {
      return word;
    }
    return label.includes(`(${word})`) ? label : `${label} (${word})`;
  });
}

/** serverFields are kept by the server and never compared. */
export const serverFields = new Set(['id', 'version', 'createdAt', 'updatedAt', 'expired']);

/** orderedFields lists the fields of the given rules in display order. */
export function orderedFields(...rules) {
  const present = new Set(rules.filter(Boolean).flatMap((r) => Object.keys(r)));
  const { envelope, kinds } = ruleSchema();
  const order = [...envelope.map((f) => f.name).toSpliced(1, 0, 'kind'), ...kinds.flatMap((k) => k.fields.map((f) => f.name))];
  const known = [...new Set(order)].filter((f) => present.has(f));
  const rest = [...present].filter((f) => !order.includes(f) && !serverFields.has(f)).sort();
  return [...known, ...rest];
}

/** show writes a field's value for people; absent is "—". */
export function show(value) {
  if (value === undefined || value === null) {
    return '—';
  }
  if (typeof value === 'string') {
    return value === '' ? '""' : value;
  }
  return JSON.stringify(value);
}

/**
 * summary is a rule's effect in a few words, from its kind's summary
 * template (GET /rules/fields; its syntax is engine.Kind's Summary).
 */
export function summary(rule) {
  const kind = kindOf(rule.kind);
  return kind ? fill(kind.summary ?? '', rule, kind).text : '';
}

/**
 * fill renders template from its start up to a ']' closing a section (or
 * its end) for rule, and answers the text and where it stopped.
 */
function fill(template, rule, kind, from = 0) {
  let text = '';
  let i = from;
  while (i < template.length && template[i] !== ']') {
    const c = template[i];
    if (c === '{') {
      const end = template.indexOf('}', i);
      const [name, filter] = template.slice(i + 1, end).split('|');
      text += shown(valueOf(rule, kind, name), filter);
      i = end + 1;
    } else if (c === '[') {
      const colon = template.indexOf(':', i);
      const [, name, not, values] = template.slice(i + 1, colon).match(/^([A-Za-z]+)(!?)=(.*)$/);
      const inner = fill(template, rule, kind, colon + 1);
      const value = valueOf(rule, kind, name);
      const matches = values.split(',').includes(isEmpty(value) ? '' : String(value));
      if (matches !== (not === '!')) {
        text += inner.text;
      }
      i = inner.end + 1;
    } else {
      text += c;
      i += 1;
    }
  }
  return { text, end: i };
}

/** valueOf is a rule's field, or its default when the rule shows none. */
function valueOf(rule, kind, name) {
  return rule[name] ?? kind.fields.find((f) => f.name === name)?.default;
}

/** isEmpty tells an empty list or object from a value. */
function isEmpty(value) {
  return value === undefined || value === null || value === ''
    || (typeof value === 'object' && Object.keys(value).length === 0);
}

/**
 * shown writes a field's value in a summary: a number as the console
 * writes numbers, an interval in ms ("per") in words, a list's first five
 * names and an object's first three entries.
 */
function shown(value, filter) {
  if (filter === 'per') {
    if (value === 1000) {
      return 'second';
    }
    return value % 1000 === 0 ? `${number(value / 1000)} seconds` : `${number(value)} ms`;
  }
  if (Array.isArray(value)) {
    return value.slice(0, 5).join(', ') + (value.length > 5 ? ` and ${value.length - 5} more` : '');
  }
  if (value && typeof value === 'object') {
    const items = Object.entries(value);
    return items.slice(0, 3).map(([k, v]) => `${k}: ${number(v)}`).join(', ') + (items.length > 3 ? ` and ${items.length - 3} more` : '');
  }
  return typeof value === 'number' ? number(value) : String(value ?? '');
}

/**
 * ruleTarget says what a rule guards, for sentences: its resource, or
 * for a system rule (which has none) every inbound call of an engine.
 */
export function ruleTarget(rule) {
  return rule.resource || 'every inbound call of each engine';
}

/** stateLabel names a circuit breaker state for people. */
export function stateLabel(state) {
  return { closed: 'closed', open: 'open', halfOpen: 'half-open' }[state] ?? state;
}

/** stateKind is the badge colour of a breaker state. */
export function stateKind(state) {
  return { closed: 'ok', open: 'bad', halfOpen: 'warn' }[state] ?? 'muted';
}

/** isDemoRule tells a rule seeded by sluice --demo, by the demo's marks. */
export function isDemoRule(rule) {
  const { namePrefix, descriptionPrefix } = ruleSchema().demo;
  return namePrefix !== null && rule.name.startsWith(namePrefix) && (rule.description ?? '').startsWith(descriptionPrefix);
}

/**
 * expiryBadge tells when a rule with expiresAt stops applying: "expires in
 * 3 h 20 min", or "Expired" once the server lists it expired; null for a
 * rule that never expires.
 */
export function expiryBadge(rule, nowMs = Date.now()) {
  if (rule.expired) {
    return h('span', { class: 'badge bad', dataset: { expiry: 'expired' }, title: rule.expiresAt ? `Expired at ${utc(new Date(rule.expiresAt))}: no longer applied` : 'Expired: no longer applied' }, 'Expired');
  }
  if (!rule.expiresAt) {
    return null;
  }
  const at = new Date(rule.expiresAt);
  const left = at.getTime() - nowMs;
  return h('span', { class: 'badge warn', dataset: { expiry: 'pending' }, title: `Stops applying at ${utc(at)}` },
    left > 0 ? `expires in ${span(left)}` : 'expiring now');
}

/** appBadge names the app a rule is scoped to, if any. */
export function appBadge(rule) {
  return rule.app ? h('span', { class: 'badge info', dataset: { app: rule.app }, title: `Reaches only the instances of the app ${rule.app}` }, `app: ${rule.app}`) : null;
}

/**
 * clusterBadges say that a flow rule's threshold is shared by every engine
 * ("cluster") and, while the shared count (Redis) is unreachable, what
 * each engine does instead ("fallback: local"); cluster is GET /cluster's
 * answer, or null when it could not be read. Empty for other rules.
 */
export function clusterBadges(rule, cluster) {
  if (rule.kind !== 'flow' || rule.scope !== 'cluster') {
    return [];
  }
  const badges = [h('span', { class: 'badge info', dataset: { scope: 'cluster' }, title: 'One threshold for every engine together (server replicas and instances), counted in Redis' }, 'cluster')];
  const state = cluster?.rules.find((r) => r.name === rule.name);
  if (cluster?.state === 'fallback' || state?.fallingBack) {
    const fallback = rule.clusterFallback ?? 'local';
    const what = { local: 'each engine limits its own traffic', pass: 'every call passes', block: 'every call is blocked' }[fallback] ?? fallback;
    badges.push(h('span', { class: 'badge warn', dataset: { fallback }, title: `Redis is unreachable${cluster.lastError ? ` (${cluster.lastError})` : ''}: ${what}` }, `fallback: ${fallback}`));
  }
  return badges;
}

/** clusterStatus reads GET /cluster, or null when it cannot be read. */
export async function clusterStatus(api) {
  try {
    const { data } = await api('GET', '/cluster');
    return data.enabled ? data : null;
  } catch {
    return null;
  }
}
