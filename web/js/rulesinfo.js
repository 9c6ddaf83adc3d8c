// What the console knows about rule fields: their labels and units, the
// order they are listed in, and a one-line summary of a rule.

import { number } from './format.js';

/** envelopeFields are the fields every rule has, in display order. */
export const envelopeFields = ['name', 'kind', 'resource', 'enabled', 'mode', 'description'];

/** kindFields are each kind's own fields, in display order. */
export const kindFields = {
  flow: ['metric', 'threshold', 'statIntervalMs', 'controlBehavior', 'maxQueueingTimeMs',
    'tokenCalculateStrategy', 'warmUpPeriodSec', 'warmUpColdFactor', 'relationStrategy', 'refResource'],
  circuitBreaker: ['strategy', 'threshold', 'maxAllowedRtMs', 'retryTimeoutMs', 'minRequestAmount',
    'statIntervalMs', 'probeNum'],
};

/** kindLabel names a kind for people. */
export function kindLabel(kind) {
  return { flow: 'Flow', circuitBreaker: 'Circuit breaker' }[kind] ?? kind;
}

/** serverFields are kept by the server and never compared. */
export const serverFields = new Set(['id', 'version', 'createdAt', 'updatedAt']);

/** orderedFields lists the fields of the given rules in display order. */
export function orderedFields(...rules) {
  const present = new Set(rules.filter(Boolean).flatMap((r) => Object.keys(r)));
  const order = [...envelopeFields, ...kindFields.flow, ...kindFields.circuitBreaker];
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
      return `≤ ${number(rule.threshold)} in flight`;
    }
    let s = `≤ ${number(rule.threshold)} per ${number(rule.statIntervalMs ?? 1000)} ms`;
    if (rule.controlBehavior === 'throttling') {
      s += `, spaced evenly (wait ≤ ${number(rule.maxQueueingTimeMs ?? 0)} ms)`;
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
