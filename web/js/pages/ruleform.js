// The rule form, to create a rule or edit one: the envelope, then only the
// fields of the chosen kind that apply to the choices made so far. The API
// validates; its field errors are shown next to their fields. An edit sends
// the version it started from, and a rule changed meanwhile (412) is
// explained and can be reloaded. Fields of many items (a hotspot rule's
// thresholds per value, an authority rule's origins) have editors of their
// own (itemseditor.js); expiresAt is a date and time in the browser's zone.

import { api, etagVersion, ifMatch, onSessionReplaced } from '../api.js';
import { h, option, replace } from '../dom.js';
import { decimalNumber, localInput, span, timeEl } from '../format.js';
import { impactPanel } from '../impact.js';
import { arrayEditor, objectEditor } from '../itemseditor.js';
import { isPending, onSettled, outcomeUnknown, settleRuleCreate, settleRuleWrite } from '../outcome.js';
import { appBadge, expiryBadge, formWords, isDemoRule, ruleSchema, show } from '../rulesinfo.js';
import { badge, confirmDialog, errorBox, field, messageOf, page, reasonHeaders, toast } from '../ui.js';

/** idPrefix starts the ids of a group's inputs, which the e2e tests name. */
const idPrefix = { envelope: 'rule', flow: 'rule-flow', circuitBreaker: 'rule-cb' };

/** maxItems bounds the rows of an object or array field (docs/api.md: at most 1000). */
const maxItems = 1000;

/** datetimeFields are the string fields that hold a time (RFC 3339). */
const datetimeFields = new Set(['expiresAt']);

/**
 * formSpec turns a field of the server's tables into the form's spec:
 * its input type, options, hint and placeholder (its default), and
 * when(v), which tells from the form's current values whether the field
 * applies: when the field it depends on applies and holds the value.
 */
function formSpec(f, fields) {
  let type = 'text';
  if (f.options) {
    type = 'select';
  } else if (f.type === 'object' || f.type === 'array') {
    type = f.type;
  } else if (datetimeFields.has(f.name)) {
    type = 'datetime';
  } else if (f.type === 'boolean') {
    type = 'checkbox';
  } else if (f.multiline) {
    type = 'textarea';
  } else if (f.type === 'number' || f.type === 'integer') {
    type = 'number';
  }
  const spec = {
    name: f.name, label: f.label, type, hint: f.help, maxLength: f.maxLength,
    options: f.options?.map((o) => [o.value, o.label]),
    initial: f.default ?? f.example,
    placeholder: type === 'number' && f.default !== undefined ? String(f.default) : undefined,
  };
  const cond = f.appliesWhen;
  if (cond) {
    const on = fields.find((other) => other.name === cond.field);
    const onSpec = on ? formSpec(on, fields) : null;
    spec.when = (v) => (!onSpec?.when || onSpec.when(v)) && v[cond.field] === cond.value;
  }
  return spec;
}

function makeInput(spec) {
  switch (spec.type) {
    case 'textarea':
      return h('textarea', { name: spec.name, rows: 2, maxlength: spec.maxLength });
    case 'checkbox':
      return h('input', { type: 'checkbox', name: spec.name, checked: true });
    case 'select':
      return h('select', { name: spec.name }, spec.options.map(([value, label]) => option(value, label)));
    case 'number':
      return h('input', { type: 'text', inputmode: 'decimal', name: spec.name, placeholder: spec.placeholder, autocomplete: 'off' });
    default:
      return h('input', { type: 'text', name: spec.name, autocomplete: 'off', spellcheck: 'false' });
  }
}

/**
 * entry makes a field of the form: {spec, row, input, setError(message,
 * path), read(), write(value), check()}; check marks the mistakes the
 * browser can tell and answers whether there were any.
 */
function entry(spec, id) {
  if (spec.type === 'object' || spec.type === 'array') {
    const make = spec.type === 'object' ? objectEditor : arrayEditor;
    const ed = make({ id, label: spec.label, hint: spec.hint, max: maxItems });
    ed.write(undefined);
    return Object.assign(ed, { spec });
  }
  if (spec.type === 'datetime') {
    return datetimeEntry(spec, id);
  }
  const f = field({ label: spec.label, hint: spec.hint, id, input: makeInput(spec) });
  const kept = untouched(f.input);
  writeValue(spec, f.input, undefined);
  return {
    ...f,
    spec,
    read: () => kept.read(() => readValue(spec, f.input)),
    write(value) {
      kept.write(value);
      writeValue(spec, f.input, value);
    },
    check() {
      const raw = f.input.value.trim();
      if (spec.type === 'number' && raw !== '' && decimalNumber(raw) === null) {
        f.setError('Not a number: write it in decimal, such as 100 or 2.5.');
        return true;
      }
      return false;
    },
  };
}

