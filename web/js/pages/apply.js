// Apply a rule file, as CI does: paste or upload YAML or JSON, preview
// the plan with a dry run, then apply it in one transaction; and export the
// current rules in the same shape.

import { api } from '../api.js';
import { h, option, replace } from '../dom.js';
import { estimateView } from '../impact.js';
import { ruleTarget, show } from '../rulesinfo.js';
import { isPending, outcomeUnknown, settle } from '../outcome.js';
import { confirmDialog, errorBox, field, page, reasonHeaders, table, toast } from '../ui.js';

const example = `rules:
  - name: orders-qps
    kind: flow
    resource: GET:/api/orders
    threshold: 100
`;

function isJSON(text, format) {
  if (format !== 'auto') {
    return format === 'json';
  }
  return /^\s*[{[]/.test(text);
}

function planList(title, id, items, render) {
  return h('section', { class: 'plan-part', id, 'aria-label': title },
    h('h3', {}, `${title} (${items.length})`),
    items.length ? h('ul', {}, items.map(render)) : h('p', { class: 'muted' }, 'None.'));
}

function itemParts(it) {
  return [h('strong', {}, it.name), ` — ${it.kind} on `, it.resource ? h('code', {}, it.resource) : ruleTarget(it)];
}

function item(it) {
  return h('li', {}, itemParts(it), impactOf(it));
}

/** impactOf is what a dry run estimates the rule would have blocked, if it has an estimate. */
function impactOf(it) {
  return it.impact ? h('div', { class: 'impact' }, h('p', { class: 'muted' }, 'Estimated from its resource\'s history:'), estimateView(it.impact)) : null;
}

function drawPlan(plan) {
  const parts = [
    planList('Created', 'plan-created', plan.created, item),
    planList('Updated', 'plan-updated', plan.updated, (u) => h('li', {}, itemParts(u), impactOf(u),
      table(`Changes to ${u.name}`, ['Field', 'Now', 'After'], h('tbody', {}, u.changes.map((c) => h('tr', {},
        h('th', { scope: 'row' }, h('code', {}, c.field)),
        h('td', {}, h('del', {}, show(c.from))),
        h('td', {}, h('ins', {}, show(c.to))))))))),
    planList('Deleted', 'plan-deleted', plan.deleted, item),
    planList('Unchanged', 'plan-unchanged', plan.unchanged, item),
  ];
  const changed = plan.created.length + plan.updated.length + plan.deleted.length;
  const headline = plan.dryRun
    ? (changed ? `Dry run: applying would change ${changed} rule${changed === 1 ? '' : 's'}. Nothing is written yet.` : 'Dry run: the server already matches the file; applying would change nothing.')
    : `Applied: ${changed} rule${changed === 1 ? '' : 's'} changed.`;
  return [h('p', { class: plan.dryRun ? 'alert info' : 'alert ok', role: 'status', id: 'plan-headline' }, headline), ...parts];
}

/** planSummary words a dry run's plan in one sentence, for the confirmation. */
function planSummary(plan) {
  const counts = [['created', plan.created], ['updated', plan.updated], ['deleted', plan.deleted]]
    .filter(([, items]) => items.length)
    .map(([what, items]) => `${items.length} ${what}`);
  return counts.length ? `As previewed: ${counts.join(', ')}.` : 'As previewed, nothing changes.';
}

/** applyKey is the pending key of an apply whose outcome is unknown. */
const applyKey = 'rules:apply';

/**
 * settleApply follows an apply that timed out. It is one transaction, made
 * whole or not at all, so a preview of the same file tells which: one
 * that changes nothing finds the rules as the file says.
 */
function settleApply(body, contentType, prune) {
  return settle({
    key: applyKey,
    what: 'Apply the rule file',
    async check() {
      const { data } = await api('POST', '/rules/apply', { query: { dryRun: true, prune }, body, contentType });
      const left = data.created.length + data.updated.length + data.deleted.length;
      return left
        ? { made: false, message: `A preview of the file still plans ${left} change${left === 1 ? '' : 's'}: preview it, then apply it if you still mean to.` }
        : { made: true, message: 'A preview of the file now changes nothing: the rules are as it says.' };
    },
  });
}

/** render draws the apply page. */
export function render(ctx) {
  const errors = errorBox();
  const text = field({
    label: 'Rule file (YAML or JSON)', id: 'apply-text',
    hint: 'The shape export writes and "sluice rules apply" sends: {"rules": [...]}, each rule with a name.',
    input: h('textarea', { rows: 14, spellcheck: 'false', class: 'code', placeholder: example }),
  });
  const file = field({ label: 'Or load a file', id: 'apply-file', input: h('input', { type: 'file', accept: '.yaml,.yml,.json,application/json,application/yaml,text/yaml' }) });
  const format = field({
    label: 'Format', id: 'apply-format',
    input: h('select', {}, option('auto', 'Tell from the text'), option('yaml', 'YAML'), option('json', 'JSON')),
  });
  const prune = field({ label: 'Prune: delete the rules the file does not name', id: 'apply-prune', input: h('input', { type: 'checkbox' }) });
  const dryRun = h('button', { type: 'button', id: 'apply-dry-run' }, 'Preview (dry run)');
  const applyButton = h('button', { type: 'button', class: 'primary', id: 'apply-apply', disabled: true, title: 'Preview first' }, 'Apply');
  const plan = h('div', { class: 'plan', id: 'plan', 'aria-live': 'polite' });
  let previewed = '';
  let previewPlan = null;
  // A viewer may preview a file (a dry run writes nothing), never apply it.
  const readOnly = !ctx.session.canWrite;

  function request() {
    return `${text.input.value}\u0000${format.input.value}\u0000${prune.input.checked}`;
  }

  function invalidate() {
    if (previewed && previewed !== request()) {
      previewed = '';
      applyButton.disabled = true;
      replace(plan, h('p', { class: 'muted' }, 'The file or the options changed: preview again before applying.'));
    }
  }
  for (const f of [text, format, prune]) {
    f.input.addEventListener('input', invalidate);
    f.input.addEventListener('change', invalidate);
  }

  file.input.addEventListener('change', async () => {
    const chosen = file.input.files?.[0];
    if (chosen) {
      text.input.value = await chosen.text();
      if (/\.json$/i.test(chosen.name)) {
        format.input.value = 'json';
      } else if (/\.ya?ml$/i.test(chosen.name)) {
        format.input.value = 'yaml';
      }
      invalidate();
    }
  });

  async function send(dry) {
    errors.clear();
    // What is sent is read now: the file and options as previewed, or
    // (below) Apply refuses them.
    const body = text.input.value;
    const wanted = request();
    let reason = '';
    if (!dry) {
      if (wanted !== previewed) {
        // Changed without an event the page heard (a script, an
        // extension): the plan shown is not this file's.
        invalidate();
        errors.text('The file changed after its preview: preview it again, then apply.');
        return;
      }
      const answer = await confirmDialog({
        title: 'Apply the rule file?',
        message: `${planSummary(previewPlan)} The rules change at once, for every instance.`,
        confirmLabel: 'Apply',
        askReason: true,
      });
      if (!answer) {
        return;
      }
      reason = answer.reason;
    }
    if (!body.trim()) {
      errors.text('Paste a rule file or load one first.');
      text.input.focus();
      return;
    }
    const query = { dryRun: dry, prune: prune.input.checked };
    const contentType = isJSON(body, format.input.value) ? 'application/json' : 'application/yaml';
    try {
      const { data } = await api('POST', '/rules/apply', { query, body, contentType, headers: reasonHeaders(reason) });
      replace(plan, drawPlan(data));
      if (dry) {
        previewed = wanted;
        previewPlan = data;
        applyButton.disabled = readOnly || isPending(applyKey);
        applyButton.title = readOnly ? `Your role (${ctx.session.me.role}) cannot apply rules` : '';
        // Changed while the preview was on its way: it is not this file's.
        invalidate();
      } else {
        previewed = '';
        applyButton.disabled = true;
        toast('The rule file is applied.');
        ctx.refreshDemo();
      }
    } catch (err) {
      replace(plan);
      if (!dry && outcomeUnknown(err)) {
        previewed = '';
        applyButton.disabled = true;
        settleApply(body, contentType, query.prune);
        return;
      }
      errors.show(err);
    }
  }
  dryRun.addEventListener('click', () => send(true));
  applyButton.addEventListener('click', () => send(false));

  async function exportRules(fmt, download) {
    errors.clear();
    try {
      const { data } = await api('GET', '/rules/export', { query: { format: fmt }, text: true });
      if (download) {
        const url = URL.createObjectURL(new Blob([data], { type: fmt === 'json' ? 'application/json' : 'application/yaml' }));
        const a = h('a', { href: url, download: `sluice-rules.${fmt}` });
        document.body.append(a);
        a.click();
        a.remove();
        setTimeout(() => URL.revokeObjectURL(url), 1000);
      } else {
        text.input.value = data;
        format.input.value = fmt;
        invalidate();
        text.input.focus();
      }
    } catch (err) {
      errors.show(err);
    }
  }

  return page('Apply a rule file',
    h('p', {}, 'Sync the rules to a file, the way CI does: rules are matched by name; new ones are created, changed ones updated, and with prune the others deleted — all in one transaction, or none of it.'),
    readOnly ? h('p', { class: 'alert warn' }, `Your role (${ctx.session.me.role}) can preview a rule file and export rules, but not apply them.`) : null,
    h('section', { class: 'card', 'aria-label': 'Rule file' },
      errors.el,
      text.row,
      h('div', { class: 'toolbar' }, file.row, format.row),
      prune.row,
      h('div', { class: 'actions' }, dryRun, applyButton)),
    plan,
    h('section', { class: 'card', 'aria-labelledby': 'export-title' },
      h('h2', { id: 'export-title' }, 'Export'),
      h('p', {}, 'Every rule in the shape apply takes: export, then apply, changes nothing.'),
      h('div', { class: 'actions' },
        h('button', { type: 'button', id: 'export-yaml', onclick: () => exportRules('yaml', true) }, 'Download YAML'),
        h('button', { type: 'button', id: 'export-json', onclick: () => exportRules('json', true) }, 'Download JSON'),
        h('button', { type: 'button', id: 'export-edit', onclick: () => exportRules('yaml', false) }, 'Load the current rules into the editor'))));
}
