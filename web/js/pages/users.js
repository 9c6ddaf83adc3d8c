// Console users, for admins: the list, a form that adds one, and per user
// a role change, a new password and deletion.

import { ApiError, api } from '../api.js';
import { h, option, replace, uid } from '../dom.js';
import { appsText, parseApps, timeEl } from '../format.js';
import { isPending, onSettled, outcomeUnknown, settle, settleCreate, settleDelete } from '../outcome.js';
import { confirmDialog, confirmThen, errorBox, field, loadError, page, showFieldErrors, stateRow, table, toast } from '../ui.js';

const roles = [['viewer', 'viewer: reads'], ['editor', 'editor: also writes rules'], ['admin', 'admin: also users and tokens']];

/** roleEffects words what a user can do once given each role. */
const roleEffects = {
  viewer: (name) => `${name} can then read rules and figures, and change nothing.`,
  editor: (name) => `${name} can then create, change and delete rules.`,
  admin: (name) => `${name} can then also manage users, API tokens and webhooks.`,
};

function roleSelect(selected, id) {
  return h('select', { id }, roles.map(([value, label]) => option(value, label, value === selected)));
}

/**
 * showUserError shows an error about user u, the user named by username
 * where the API's message names them by id ("user 1 is the last admin").
 */
function showUserError(errors, u, err) {
  if (err instanceof ApiError) {
    err.message = err.message.replace(new RegExp(`\\buser ${u.id}\\b`, 'g'), u.username);
  }
  errors.show(err);
}

