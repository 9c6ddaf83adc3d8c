// API tokens, for admins: the list (never the secrets), a form that
// creates one and shows its secret this once, and revocation.

import { api } from '../api.js';
import { h, option, replace } from '../dom.js';
import { appsText, parseApps, timeEl } from '../format.js';
import { isPending, onSettled, outcomeUnknown, settle, settleCreate } from '../outcome.js';
import { badge, confirmThen, errorBox, field, loadError, page, showFieldErrors, stateRow, table, toast } from '../ui.js';

/** roleHints says in one line what a token of each role may do. */
const roleHints = {
  viewer: 'Reads rules, resources and metrics; changes nothing.',
  editor: 'Reads, and writes rules: for CI pipelines that apply rule files.',
  admin: 'Everything, users and tokens included.',
  instance: 'For services that embed the engine: reads rules, posts reports, nothing else.',
};

/** render draws the tokens page. */
export function render() {
  const errors = errorBox();
  const formErrors = errorBox();
  const tbody = h('tbody', {}, stateRow(8, 'loading', 'Loading the tokens…'));
  const secret = h('div', { class: 'alert ok', id: 'token-secret-box', role: 'status', hidden: true });

  const name = field({ label: 'Name', id: 'token-name', hint: 'Say who uses it, e.g. ci-deploy: up to 64 letters, digits, dots, underscores, @ or hyphens.', input: h('input', { type: 'text', maxlength: 64, autocomplete: 'off' }) });
  const role = field({
    label: 'Role', id: 'token-role', hint: roleHints.editor,
    input: h('select', {}, option('viewer', 'viewer: reads'), option('editor', 'editor: also writes rules (CI)', true), option('admin', 'admin: also users and tokens'),
      option('instance', 'instance: a service that embeds the engine')),
  });
  const roleHint = role.row.querySelector('.hint');
  const tellRole = () => {
    roleHint.textContent = roleHints[role.input.value];
  };
  role.input.addEventListener('change', tellRole);
  const expires = field({ label: 'Expires (your time; empty: never)', id: 'token-expires', input: h('input', { type: 'datetime-local' }) });
  const apps = field({
    label: 'Apps (empty: all)', id: 'token-apps',
    hint: 'Hold it to the rules of these apps, separated by commas or spaces, e.g. checkout, payments. Not for admins; fixed once created.',
    input: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' }),
  });
  const fields = { name, role, expiresAt: expires, apps };

  async function revoke(t, button) {
    const confirmed = await confirmThen({
      title: `Revoke ${t.name}?`,
      message: 'Its next request is refused. This cannot be undone; a new token can be created instead.',
      confirmLabel: 'Revoke the token',
    }, async () => {
      errors.clear();
      await api('DELETE', `/tokens/${t.id}`);
      toast(`Revoked ${t.name}.`);
    }, (err) => {
      if (!outcomeUnknown(err)) {
        errors.show(err);
        return;
      }
      button.disabled = true; // the list redraws only once the server answers
      settleRevoke(t);
    });
    if (confirmed) {
      load();
    }
  }

  // A revocation that timed out: the token is gone from the list if it
  // was made.
  function settleRevoke(t) {
    return settle({
      key: `token:${t.id}`,
      what: `Revoke ${t.name}`,
      async check() {
        const { data } = await api('GET', '/tokens', { query: { pageSize: 500 } });
        return data.items.some((it) => it.id === t.id)
          ? { made: false, message: `${t.name} still works. Revoke it again if you still mean to.` }
          : { made: true, message: `${t.name} is revoked.` };
      },
    });
  }
  const undoSettled = onSettled((key) => {
    if (key.startsWith('token:') || key.startsWith('/tokens:')) {
      load();
    }
  });

  async function load() {
    try {
      const { data } = await api('GET', '/tokens', { query: { pageSize: 500 } });
      replace(tbody, data.items.length ? data.items.map((t) => h('tr', { dataset: { token: t.name } },
        h('th', { scope: 'row' }, t.name),
        h('td', {}, badge(t.role, t.role === 'admin' ? 'warn' : 'info', roleHints[t.role])),
        h('td', { class: t.apps ? null : 'muted' }, appsText(t.apps)),
        h('td', {}, t.createdBy),
        h('td', {}, timeEl(t.createdAt)),
        h('td', {}, t.expiresAt ? timeEl(t.expiresAt) : 'never'),
        h('td', {}, t.lastUsedAt ? timeEl(t.lastUsedAt) : 'never'),
        h('td', {}, h('button', { type: 'button', class: 'link danger', onclick: (e) => revoke(t, e.currentTarget), 'aria-label': `Revoke ${t.name}`, disabled: isPending(`token:${t.id}`) }, 'Revoke'))))
        : stateRow(8, 'empty', 'No API tokens yet. CI pipelines need one: create it below.'));
    } catch (err) {
      replace(tbody, loadError(8, err, load));
    }
  }

  const create = h('button', { type: 'submit', class: 'primary', id: 'token-create' }, 'Create token');
  const form = h('form', { class: 'card', id: 'token-form', novalidate: true, 'aria-labelledby': 'token-form-title' },
    h('h2', { id: 'token-form-title' }, 'New token'),
    formErrors.el,
    h('div', { class: 'toolbar' }, name.row, role.row, apps.row, expires.row),
    h('div', { class: 'actions' }, create));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    // The last token's secret goes with the next try: it would sit next
    // to this one's error as if it were its answer.
    secret.hidden = true;
    secret.replaceChildren();
    for (const f of Object.values(fields)) {
      f.setError('');
    }
    if (expires.input.validity.badInput) {
      // A date without its time: the browser holds it, the value is empty.
      expires.setError('Not a complete date and time: give the time too, or empty the field for never.');
      expires.input.focus();
      return;
    }
    const body = { name: name.input.value.trim(), role: role.input.value };
    const scope = parseApps(apps.input.value);
    if (scope) {
      body.apps = scope;
    }
    if (expires.input.value) {
      body.expiresAt = new Date(expires.input.value).toISOString();
    }
    create.disabled = true;
    try {
      const { data } = await api('POST', '/tokens', { body });
      const code = h('code', { id: 'token-secret' }, data.token);
      const copy = h('button', { type: 'button', onclick: async () => {
        try {
          await navigator.clipboard.writeText(data.token);
          toast('Copied.');
        } catch {
          window.getSelection().selectAllChildren(code);
          toast('Select and copy the token by hand.');
        }
      } }, 'Copy');
      replace(secret,
        h('p', {}, h('strong', {}, `Token ${data.name} created. Copy it now: it is shown only this once.`),
          ' Sluice keeps only its hash.'),
        h('p', { class: 'secret' }, code, ' ', copy),
        h('p', {}, 'Send it as ', h('code', {}, 'Authorization: Bearer <token>'), '.'),
        h('button', { type: 'button', onclick: () => { secret.hidden = true; secret.replaceChildren(); } }, 'Done, I copied it'));
      secret.hidden = false;
      copy.focus();
      form.reset();
      tellRole();
      load();
    } catch (err) {
      if (outcomeUnknown(err)) {
        // Create stays disabled until the outcome is known: a second
        // token of the name would be refused, or made twice.
        await settleCreate({
          what: `Create token ${body.name}`, path: '/tokens', name: body.name, nameOf: (it) => it.name,
          lost: 'Its secret was in the answer that never came, and Sluice keeps only its hash: revoke it and create another.',
        });
      } else {
        showFieldErrors(formErrors, fields, err, scope);
      }
    } finally {
      create.disabled = false;
    }
  });

  load();
  const p = page('API tokens',
    h('p', {}, 'Tokens let CI and scripts call the API: ', h('code', {}, 'Authorization: Bearer slc_…'), '. Rotate one by creating its successor, switching the pipeline over, then revoking the old one. '
      + 'Services that embed the engine take a token of role instance, which can never change a rule.'),
    secret,
    errors.el,
    table('API tokens', ['Name', 'Role', 'Apps', 'Created by', 'Created', 'Expires', 'Last used', ''], tbody),
    form);
  return { ...p, cleanup: undoSettled };
}