/**
 * untouched keeps the value a field was filled with until the person
 * edits it: read(typed) answers that value, exactly as the rule had it,
 * while the field is untouched (the input shows it trimmed, or without
 * its milliseconds), else what typed() reads.
 */
function untouched(input) {
  let value = null;
  let edited = false;
  const edit = () => {
    edited = true;
  };
  input.addEventListener('input', edit);
  input.addEventListener('change', edit);
  return {
    read: (typed) => (edited || value === null || value === undefined ? typed() : value),
    write(v) {
      value = v;
      edited = false;
    },
  };
}

/**
 * datetimeEntry is a time in the browser's zone, optional and clearable,
 * with how long until then said as it is typed.
 */
function datetimeEntry(spec, id) {
  const input = h('input', { type: 'datetime-local', step: 1 });
  const f = field({ label: `${spec.label} (your time; empty: never)`, hint: spec.hint, id, input });
  const note = h('p', { class: 'hint', id: `${id}-in`, 'aria-live': 'polite' });
  const clear = h('button', { type: 'button', id: `${id}-clear`, 'aria-label': `Clear ${spec.label}`, onclick: () => {
    input.value = '';
    input.dispatchEvent(new Event('input', { bubbles: true }));
    input.focus();
  } }, 'Clear');
  const tell = () => {
    const at = input.value ? new Date(input.value).getTime() : NaN;
    clear.disabled = !input.value && !input.validity.badInput;
    if (input.validity.badInput) {
      // A date without its time: the browser holds it, the value is empty.
      note.textContent = 'Not a complete date and time.';
    } else if (Number.isNaN(at)) {
      note.textContent = input.value ? 'Not a complete date and time.' : 'Never expires.';
    } else {
      note.textContent = at > Date.now() ? `Expires in ${span(at - Date.now())}.` : 'That time is past: the rule would be stored expired, and not applied.';
    }
  };
  input.addEventListener('input', tell);
  input.addEventListener('change', tell);
  const inline = h('div', { class: 'inline' });
  input.replaceWith(inline);
  inline.append(input, clear);
  f.row.querySelector('.field-error').before(note);
  const kept = untouched(input);
  const write = (value) => {
    kept.write(value);
    input.value = localInput(value, true);
    tell();
  };
  write(undefined);
  return {
    ...f,
    spec,
    read: () => kept.read(() => {
      const at = input.value ? new Date(input.value) : null;
      if (!at) {
        return '';
      }
      // An incomplete time is sent as typed, for the API to name.
      return Number.isNaN(at.getTime()) ? input.value : at.toISOString();
    }),
    write,
    check() {
      if (input.validity.badInput) {
        f.setError('Not a complete date and time: give the time too, or clear the field for never.');
        return true;
      }
      return false;
    },
  };
}

function readValue(spec, input) {
  if (spec.type === 'checkbox') {
    return input.checked;
  }
  const raw = input.value.trim();
  if (spec.type !== 'number') {
    return spec.type === 'textarea' ? input.value : raw;
  }
  if (raw === '') {
    return '';
  }
  // Not a number (check marks it before a save): kept as typed.
  return decimalNumber(raw) ?? raw;
}

function writeValue(spec, input, value) {
  if (spec.type === 'checkbox') {
    input.checked = value ?? true;
  } else if (spec.type === 'select') {
    input.value = value ?? spec.initial ?? spec.options[0][0];
  } else {
    input.value = value === undefined || value === null ? '' : String(value);
  }
}

/** blank tells a value the form leaves out: empty text, list or object. */
function blank(value) {
  if (value === '') {
    return true;
  }
  if (Array.isArray(value)) {
    return value.length === 0;
  }
  return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
}

