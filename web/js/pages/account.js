// One's own account: who the session is, and a password change (which
// ends every session of the user, this one included).

import { api } from '../api.js';
import { h } from '../dom.js';
import { isPending, outcomeUnknown, settle } from '../outcome.js';
import { errorBox, field, page } from '../ui.js';

/**
 * settlePassword follows a change of one's own password that timed out.
 * A password cannot be read back, but a change ends every session of the
 * user, this one included: a session still open when the server answers
 * again says it was not made, an ended one that it most likely was.
 */
function settlePassword() {
  return settle({
    key: 'me:password',
    what: 'Change your password',
    async check() {
      try {
        await api('GET', '/me');
      } catch (err) {
        if (err.status === 401) {
          return { made: true, message: 'Your session has ended, as a password change ends it. A password cannot be read back: log in with the new one, and if only the old one works, change it again.' };
        }
        throw err;
      }
      return { made: false, message: 'Your session is still open, and a password change would have ended it. Change it again if you still mean to.' };
    },
  });
}

/** render draws the account page. */
export function render(ctx) {
  const me = ctx.session.me;
  const errors = errorBox();
  const current = field({ label: 'Current password', id: 'account-current', input: h('input', { type: 'password', autocomplete: 'current-password' }) });
  const next = field({ label: 'New password', id: 'account-new', hint: '10 to 72 bytes.', input: h('input', { type: 'password', autocomplete: 'new-password' }) });
  const fields = { currentPassword: current, newPassword: next };
  const submit = h('button', { type: 'submit', class: 'primary', disabled: isPending('me:password') }, 'Change password');
  const form = h('form', { class: 'card narrow', id: 'password-form', novalidate: true, 'aria-labelledby': 'password-title' },
    h('h2', { id: 'password-title' }, 'Change your password'),
    errors.el, current.row, next.row,
    h('div', { class: 'actions' }, submit));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    for (const f of Object.values(fields)) {
      f.setError('');
    }
    submit.disabled = true;
    try {
      await api('PATCH', '/me/password', { body: { currentPassword: current.input.value, newPassword: next.input.value } });
      ctx.signedOut('password-changed', false);
    } catch (err) {
      if (outcomeUnknown(err)) {
        // Change password stays disabled until the outcome is known: a
        // second try with the old password would be refused if the
        // first was made.
        await settlePassword();
        submit.disabled = false;
        return;
      }
      submit.disabled = false;
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
