// Writes whose answer never came. A write that timed out reached a server
// that may have made it or not: the console never guesses. It says
// "outcome unknown — checking…", asks the server again once it answers,
// and says what happened. Until then the object is pending, and the pages
// keep its controls disabled, so that a second click cannot race the
// first.

import { api, ConnectionError } from './api.js';
import { connection } from './connection.js';
import { h, replace } from './dom.js';
import { messageOf } from './ui.js';

const pending = new Set();
const settledListeners = new Set();

/**
 * outcomeUnknown tells whether a write's error leaves its outcome
 * unknown: the request went out and no answer came in time. A refused
 * connection or any answer, an error status included, is known.
 */
export function outcomeUnknown(err) {
  return err instanceof ConnectionError && err.timedOut;
}

/** isPending tells whether a write to key ("rule:3") awaits its outcome. */
export function isPending(key) {
  return pending.has(key);
}

/**
 * onSettled calls fn(key, made) when a pending write's outcome is known
 * (made: whether the write was made, false when it is still unknown); it
 * returns the undo. Pages redraw then, since the object may have changed.
 */
export function onSettled(fn) {
  settledListeners.add(fn);
  return () => settledListeners.delete(fn);
}

/** serverAnswers resolves once the API answers again. */
function serverAnswers() {
  return new Promise((resolve) => {
    const undo = connection.subscribe((state) => {
      if (!state.api) {
        resolve();
        queueMicrotask(() => undo());
      }
    });
  });
}

/**
 * The lines live outside the page, under the connection banner: the page
 * is redrawn when the server answers again, and the outcome of a write
 * made at 3 a.m. must stay in sight until it is read.
 */
function line(key) {
  const el = h('div', { class: 'alert warn outcome', role: 'status', dataset: { outcome: key } });
  document.getElementById('outcomes').append(el);
  return el;
}

function dismiss(el) {
  return h('button', { type: 'button', class: 'link', onclick: () => el.remove() }, 'Dismiss');
}

/**
 * settle follows a write to key that timed out: it shows what was asked
 * (what, "Disable orders-qps") as of unknown outcome and keeps key pending
 * until check, run once the server answers, re-reads the object and
 * answers {made, message}. A check that gets no answer either waits for
 * the server again.
 */
export async function settle({ key, what, check }) {
  pending.add(key);
  const el = line(key);
  replace(el, h('p', {}, h('strong', {}, `${what}: outcome unknown — checking…`),
    ' The server did not answer in time, so the change may have been made or not. The console asks again once the server answers; do not make it twice meanwhile.'));
  let made = false;
  for (;;) {
    await serverAnswers();
    try {
      let message;
      ({ made, message } = await check());
      el.className = `alert ${made ? 'ok' : 'info'} outcome`;
      replace(el, h('p', {}, h('strong', {}, `${what}: ${made ? 'made' : 'not made'}.`), ' ', message, ' ', dismiss(el)));
      break;
    } catch (err) {
      if (!(err instanceof ConnectionError)) {
        el.className = 'alert error outcome';
        replace(el, h('p', {}, h('strong', {}, `${what}: outcome still unknown.`), ' ', messageOf(err), ' Reload the page to see the object as it is.', ' ', dismiss(el)));
        break;
      }
    }
  }
  pending.delete(key);
  for (const fn of settledListeners) {
    fn(key, made);
  }
}

/**
 * settleRuleWrite follows a write to a rule sent with If-Match at version
 * (toggle, promote, save, rollback, delete) that timed out. If-Match lets
 * at most one write from that version be made, so the rule's revision
 * version+1, if there is one, tells what happened: it is this write when
 * its actor is actor, someone else's otherwise. describe(rev) words the
 * rule as that revision left it ("orders-qps is now disabled").
 */
export function settleRuleWrite({ rule, version, what, actor, describe }) {
  return settle({
    key: `rule:${rule.id}`,
    what,
    async check() {
      const { data } = await api('GET', `/rules/${rule.id}/revisions`, { query: { pageSize: 50 } });
      const rev = data.items.find((r) => r.version === version + 1);
      if (!rev) {
        const newest = data.items[0];
        return { made: false, message: `${rule.name} is still version ${newest?.version ?? version}. Make the change again if you still mean to.` };
      }
      if (rev.actor !== actor) {
        return { made: false, message: `${rev.actor} changed ${rule.name} first, to version ${rev.version}: check it, then make the change again if you still mean to.` };
      }
      return { made: true, message: `${describe(rev)} (version ${rev.version}).` };
    },
  });
}

/**
 * settleRuleCreate follows the creation of a rule named name that timed
 * out: the rule of that name, if there is one, was made by this write when
 * its first version's actor is actor.
 */
export function settleRuleCreate({ name, actor }) {
  return settle({
    key: `rule:new:${name}`,
    what: `Create ${name}`,
    async check() {
      const { data } = await api('GET', '/rules', { query: { q: name, pageSize: 500 } });
      const rule = data.items.find((r) => r.name === name);
      if (!rule) {
        return { made: false, message: `No rule is named ${name}. Create it again if you still mean to.` };
      }
      const { data: revs } = await api('GET', `/rules/${rule.id}/revisions`, { query: { pageSize: 500 } });
      const first = revs.items.find((r) => r.version === 1);
      if (first?.actor !== actor) {
        return { made: false, message: `${first?.actor ?? 'Someone else'} created a rule named ${name} first: check it.` };
      }
      return { made: true, message: `${name} is created (version ${rule.version}).` };
    },
  });
}

/**
 * settleCreate follows the creation of name in the list at path (a token,
 * a user) that timed out. Names are unique there (a second create of one
 * is refused), so one of that name now was made by this write, unless
 * someone made it at the same moment. lost says what the lost answer held
 * that cannot be read again (a token's secret), if anything.
 */
export function settleCreate({ what, path, name, nameOf, lost }) {
  return settle({
    key: `${path}:new:${name}`,
    what,
    async check() {
      const { data } = await api('GET', path, { query: { pageSize: 500 } });
      if (!data.items.some((it) => nameOf(it) === name)) {
        return { made: false, message: `There is no ${name}. Make it again if you still mean to.` };
      }
      return { made: true, message: `${name} exists now.${lost ? ` ${lost}` : ''}` };
    },
  });
}

/**
 * settleDelete follows the deletion of the object at itemPath (key its
 * pending key) that timed out: it was made if the object is not found
 * any more.
 */
export function settleDelete({ key, what, itemPath, name }) {
  return settle({
    key,
    what,
    async check() {
      try {
        await api('GET', itemPath);
      } catch (err) {
        if (err.status === 404) {
          return { made: true, message: `${name} is deleted.` };
        }
        throw err;
      }
      return { made: false, message: `${name} is still there. Delete it again if you still mean to.` };
    },
  });
}
