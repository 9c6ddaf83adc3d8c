// The rule list: filters by kind, resource, state and text, with links to
// edit a rule and read its history, and deletion after a confirmation. A
// rule scoped to an app, one that expires and a cluster rule (falling back
// or not) say so.

import { api, ifMatch } from '../api.js';
import { h, option, replace } from '../dom.js';
import { timeEl } from '../format.js';
import { isPending, onSettled, outcomeUnknown, settleRuleWrite } from '../outcome.js';
import { appBadge, clusterBadges, clusterStatus, expiryBadge, isDemoRule, kindLabel, ruleSchema, ruleTarget, summary } from '../rulesinfo.js';
import { badge, confirmThen, errorBox, field, loadError, page, pager, stateRow, table, toast } from '../ui.js';

const pageSize = 50;

/** render draws the rule list. */
export function render(ctx) {
  const params = ctx.params;
  const errors = errorBox();
  const kind = field({
    label: 'Kind', id: 'filter-kind',
    input: h('select', {}, option('', 'Any kind'),
      ruleSchema().kinds.map((k) => option(k.kind, k.label, params.get('kind') === k.kind))),
  });
  const resource = field({
    label: 'Resource (exact name)', id: 'filter-resource',
    input: h('input', { type: 'text', value: params.get('resource') ?? '', autocomplete: 'off' }),
  });
  const enabled = field({
    label: 'State', id: 'filter-enabled',
    input: h('select', {}, option('', 'Enabled or not'), option('true', 'Enabled', params.get('enabled') === 'true'),
      option('false', 'Disabled', params.get('enabled') === 'false')),
  });
  // Rules scoped to an app, where the server has them (its field table lists app).
  const app = ruleSchema().envelope.some((f) => f.name === 'app') ? field({
    label: 'App', id: 'filter-app',
    input: h('input', { type: 'text', value: params.get('app') ?? '', autocomplete: 'off', spellcheck: 'false' }),
  }) : null;
  const text = field({
    label: 'Text', id: 'filter-q',
    input: h('input', { type: 'search', value: params.get('q') ?? '', placeholder: 'name, resource or description' }),
  });
  let pageNo = Number.parseInt(params.get('page') ?? '1', 10) || 1;
  const tbody = h('tbody', {}, stateRow(8, 'loading', 'Loading the rules…'));
  const pages = pager((n) => {
    pageNo = n;
    load();
  });

  function filters() {
    return { kind: kind.input.value, resource: resource.input.value, app: app?.input.value ?? '', enabled: enabled.input.value, q: text.input.value };
  }

  async function remove(rule, button) {
    const confirmed = await confirmThen({
      title: `Delete ${rule.name}?`,
      message: `The rule stops applying to ${ruleTarget(rule)} at once. A deleted rule cannot be restored: its history stays readable, and shows its last content should you create it again.`,
      confirmLabel: 'Delete the rule',
      askReason: true,
    }, async (reason) => {
      errors.clear();
      await api('DELETE', `/rules/${rule.id}`, { headers: ifMatch(rule.version, reason) });
      toast(`Deleted ${rule.name}.`);
      ctx.refreshDemo();
    }, (err) => {
      if (outcomeUnknown(err)) {
        // The list reloads when the server answers: until then, this row
        // must not offer the deletion again.
        button.disabled = true;
        settleRuleWrite({
          rule, version: rule.version, actor: ctx.session.me.name,
          what: `Delete ${rule.name}`,
          describe: (rev) => (rev.action === 'delete' ? `${rule.name} is deleted` : `${rule.name} is now version ${rev.version}`),
        });
      } else if (err.status === 412) {
        errors.text(`${rule.name} was changed by someone else after this list was loaded, so it was not deleted. The list is reloaded: check the rule, then delete it again if you still mean to.`);
      } else {
        errors.show(err);
      }
    });
    if (confirmed) {
      // The row, and the button that had focus, are gone: focus goes to
      // the rule that took its place, else the one before, else the heading.
      const index = [...tbody.querySelectorAll('tr[data-rule]')].findIndex((tr) => tr.dataset.rule === rule.name);
      await load();
      const links = tbody.querySelectorAll('tr[data-rule] th a');
      (links[Math.min(index, links.length - 1)] ?? heading).focus();
    }
  }

  function row(r, cluster) {
    return h('tr', { dataset: { rule: r.name } },
      h('th', { scope: 'row' },
        h('a', { href: `#/rules/${r.id}/edit` }, r.name),
        isDemoRule(r) ? badge('demo', 'info', 'demo data seeded by sluice --demo') : null,
        r.app ? [' ', appBadge(r)] : null,
        r.description ? h('div', { class: 'muted small' }, r.description) : null),
      h('td', {}, kindLabel(r.kind)),
      h('td', {}, !r.resource ? h('span', { class: 'muted' }, 'every inbound call') : h('a', { href: `#/resources/${encodeURIComponent(r.resource)}` }, r.resource)),
      h('td', {}, r.enabled ? badge('enabled', 'ok') : badge('disabled', 'muted'), ' ', r.mode === 'shadow' ? badge('shadow', 'warn') : null,
        r.expiresAt || r.expired ? [' ', expiryBadge(r)] : null,
        clusterBadges(r, cluster).map((b) => [' ', b])),
      h('td', {}, summary(r)),
      h('td', { class: 'num' }, String(r.version)),
      h('td', {}, timeEl(r.updatedAt)),
      h('td', { class: 'row-actions' },
        h('a', { href: `#/rules/${r.id}/history` }, 'History'),
        ctx.session.canWrite ? h('button', { type: 'button', class: 'link danger', onclick: (e) => remove(r, e.currentTarget), 'aria-label': `Delete ${r.name}`, disabled: isPending(`rule:${r.id}`) }, 'Delete') : null));
  }

  async function load() {
    const f = filters();
    ctx.setParams({ ...f, page: pageNo > 1 ? pageNo : '' });
    try {
      const [{ data }, cluster] = await Promise.all([api('GET', '/rules', { query: { ...f, page: pageNo, pageSize } }), clusterStatus(api)]);
      const filtered = Object.values(f).some(Boolean);
      replace(tbody, data.items.length ? data.items.map((r) => row(r, cluster)) : stateRow(8, 'empty',
        filtered ? 'No rule matches these filters.' : ['No rules yet. ', ctx.session.canWrite ? h('a', { href: '#/rules/new' }, 'Create the first one') : null, ' or ', h('a', { href: '#/apply' }, 'apply a rule file'), '.']));
      pages.update(pageNo, pageSize, data.total);
    } catch (err) {
      replace(tbody, loadError(8, err, load));
    }
  }

  let typing = 0;
  const reload = () => {
    errors.clear();
    pageNo = 1;
    load();
  };
  for (const f of [kind, enabled]) {
    f.input.addEventListener('change', reload);
  }
  for (const f of [resource, app, text].filter(Boolean)) {
    f.input.addEventListener('input', () => {
      clearTimeout(typing);
      typing = setTimeout(reload, 250);
    });
  }
  load();
  const undoSettled = onSettled(load);

  const p = page('Rules',
    ctx.session.canWrite ? h('p', {}, h('a', { class: 'button primary', href: '#/rules/new', id: 'new-rule' }, 'New rule')) : null,
    h('form', { class: 'toolbar', role: 'search', 'aria-label': 'Filter rules', onsubmit: (e) => e.preventDefault() }, kind.row, resource.row, app?.row, enabled.row, text.row),
    errors.el,
    table('Rules', ['Name', 'Kind', 'Resource', 'State', 'What it does', 'Version', 'Changed', ''], tbody),
    pages.el);
  const heading = p.heading;

  return {
    ...p,
    cleanup() {
      clearTimeout(typing);
      undoSettled();
    },
  };
}
