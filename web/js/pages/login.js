// The login page: username and password, with what to do the first time.

import { api } from '../api.js';
import { h } from '../dom.js';
import { errorBox, field, page } from '../ui.js';

/**
 * reasons are the messages of the reason codes the console sends to the
 * login page (#/login?reason=session-ended). Anything else in the URL is
 * ignored: a link must not make the page say what its sender wrote.
 */
const reasons = {
  'logged-out': 'You are logged out.',
  'session-ended': 'Your session has ended; log in again.',
  'password-changed': 'Your password is changed. Log in with the new one.',
};

/** render draws the login form. */
export function render(ctx) {
  const username = field({ label: 'Username', id: 'login-username', input: h('input', { name: 'username', autocomplete: 'username', required: true }) });
  const password = field({ label: 'Password', id: 'login-password', input: h('input', { name: 'password', type: 'password', autocomplete: 'current-password', required: true }) });
  const errors = errorBox();
  const submit = h('button', { type: 'submit', class: 'primary' }, 'Log in');
  const reason = Object.hasOwn(reasons, ctx.params.get('reason')) ? reasons[ctx.params.get('reason')] : null;

  const form = h('form', { class: 'card narrow', id: 'login-form', novalidate: true },
    reason ? h('p', { class: 'alert info', role: 'status' }, reason) : null,
    errors.el,
    username.row,
    password.row,
    h('div', { class: 'actions' }, submit),
    h('details', { class: 'hint-block' },
      h('summary', {}, 'First time here?'),
      h('p', {}, 'On an empty database Sluice creates the user ', h('code', {}, 'admin'), '. Its password is the one given with ',
        h('code', {}, '--admin-password'), ' (or ', h('code', {}, 'SLUICE_ADMIN_PASSWORD'), '); without it, a random password is printed once in the server\'s start-up log, in the warning "created the first user".'),
      h('p', {}, 'After logging in, change it on your account page (your name, top right).')));

  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    errors.clear();
    username.setError('');
    password.setError('');
    submit.disabled = true;
    try {
      await api('POST', '/auth/login', { body: { username: username.input.value, password: password.input.value } });
      await ctx.signedIn(ctx.params.get('next'));
    } catch (err) {
      if (err.status === 429) {
        const wait = err.headers?.get('Retry-After');
        errors.text(`Too many failed logins. Try again${wait ? ` in ${wait} seconds` : ' later'}.`);
      } else if (err.status === 422) {
        for (const d of err.details) {
          ({ username, password })[d.field]?.setError(d.message);
        }
        errors.show(err, []);
      } else {
        errors.show(err);
      }
      password.input.select();
    } finally {
      submit.disabled = false;
    }
  });

  const p = page('Log in to Sluice', form);
  return { ...p, heading: username.input };
}