/** render draws the form: #/rules/new or #/rules/{id}/edit. */
export function render(ctx) {
  const id = ctx.match[1] ? Number(ctx.match[1]) : null;
  const editing = id !== null;
  const errors = errorBox();
  const conflict = h('div', { class: 'alert warn', role: 'alert', id: 'conflict', tabindex: '-1', hidden: true });
  const facts = h('p', { class: 'muted' });
  let version = null;
  let loaded = null;

  const schema = ruleSchema();
  const specs = { envelope: schema.envelope.map((f) => formSpec(f, schema.envelope)) };
  for (const k of schema.kinds) {
    specs[k.kind] = k.fields.map((f) => formSpec(f, k.fields));
  }
  // A scoped caller writes only rules of its apps (docs/api.md, "Per-app
  // scopes"): app offers just those, and no rule without one.
  const scope = ctx.session.me?.apps;
  if (scope?.length) {
    specs.envelope = specs.envelope.map((spec) => (spec.name === 'app'
      ? { ...spec, type: 'select', options: scope.map((a) => [a, a]), initial: scope[0], hint: 'Only the instances of this app run the rule. Your access is held to these apps: you may write their rules only.' }
      : spec));
  }
  const kindInput = h('select', { name: 'kind', disabled: editing },
    schema.kinds.map((k) => option(k.kind, `${k.label}: ${k.help}`)));
  const kindField = field({ label: 'Kind', id: 'rule-kind', input: kindInput, hint: editing ? 'A rule\'s kind cannot change.' : null });
  if (!editing && schema.kinds.some((k) => k.kind === ctx.params.get('kind'))) {
    kindInput.value = ctx.params.get('kind');
  }

  const groups = {};
  for (const [group, list] of Object.entries(specs)) {
    const prefix = idPrefix[group] ?? `rule-${group}`;
    groups[group] = list.map((spec) => entry(spec, `${prefix}-${spec.name}`));
  }
  if (scope?.length) {
    groups.envelope.find((f) => f.spec.name === 'app').input.required = true;
  }
  if (!editing && ctx.params.get('resource')) {
    groups.envelope.find((f) => f.spec.name === 'resource').input.value = ctx.params.get('resource');
  }

  const kindSets = Object.fromEntries(schema.kinds.map((k) => [k.kind,
    h('fieldset', { class: 'kind-fields', dataset: { kind: k.kind } }, h('legend', {}, k.title), groups[k.kind].map((f) => f.row))]));

  function values(group) {
    const v = {};
    for (const f of groups[group]) {
      v[f.spec.name] = f.read();
    }
    return v;
  }

  /** visible shows the chosen kind's fields that apply, and hides the rest. */
  function visible() {
    const kind = kindInput.value;
    for (const [k, set] of Object.entries(kindSets)) {
      set.hidden = k !== kind;
    }
    const resource = groups.envelope.find((f) => f.spec.name === 'resource');
    resource.row.hidden = Boolean(schema.kinds.find((k) => k.kind === kind)?.noResource);
    const v = values(kind);
    for (const f of groups[kind]) {
      f.row.hidden = Boolean(f.spec.when && !f.spec.when(v));
    }
  }

  /** body is the rule as the API takes it: only the fields that apply and are filled in. */
  function body() {
    const kind = kindInput.value;
    const out = { kind };
    for (const f of groups.envelope) {
      const value = f.read();
      if (f.row.hidden) {
        continue;
      }
      if (!blank(value) || f.spec.name === 'description') {
        out[f.spec.name] = value;
      }
    }
    for (const f of groups[kind]) {
      const value = f.read();
      if (!f.row.hidden && !blank(value)) {
        out[f.spec.name] = value;
      }
    }
    return out;
  }

  function fill(rule) {
    kindInput.value = rule.kind;
    for (const f of [...groups.envelope, ...groups[rule.kind] ?? []]) {
      f.write(rule[f.spec.name]);
    }
    visible();
  }

  function clearErrors() {
    errors.clear();
    for (const list of Object.values(groups)) {
      for (const f of list) {
        f.setError('');
      }
    }
    kindField.setError('');
  }

  /**
   * checkFields marks the mistakes the browser can tell in the fields
   * that apply, and answers whether there were any.
   */
  function checkFields() {
    const marked = [...groups.envelope, ...groups[kindInput.value]].filter((f) => !f.row.hidden && f.check());
    if (marked.length) {
      errors.text('Some fields need a change: see the marks next to them.');
      marked[0].input.focus?.();
    }
    return marked.length > 0;
  }

  /** showErrors puts each field error next to its field; the rest go in the box. */
  function showErrors(err) {
    const kind = kindInput.value;
    const byName = new Map([...groups.envelope, ...groups[kind]].filter((f) => !f.row.hidden).map((f) => [f.spec.name, f]));
    byName.set('kind', kindField);
    const elsewhere = [];
    let first = null;
    for (const d of err.details) {
      // A field's items are named origins[1] or specificItems.vip.
      const f = byName.get(d.field.replace(/[[.].*$/, ''));
      if (f) {
        // An item's message is about the row it is shown at, in its own words.
        const itemized = f.spec.type === 'object' || f.spec.type === 'array';
        f.setError(itemized ? d.message : formWords(kind, d.message), d.field);
        first ??= f.input;
      } else {
        elsewhere.push(d);
      }
    }
    errors.show(err, elsewhere);
    (first ?? errors.el).focus?.();
  }

  const reason = field({ label: 'Reason for the change (kept in the history)', id: 'rule-reason', input: h('input', { type: 'text', maxlength: 1024, autocomplete: 'off' }) });
  const save = h('button', { type: 'submit', class: 'primary', id: 'rule-save' }, editing ? 'Save changes' : 'Create rule');
  const impact = impactPanel();
  const form = h('form', { class: 'card rule-form', id: 'rule-form', novalidate: true },
    conflict, errors.el,
    h('fieldset', {}, h('legend', {}, 'Rule'), kindField.row, groups.envelope.map((f) => f.row)),
    Object.values(kindSets),
    impact.el,
    reason.row,
    h('div', { class: 'actions' }, save, h('a', { href: '#/rules', class: 'button' }, 'Cancel')));
  form.addEventListener('change', visible);
  form.addEventListener('input', visible);
  const estimate = () => impact.update(body());
  form.addEventListener('change', estimate);
  form.addEventListener('input', estimate);

  // Changes not saved yet: leaving asks first, in the console (leave) and
  // when the browser would unload the page.
  let dirty = false;
  const touched = () => {
    dirty = true;
  };
  form.addEventListener('input', touched);
  form.addEventListener('change', touched);
  const beforeUnload = (e) => {
    if (dirty) {
      e.preventDefault();
      e.returnValue = '';
    }
  };
  window.addEventListener('beforeunload', beforeUnload);
  // Another tab logged in as someone else: this tab reloads as them, and
  // the changes cannot be saved from here any more.
  const unsubscribe = onSessionReplaced(() => {
    dirty = false;
  });
  const p = page(editing ? 'Edit rule' : 'New rule', facts, form);
  const heading = p.heading;

  /**
   * explainConflict says who changed the rule since it was opened, and
   * offers to reload it; or, when it was deleted meanwhile (a save of it
   * is 404), says so and offers to create it again.
   */
  async function explainConflict(deleted) {
    let who = '';
    let gone = deleted;
    try {
      const { data } = await api('GET', `/rules/${id}/revisions`, { query: { pageSize: 1 } });
      const last = data.items[0];
      if (last) {
        who = `${last.actor || 'someone'} made version ${last.version} (${last.action})`;
        gone ||= last.action === 'delete';
      }
    } catch {
      who = '';
    }
    if (gone) {
      explainDeleted(who);
      return;
    }
    const reloadButton = h('button', { type: 'button', id: 'conflict-reload', onclick: reloadCurrent }, 'Load the current version');
    replace(conflict,
      h('p', {}, h('strong', {}, 'Someone else changed this rule after you opened it. '),
        `You edited version ${version}; ${who || 'there is a newer one'}. Your changes were not saved, so nothing was overwritten.`),
      h('p', {}, 'Load the current version, check it, and make your change again: your values are listed so you can re-enter them.'),
      h('div', { class: 'actions' }, reloadButton, h('a', { href: `#/rules/${id}/history` }, 'See what changed')));
    conflict.hidden = false;
    reloadButton.focus();
  }

  /** explainDeleted says the rule was deleted by someone else, and offers to create it again or go back to the list. */
  function explainDeleted(who) {
    const recreate = h('button', { type: 'button', id: 'conflict-recreate', onclick: () => send(true) }, 'Create it again');
    replace(conflict,
      h('p', {}, h('strong', {}, 'Someone else deleted this rule after you opened it'), who ? ` (${who}).` : '.', ' Your changes were not saved.'),
      h('p', {}, 'Create it again with the values in this form — as a new rule, with an id and a history of its own — or go back to the list.'),
      h('div', { class: 'actions' }, recreate, h('a', { href: '#/rules', id: 'conflict-list' }, 'Back to the rules')));
    conflict.hidden = false;
    recreate.focus();
  }

  async function reloadCurrent() {
    const mine = body();
    const ok = await load();
    if (!ok) {
      return;
    }
    const current = body();
    const lost = Object.keys({ ...mine, ...current }).filter((k) => JSON.stringify(mine[k]) !== JSON.stringify(current[k]));
    replace(conflict,
      h('p', {}, h('strong', {}, `Loaded version ${version}, the current one.`),
        lost.length ? ' Your unsaved values were:' : ' Your unsaved values match it.'),
      lost.length ? h('ul', { id: 'unsaved-values' }, lost.map((k) => h('li', {}, h('code', {}, k), `: yours ${show(mine[k])}, now ${show(current[k])}`))) : null);
    conflict.hidden = false;
    // The button that had focus is gone: focus moves to what replaced it.
    conflict.focus();
  }

  async function load() {
    try {
      const { data, headers } = await api('GET', `/rules/${id}`);
      loaded = data;
      version = etagVersion(headers) ?? data.version;
      fill(data);
      estimate();
      replace(facts, `Version ${data.version}, last changed `, timeEl(data.updatedAt), '. ',
        h('a', { href: `#/rules/${id}/history` }, 'History'), isDemoRule(data) ? [' ', badge('demo data', 'info')] : null,
        [appBadge(data), expiryBadge(data)].filter(Boolean).map((b) => [' ', b]));
      heading.textContent = `Edit ${data.name}`;
      // A scoped editor reads every rule but writes only its apps' rules.
      const outside = ctx.session.canWrite && scope?.length && !scope.includes(data.app);
      if (outside) {
        errors.text(`This rule is ${data.app ? `of app ${data.app}` : 'of no app'}, outside your apps (${scope.join(', ')}): you can read it but not change it.`);
      }
      save.disabled = !ctx.session.canWrite || outside;
      return true;
    } catch (err) {
      if (err.status === 404) {
        errors.text('No rule has this id: it may have been deleted.');
        replace(facts, h('a', { href: `#/rules/${id}/history` }, 'Its history'), ' may still be readable.');
        save.disabled = true;
      } else {
        errors.show(err);
      }
      return false;
    }
  }

  /**
   * send saves the form: the edited rule, or a new one when creating or
   * when asNew (the edited rule was deleted meanwhile).
   */
  async function send(asNew) {
    clearErrors();
    if (checkFields()) {
      return;
    }
    save.disabled = true;
    const creating = !editing || asNew;
    const headers = creating ? reasonHeaders(reason.input.value) : ifMatch(version, reason.input.value);
    try {
      const { data } = creating
        ? await api('POST', '/rules', { body: body(), headers })
        : await api('PUT', `/rules/${id}`, { body: body(), headers });
      toast(`${creating ? 'Created' : 'Saved'} ${data.name} (version ${data.version}).`, true);
      dirty = false;
      ctx.refreshDemo();
      ctx.go('/rules');
    } catch (err) {
      if (outcomeUnknown(err)) {
        const name = body().name;
        pendingKey = creating ? `rule:new:${name}` : `rule:${id}`;
        if (creating) {
          settleRuleCreate({ name, actor: ctx.session.me.name });
        } else {
          settleRuleWrite({ rule: { id, name }, version, actor: ctx.session.me.name, what: `Save ${name}`, describe: () => `${name} is saved` });
        }
      } else if (err.status === 422) {
        showErrors(err);
      } else if (err.status === 409) {
        groups.envelope[0].setError(err.message);
        errors.show(err, []);
      } else if (err.status === 412 || (err.status === 404 && !creating)) {
        await explainConflict(err.status === 404);
      } else {
        errors.text(messageOf(err));
      }
    } finally {
      save.disabled = !ctx.session.canWrite || (editing && !loaded) || isPending(pendingKey);
    }
  }

  // A save that timed out keeps the form until its outcome is known: made,
  // the form is done with, as after a save that answered; not made, it can
  // be sent again.
  let pendingKey = null;
  const undoSettled = onSettled((key, made) => {
    if (key !== pendingKey) {
      return;
    }
    pendingKey = null;
    if (made) {
      dirty = false;
      ctx.go('/rules');
    } else {
      save.disabled = !ctx.session.canWrite || (editing && !loaded);
    }
  });

  form.addEventListener('submit', (e) => {
    e.preventDefault();
    send(false);
  });

  visible();
  if (!editing) {
    estimate();
  }
  if (editing) {
    save.disabled = true;
    load();
  }
  if (!ctx.session.canWrite) {
    errors.text(`Your role (${ctx.session.me.role}) can read rules but not change them.`);
    save.disabled = true;
  }
  return {
    ...p,
    /** leave resolves to whether to leave the form: at once unless it has unsaved changes. */
    async leave() {
      if (!dirty || !ctx.session.canWrite) {
        return true;
      }
      const answer = await confirmDialog({
        title: 'Leave without saving?',
        message: editing ? 'Your changes to this rule are not saved; leaving drops them.' : 'This rule is not created yet; leaving drops what you filled in.',
        confirmLabel: 'Leave without saving',
      });
      return answer !== null;
    },
    cleanup() {
      undoSettled();
      impact.cleanup();
      window.removeEventListener('beforeunload', beforeUnload);
      unsubscribe();
    },
  };
}