/** render draws the users page. */
export function render(ctx) {
  const errors = errorBox();
  const formErrors = errorBox();
  const tbody = h('tbody', {}, stateRow(6, 'loading', 'Loading the users…'));

  // change sends a change of user u from its row's button, disabled from
  // the click: one that times out keeps it so until its outcome is known
  // (the row redraws then), since the list cannot be read meanwhile.
  async function change(u, body, what, button) {
    errors.clear();
    button.disabled = true;
    try {
      await api('PATCH', `/users/${u.id}`, { body });
      toast(`${u.username}: ${what}.`);
    } catch (err) {
      if (outcomeUnknown(err)) {
        settleChange(u, body, what);
        return;
      }
      showUserError(errors, u, err);
    }
    load();
  }

  // A change of a user that timed out: the user as the server has it now
  // tells a role or apps change; a password cannot be read back, so that
  // one stays unknown, said as such.
  function settleChange(u, body, what) {
    return settle({
      key: `user:${u.id}`,
      what: `${u.username}: ${what}`,
      async check() {
        const { data } = await api('GET', `/users/${u.id}`);
        if (body.password !== undefined) {
          throw new Error(`A password cannot be read back: set it again to be sure (it ends ${u.username}'s sessions either way).`);
        }
        const same = body.role !== undefined
          ? data.role === body.role
          : appsText(data.apps) === appsText(body.apps);
        return same
          ? { made: true, message: `${u.username} is ${data.role}, apps ${appsText(data.apps)}.` }
          : { made: false, message: `${u.username} is still ${data.role}, apps ${appsText(data.apps)}. Make the change again if you still mean to.` };
      },
    });
  }
  const undoSettled = onSettled((key) => {
    if (key.startsWith('user:') || key.startsWith('/users:')) {
      load();
    }
  });

  // A role change and a new password take effect at once and cannot be
  // undone by the one who made them by mistake (a demoted admin's tokens
  // are gone): both ask first, saying what they do.
  async function setRole(u, to, button) {
    if (to === u.role) {
      errors.text(`${u.username} is already ${to}.`);
      return;
    }
    const confirmed = await confirmDialog({
      title: `Make ${u.username} ${to}?`,
      message: [u.role === 'admin'
        ? `${u.username} loses the users, tokens and webhooks pages, and the admin API tokens they created (and those these created in turn) are revoked at once: whatever uses them is refused from then on.`
        : null, roleEffects[to](u.username)].filter(Boolean).join(' '),
      confirmLabel: `Make ${u.username} ${to}`,
    });
    if (confirmed) {
      await change(u, { role: to }, `role set to ${to}`, button);
    }
  }

  async function setPassword(u, password, button) {
    const self = u.username === ctx.session.me?.name;
    const confirmed = await confirmDialog({
      title: `Set a new password for ${u.username}?`,
      message: `${self ? 'Your' : 'Their'} sessions end at once, ${self ? 'this one included: you' : 'so they'} log in again with the new password. API tokens keep working.`,
      confirmLabel: 'Set the password',
    });
    if (confirmed) {
      await change(u, { password }, 'password changed; their sessions ended', button);
    }
  }

  async function remove(u, button) {
    const confirmed = await confirmThen({
      title: `Delete ${u.username}?`,
      message: 'Their sessions end at once. The rules they changed keep their name in the history.',
      confirmLabel: 'Delete the user',
    }, async () => {
      errors.clear();
      await api('DELETE', `/users/${u.id}`);
      toast(`Deleted ${u.username}.`);
    }, (err) => {
      if (!outcomeUnknown(err)) {
        showUserError(errors, u, err);
        return;
      }
      button.disabled = true; // the list redraws only once the server answers
      settleDelete({ key: `user:${u.id}`, what: `Delete ${u.username}`, itemPath: `/users/${u.id}`, name: u.username });
    });
    if (confirmed) {
      load();
    }
  }

  function row(u, lastAdmin) {
    const roleId = uid('user-role');
    const passId = uid('user-password');
    const appsId = uid('user-apps');
    const role = roleSelect(u.role, roleId);
    const password = h('input', { type: 'password', id: passId, autocomplete: 'new-password', placeholder: 'new password' });
    const apps = h('input', { type: 'text', id: appsId, autocomplete: 'off', spellcheck: 'false', value: u.apps?.join(', ') ?? '', placeholder: 'all' });
    const self = u.username === ctx.session.me?.name;
    const busy = isPending(`user:${u.id}`);
    return h('tr', { dataset: { user: u.username } },
      h('th', { scope: 'row' }, u.username, self ? ' (you)' : ''),
      h('td', {},
        h('label', { for: roleId, class: 'visually-hidden' }, `Role of ${u.username}`), role, ' ',
        h('button', { type: 'button', disabled: busy, onclick: (e) => setRole(u, role.value, e.currentTarget) }, 'Set role')),
      h('td', {},
        h('label', { for: appsId, class: 'visually-hidden' }, `Apps of ${u.username} (empty: all)`), apps, ' ',
        h('button', { type: 'button', disabled: busy, onclick: (e) => {
          const scope = parseApps(apps.value);
          change(u, { apps: scope }, `apps set to ${appsText(scope)}`, e.currentTarget);
        } }, 'Set apps')),
      h('td', {},
        h('label', { for: passId, class: 'visually-hidden' }, `New password for ${u.username}`), password, ' ',
        h('button', { type: 'button', disabled: busy, onclick: (e) => setPassword(u, password.value, e.currentTarget) }, 'Set password')),
      h('td', {}, timeEl(u.createdAt)),
      h('td', {}, lastAdmin
        ? h('span', { class: 'muted small' }, 'the last admin')
        : h('button', { type: 'button', class: 'link danger', disabled: busy, onclick: (e) => remove(u, e.currentTarget), 'aria-label': `Delete ${u.username}` }, 'Delete')));
  }

  async function load() {
    try {
      const { data } = await api('GET', '/users', { query: { pageSize: 500 } });
      const admins = data.items.filter((u) => u.role === 'admin').length;
      replace(tbody, data.items.map((u) => row(u, u.role === 'admin' && admins === 1)));
    } catch (err) {
      replace(tbody, loadError(6, err, load));
    }
  }

  const username = field({ label: 'Username', id: 'user-username', input: h('input', { type: 'text', autocomplete: 'off', maxlength: 64 }) });
  const role = field({ label: 'Role', id: 'user-new-role', input: roleSelect('editor') });
  const apps = field({
    label: 'Apps (empty: all)', id: 'user-new-apps',
    hint: 'Hold them to the rules of these apps, separated by commas or spaces. Not for admins.',
    input: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' }),
  });
  const password = field({ label: 'Password', id: 'user-password', hint: '10 to 72 bytes.', input: h('input', { type: 'password', autocomplete: 'new-password' }) });
  const fields = { username, role, apps, password };
  const add = h('button', { type: 'submit', class: 'primary', id: 'user-add' }, 'Add user');
  const form = h('form', { class: 'card', id: 'user-form', novalidate: true, 'aria-labelledby': 'user-form-title' },
    h('h2', { id: 'user-form-title' }, 'New user'),
    formErrors.el,
    h('div', { class: 'toolbar' }, username.row, role.row, apps.row, password.row),
    h('div', { class: 'actions' }, add));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    for (const f of Object.values(fields)) {
      f.setError('');
    }
    const body = { username: username.input.value.trim(), role: role.input.value, password: password.input.value };
    const scope = parseApps(apps.input.value);
    if (scope) {
      body.apps = scope;
    }
    add.disabled = true;
    try {
      const { data } = await api('POST', '/users', { body });
      toast(`Added ${data.username} (${data.role}).`);
      form.reset();
      load();
    } catch (err) {
      if (outcomeUnknown(err)) {
        // Usernames are case-insensitive: the list may spell it otherwise.
        await settleCreate({ what: `Add ${body.username}`, path: '/users', name: body.username.toLowerCase(), nameOf: (it) => it.username.toLowerCase() });
      } else {
        showFieldErrors(formErrors, fields, err, scope);
      }
    } finally {
      add.disabled = false;
    }
  });

  load();
  const p = page('Users',
    h('p', {}, 'Who can log in to the console, and what they may do. The last admin can be neither demoted nor deleted.'),
    errors.el,
    table('Users', ['User', 'Role', 'Apps', 'Password', 'Created', ''], tbody),
    form);
  return { ...p, cleanup: undoSettled };
}
