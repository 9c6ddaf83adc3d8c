// A rule's history: every version, newest first, with who made it, why,
// and what it changed field by field; any earlier version can be restored
// in one click (a rollback makes it the newest version).

import { api, ifMatch } from '../api.js';
import { h, replace } from '../dom.js';
import { timeEl } from '../format.js';
import { isPending, onSettled, outcomeUnknown, settleRuleWrite } from '../outcome.js';
import { orderedFields, show } from '../rulesinfo.js';
import { badge, confirmDialog, errorBox, messageOf, page, table, toast } from '../ui.js';

const pageSize = 500;

const actionKinds = { create: 'ok', update: 'info', delete: 'bad', rollback: 'warn' };

/** changes lists the fields that differ between two versions of a rule. */
function changes(before, after) {
  return orderedFields(before, after)
    .filter((f) => JSON.stringify(before?.[f]) !== JSON.stringify(after?.[f]))
    .map((f) => ({ field: f, from: before?.[f], to: after?.[f] }));
}

function diffTable(rows, caption) {
  return table(caption, ['Field', 'Before', 'After'], h('tbody', {}, rows.map((c) => h('tr', {},
    h('th', { scope: 'row' }, h('code', {}, c.field)),
    h('td', { class: 'diff-from' }, h('del', {}, show(c.from))),
    h('td', { class: 'diff-to' }, h('ins', {}, show(c.to)))))));
}

/** render draws the history of rule ctx.match[1]. */
export function render(ctx) {
  const id = Number(ctx.match[1]);
  const errors = errorBox();
  const list = h('ol', { class: 'revisions', id: 'revisions', reversed: true },
    h('li', { class: 'card state loading' }, 'Loading the history…'));
  let loaded = false;
  let ruleName = `rule ${id}`;
  const facts = h('p', { class: 'muted' });
  const p = page('History', h('p', {}, h('a', { href: '#/rules' }, '← Rules')), facts, errors.el, list);
  const heading = p.heading;

  async function rollback(to, current) {
    const answer = await confirmDialog({
      title: `Roll back to version ${to}?`,
      message: `The rule's content becomes that of version ${to} at once, as a new version; this history keeps every version.`,
      confirmLabel: `Roll back to version ${to}`,
      askReason: true,
    });
    if (!answer) {
      return;
    }
    errors.clear();
    try {
      const { data } = await api('POST', `/rules/${id}/rollback`, {
        query: { toVersion: to },
        headers: ifMatch(current, answer.reason || `rollback to version ${to}`),
      });
      toast(`Rolled ${data.name} back to the content of version ${to}: it is now version ${data.version}.`);
      await load();
    } catch (err) {
      if (outcomeUnknown(err)) {
        settleRuleWrite({
          rule: { id, name: ruleName }, version: current, actor: ctx.session.me.name,
          what: `Roll ${ruleName} back to version ${to}`,
          describe: () => `${ruleName} has the content of version ${to} again`,
        });
      } else if (err.status === 412) {
        errors.text('The rule changed while you were reading its history; it is reloaded. Check the newest version, then roll back again if you still mean to.');
        await load();
      } else {
        errors.show(err);
      }
    }
  }

  async function load() {
    try {
      const { data } = await api('GET', `/rules/${id}/revisions`, { query: { pageSize } });
      const revs = data.items;
      const newest = revs[0];
      const deleted = newest?.action === 'delete';
      ruleName = newest?.rule.name ?? ruleName;
      heading.textContent = `History of ${ruleName}`;
      replace(facts, `${data.total} version${data.total === 1 ? '' : 's'}, newest first. `,
        deleted ? 'The rule is deleted; its history stays readable.' : h('a', { href: `#/rules/${id}/edit` }, 'Edit the rule'),
        data.total > revs.length ? ` Only the newest ${revs.length} are shown.` : '');
      loaded = true;
      replace(list, revs.length ? revs.map((rev, i) => {
        const before = revs[i + 1]?.rule;
        let what;
        if (rev.action === 'create' || !before) {
          what = diffTable(changes(null, rev.rule), `Version ${rev.version} as created`);
        } else if (rev.action === 'delete') {
          what = h('p', {}, 'Deleted; its last content was version ', String(revs[i + 1]?.version ?? rev.version - 1), '.');
        } else {
          const diff = changes(before, rev.rule);
          what = diff.length ? diffTable(diff, `Changes in version ${rev.version}`) : h('p', { class: 'muted' }, 'No field changed.');
        }
        const restorable = !deleted && i > 0 && rev.action !== 'delete' && ctx.session.canWrite;
        return h('li', { class: 'card revision', dataset: { version: rev.version } },
          h('h2', {}, `Version ${rev.version} `, badge(rev.action, actionKinds[rev.action]), i === 0 && !deleted ? [' ', badge('current', 'ok')] : null),
          h('p', { class: 'muted' }, 'By ', h('strong', {}, rev.actor || 'unknown'), ', ', timeEl(rev.createdAt),
            rev.reason ? [' — ', h('q', {}, rev.reason)] : null),
          what,
          restorable ? h('div', { class: 'actions' }, h('button', {
            type: 'button', dataset: { rollback: rev.version }, disabled: isPending(`rule:${id}`),
            onclick: () => rollback(rev.version, newest.version),
          }, `Roll back to version ${rev.version}`)) : null);
      }) : h('li', { class: 'card state empty' }, 'No version of this rule is recorded.'));
    } catch (err) {
      if (loaded) {
        errors.show(err);
      } else {
        // Nothing to show but the failure, and a way to try again.
        replace(list, h('li', { class: 'card state error' }, h('span', { role: 'alert' }, messageOf(err)), ' ',
          h('button', { type: 'button', class: 'link', onclick: load }, 'Try again')));
      }
    }
  }

  load();
  const undoSettled = onSettled(load);
  return { ...p, cleanup: undoSettled };
}
