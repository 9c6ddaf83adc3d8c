// What the console knows about rule fields: the server's field tables
// (GET /rules/fields: labels, help, defaults, ranges, options, when each
// field applies, and the demo's marks), the order fields are listed in, and
// a one-line summary of a rule.

import { api } from './api.js';
import { number } from './format.js';

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

/** fieldDefault is the default of a kind's field, if it has one. */
function fieldDefault(kind, name) {
  return kindOf(kind)?.fields.find((f) => f.name === name)?.default;
}

/** serverFields are kept by the server and never compared. */
export const serverFields = new Set(['id', 'version', 'createdAt', 'updatedAt']);

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

/** summary is a rule's effect in a few words. */
export function summary(rule) {
  if (rule.kind === 'flow') {
    if (rule.metric === 'concurrency') {
      return `${number(rule.threshold)} in flight at most`;
    }
    const intervalMs = rule.statIntervalMs ?? fieldDefault('flow', 'statIntervalMs');
    let s = intervalMs === 1000
      ? `${number(rule.threshold)} per second`
      : `${number(rule.threshold)} per ${intervalMs % 1000 === 0 ? `${number(intervalMs / 1000)} seconds` : `${number(intervalMs)} ms`}`;
    if (rule.controlBehavior === 'throttling') {
      s += `, spaced evenly (wait up to ${number(rule.maxQueueingTimeMs ?? fieldDefault('flow', 'maxQueueingTimeMs'))} ms)`;
    }
    if (rule.tokenCalculateStrategy === 'warmUp') {
      s += `, warm-up ${number(rule.warmUpPeriodSec)} s`;
    }
    if (rule.relationStrategy === 'associated') {
      s += `, by the traffic of ${rule.refResource}`;
    }
    return s;
  }
  if (rule.kind === 'circuitBreaker') {
    const what = {
      slowRequestRatio: `slow (> ${number(rule.maxAllowedRtMs)} ms) ratio > ${number(rule.threshold)}`,
      errorRatio: `error ratio > ${number(rule.threshold)}`,
      errorCount: `errors ≥ ${number(rule.threshold)}`,
    }[rule.strategy] ?? rule.strategy;
    return `opens on ${what} in ${number(rule.statIntervalMs)} ms, retries after ${number(rule.retryTimeoutMs)} ms`;
  }
  return '';
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
