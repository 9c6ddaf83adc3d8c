// Blocked calls by the rule that blocked them and its kind (reason), as
// the history's points and the resource list's last minute give them
// (blockedBy): their words, their colours, and the figures the resource
// page stacks and the overview names.

import { colors } from './charts.js';
import { number } from './format.js';

/** reasons are the kinds of rule that block, in the order they are stacked. */
export const reasons = Object.freeze(['flow', 'concurrency', 'hotspot', 'circuitBreaker', 'adaptive', 'authority', 'clusterFallback', 'system']);

const labels = {
  flow: 'Flow',
  concurrency: 'Concurrency',
  hotspot: 'Hotspot',
  circuitBreaker: 'Circuit breaker',
  adaptive: 'Adaptive concurrency',
  authority: 'Authority',
  clusterFallback: 'Cluster fallback',
  system: 'System',
};

/** reasonLabel is a reason in words. */
export function reasonLabel(reason) {
  return labels[reason] ?? reason;
}

/** reasonColor is a reason's colour in the active scheme. */
export function reasonColor(reason) {
  return colors.reason(reason);
}

/**
 * ruleLabel names what blocked: the rule, or for reason system (rule "")
 * what no rule of the resource decided.
 */
export function ruleLabel(b) {
  if (b.rule) {
    return `${reasonLabel(b.reason).toLowerCase()} rule ${b.rule}`;
  }
  return b.reason === 'system' ? 'system rules' : `${reasonLabel(b.reason).toLowerCase()} rules`;
}

/**
 * byReason sums points' blockedBy per reason, step by step: it returns
 * the reasons that blocked (in the order of reasons) and, for each, its
 * blocks per step of xs (null where the step has no point and is not
 * over, as the history chart draws it).
 */
export function byReason(points, from, to, stepMs, now) {
  const byTime = new Map(points.map((p) => [Date.parse(p.time), p]));
  const seen = new Set(points.flatMap((p) => (p.blockedBy ?? []).map((b) => b.reason)));
  const shown = reasons.filter((r) => seen.has(r));
  const xs = [];
  const ys = shown.map(() => []);
  for (let t = from; t < to; t += stepMs) {
    const p = byTime.get(t);
    const none = p || t + stepMs <= now ? 0 : null;
    xs.push(t / 1000);
    shown.forEach((r, i) => {
      const sum = (p?.blockedBy ?? []).filter((b) => b.reason === r).reduce((n, b) => n + b.blocked, 0);
      ys[i].push(p ? sum : none);
    });
  }
  return { reasons: shown, xs, ys };
}

/** byRule sums points' blockedBy per reason and rule, most first. */
export function byRule(points) {
  const sums = new Map();
  for (const b of points.flatMap((p) => p.blockedBy ?? [])) {
    const key = `${b.reason}\u0000${b.rule}`;
    const sum = sums.get(key) ?? { reason: b.reason, rule: b.rule, blocked: 0 };
    sum.blocked += b.blocked;
    sums.set(key, sum);
  }
  return [...sums.values()].sort((a, b) => b.blocked - a.blocked || (a.rule < b.rule ? -1 : a.rule > b.rule ? 1 : 0));
}

/**
 * blockedByText names what blocked a resource in a minute, most first:
 * "flow rule cap 25 · hotspot rule per-user 3"; "" when nothing did.
 */
export function blockedByText(list) {
  return byRule([{ blockedBy: list ?? [] }]).map((b) => `${ruleLabel(b)} ${number(b.blocked)}`).join(' · ');
}
