// One's own account: who the session is, and a password change (which
// ends every session of the user, this one included).

import { api } from '../api.js';
import { h } from '../dom.js';
import { errorBox, field, page } from '../ui.js';

/** render draws the account page. */
export function render(ctx) {
  const me = ctx.session.me;
  const errors = errorBox();
  const current = field({ label: 'Current password', id: 'account-current', input: h('input', { type: 'password', autocomplete: 'current-password' }) });
  const next = field({ label: 'New password', id: 'account-new', hint: '10 to 72 bytes.', input: h('input', { type: 'password', autocomplete: 'new-password' }) });
  const fields = { currentPassword: current, newPassword: next };
  const form = h('form', { class: 'card narrow', id: 'password-form', novalidate: true, 'aria-labelledby': 'password-title' },
    h('h2', { id: 'password-title' }, 'Change your password'),
    errors.el, current.row, next.row,
    h('div', { class: 'actions' }, h('button', { type: 'submit', class: 'primary' }, 'Change password')));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    for (const f of Object.values(fields)) {
      f.setError('');
    }
    try {
      await api('PATCH', '/me/password', { body: { currentPassword: current.input.value, newPassword: next.input.value } });
      ctx.signedOut('password-changed', false);
    } catch (err) {
      for (const d of err.details ?? []) {
        fields[d.field]?.setError(d.message);
      }
      errors.show(err, (err.details ?? []).filter((d) => !fields[d.field]));
    }
  });
  return page('Your account',
    h('p', {}, 'Logged in as ', h('strong', {}, me.name), ` with the ${me.role} role.`),
    form);
}
