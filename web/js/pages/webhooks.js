// Event webhooks, for admins: the endpoints (never their secrets) with
// their state, a form that registers one and shows its secret this once,
// and per endpoint a test event, resume when paused, its recent deliveries
// and deletion.

import { api } from '../api.js';
import { h, replace } from '../dom.js';
import { timeEl } from '../format.js';
import { isPending, onSettled, outcomeUnknown, settle, settleDelete } from '../outcome.js';
import { badge, confirmThen, errorBox, field, loadError, page, showFieldErrors, stateRow, table, toast } from '../ui.js';

/** stateBadges colour an endpoint's state. */
const stateBadges = { active: 'ok', paused: 'bad', disabled: 'muted' };

/** deliveryBadges colour a delivery's state. */
const deliveryBadges = { delivered: 'ok', pending: 'warn', failed: 'bad' };

/** render draws the webhooks page. */
export function render() {
  const errors = errorBox();
  const formErrors = errorBox();
  const tbody = h('tbody', {}, stateRow(7, 'loading', 'Loading the webhooks…'));
  const secret = h('div', { class: 'alert ok', id: 'webhook-secret-box', role: 'status', hidden: true });
  const deliveries = h('div', { id: 'webhook-deliveries' });

  const url = field({ label: 'URL', id: 'webhook-url', hint: 'http(s); hosts on loopback, private or link-local addresses are refused unless the server allows them.', input: h('input', { type: 'url', autocomplete: 'off', spellcheck: 'false' }) });
  const events = field({
    label: 'Events', id: 'webhook-events',
    hint: 'Event types separated by commas, e.g. breaker.opened, rule.updated; * for every type.',
    input: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false', value: '*' }),
  });
  const app = field({ label: 'App (optional)', id: 'webhook-app', input: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' }) });
  const resource = field({ label: 'Resource (optional)', id: 'webhook-resource', input: h('input', { type: 'text', autocomplete: 'off', spellcheck: 'false' }) });
  const blockRatePercent = field({
    label: 'Block rate %', id: 'webhook-block-rate-percent',
    hint: 'For resource.blockRate: blocked share of a minute\'s calls, 1 to 100.',
    input: h('input', { type: 'number', min: 1, max: 100, step: 1, value: 50 }),
  });
  const blockRateMinutes = field({
    label: 'For minutes', id: 'webhook-block-rate-minutes',
    hint: 'Each of this many minutes in a row, 1 to 60.',
    input: h('input', { type: 'number', min: 1, max: 60, step: 1, value: 5 }),
  });
  const fields = { url, events, app, resource, blockRatePercent, blockRateMinutes };

  // act sends a test event or a resume and tells whether the server
  // answered; one that times out is followed as of unknown outcome (its
  // button kept disabled) with follow(), which reads back what happened.
  async function act(button, path, done, follow) {
    errors.clear();
    button.disabled = true;
    try {
      const { data } = await api('POST', path);
      toast(done(data));
    } catch (err) {
      if (outcomeUnknown(err)) {
        follow();
        return false;
      }
      errors.show(err);
    }
    // Awaited: what follows an action (its deliveries) finds the rows
    // the list has once it is reloaded.
    await load();
    return true;
  }

  // A test event that timed out was queued if a test delivery to the
  // endpoint is there that was not before (before: the event ids of its
  // test deliveries, read just ahead of the send).
  async function sendTest(w, button) {
    let before;
    try {
      const { data } = await api('GET', `/webhooks/${w.id}/deliveries`, { query: { limit: 100 } });
      before = new Set(data.items.filter((d) => d.eventType === 'test').map((d) => d.eventId));
    } catch (err) {
      errors.show(err);
      return;
    }
    const answered = await act(button, `/webhooks/${w.id}/test`, (d) => `Test event ${d.eventId} queued.`, () => settle({
      key: `webhook:${w.id}:test`,
      what: `Send test to ${w.url}`,
      async check() {
        const { data } = await api('GET', `/webhooks/${w.id}/deliveries`, { query: { limit: 100 } });
        const sent = data.items.find((d) => d.eventType === 'test' && !before.has(d.eventId));
        return sent
          ? { made: true, message: `Test event ${sent.eventId} is queued (${sent.state}).` }
          : { made: false, message: 'No new test event is there. Send it again if you still mean to.' };
      },
    }));
    if (answered) {
      showDeliveries(w);
    }
  }

  // A resume that timed out was made if the endpoint is no longer paused,
  // or paused again since (its pausedAt moved).
  function resume(w, button) {
    return act(button, `/webhooks/${w.id}/resume`, () => 'Resumed: its pending deliveries are due now.', () => settle({
      key: `webhook:${w.id}:resume`,
      what: `Resume ${w.url}`,
      async check() {
        const { data } = await api('GET', `/webhooks/${w.id}`);
        if (data.state === 'paused' && data.pausedAt === w.pausedAt) {
          return { made: false, message: 'It is still paused. Resume it again if you still mean to.' };
        }
        return data.state === 'paused'
          ? { made: true, message: `It was resumed, and is paused again: ${data.pausedReason}` }
          : { made: true, message: `It is ${data.state}: its pending deliveries are due now.` };
      },
    }));
  }

  async function remove(w, button) {
    const confirmed = await confirmThen({
      title: `Delete the webhook to ${w.url}?`,
      message: 'Its pending deliveries are dropped. This cannot be undone.',
      confirmLabel: 'Delete the webhook',
    }, async () => {
      errors.clear();
      await api('DELETE', `/webhooks/${w.id}`);
      toast('Webhook deleted.');
    }, (err) => {
      if (!outcomeUnknown(err)) {
        errors.show(err);
        return;
      }
      button.disabled = true; // the list redraws only once the server answers
      settleDelete({ key: `webhook:${w.id}`, what: `Delete the webhook to ${w.url}`, itemPath: `/webhooks/${w.id}`, name: `The webhook to ${w.url}` });
    });
    if (confirmed) {
      replace(deliveries);
      load();
    }
  }

  async function showDeliveries(w) {
    const body = h('tbody', {}, stateRow(6, 'loading', 'Loading the deliveries…'));
    replace(deliveries, table(`Deliveries to ${w.url}`, ['Event', 'Type', 'State', 'Attempts', 'Last attempt', 'Last error'], body));
    try {
      const { data } = await api('GET', `/webhooks/${w.id}/deliveries`);
      replace(body, data.items.length ? data.items.map((d) => h('tr', { dataset: { event: d.eventId } },
        h('td', {}, h('code', {}, d.eventId)),
        h('td', {}, d.eventType),
        h('td', {}, badge(d.state, deliveryBadges[d.state])),
        h('td', {}, String(d.attempts)),
        h('td', {}, d.lastAttemptAt ? timeEl(d.lastAttemptAt) : '—'),
        h('td', { class: d.lastError ? null : 'muted' }, d.lastError || (d.lastStatus ? `HTTP ${d.lastStatus}` : '—'))))
        : stateRow(6, 'empty', 'No deliveries yet: send a test event.'));
    } catch (err) {
      replace(body, loadError(6, err, () => showDeliveries(w)));
    }
  }

  // The ids listed last, to tell a webhook a timed-out registration made
  // from those already there: URLs need not be unique.
  let knownIds = new Set();
  const undoSettled = onSettled((key) => {
    if (key.startsWith('webhook:')) {
      load();
    }
  });

  // A registration that timed out was made if a webhook to its URL that
  // was not listed before is there now.
  function settleCreate(body, before) {
    return settle({
      key: `webhook:new:${body.url}`,
      what: `Register the webhook to ${body.url}`,
      async check() {
        const { data } = await api('GET', '/webhooks');
        return data.items.some((w) => w.url === body.url && !before.has(w.id))
          ? { made: true, message: 'It is registered. Its signing secret was in the answer that never came: delete it and register it again to get one.' }
          : { made: false, message: 'No new webhook to it is there. Register it again if you still mean to.' };
      },
    });
  }

  async function load() {
    try {
      const { data } = await api('GET', '/webhooks');
      knownIds = new Set(data.items.map((w) => w.id));
      replace(tbody, data.items.length ? data.items.map((w) => h('tr', { dataset: { webhook: String(w.id) } },
        h('th', { scope: 'row' }, h('code', {}, w.url)),
        h('td', {}, w.events.join(', ')),
        h('td', { class: w.app || w.resource ? null : 'muted' }, [w.app, w.resource].filter(Boolean).join(' · ') || 'all'),
        h('td', {}, badge(w.state, stateBadges[w.state], w.pausedReason), w.pausedReason ? h('p', { class: 'hint' }, w.pausedReason) : null),
        h('td', {}, String(w.failures)),
        h('td', {}, timeEl(w.createdAt)),
        h('td', { class: 'actions' },
          h('button', { type: 'button', class: 'link', disabled: isPending(`webhook:${w.id}:test`), onclick: (e) => sendTest(w, e.currentTarget), 'aria-label': `Send test to ${w.url}` }, 'Send test'),
          w.state === 'paused'
            ? h('button', { type: 'button', class: 'link', disabled: isPending(`webhook:${w.id}:resume`), onclick: (e) => resume(w, e.currentTarget), 'aria-label': `Resume ${w.url}` }, 'Resume')
            : null,
          h('button', { type: 'button', class: 'link', onclick: () => showDeliveries(w), 'aria-label': `Deliveries to ${w.url}` }, 'Deliveries'),
          h('button', { type: 'button', class: 'link danger', disabled: isPending(`webhook:${w.id}`), onclick: (e) => remove(w, e.currentTarget), 'aria-label': `Delete the webhook to ${w.url}` }, 'Delete'))))
        : stateRow(7, 'empty', 'No webhooks yet: register an endpoint below to hear of breakers and rule changes.'));
    } catch (err) {
      replace(tbody, loadError(7, err, load));
    }
  }

  const create = h('button', { type: 'submit', class: 'primary', id: 'webhook-create' }, 'Register webhook');
  const form = h('form', { class: 'card', id: 'webhook-form', novalidate: true, 'aria-labelledby': 'webhook-form-title' },
    h('h2', { id: 'webhook-form-title' }, 'New webhook'),
    formErrors.el,
    h('div', { class: 'toolbar' }, url.row, events.row, app.row, resource.row, blockRatePercent.row, blockRateMinutes.row),
    h('div', { class: 'actions' }, create));
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    formErrors.clear();
    secret.hidden = true;
    secret.replaceChildren();
    for (const f of Object.values(fields)) {
      f.setError('');
    }
    const body = {
      url: url.input.value.trim(),
      events: events.input.value.split(/[\s,]+/).filter(Boolean),
    };
    if (app.input.value.trim()) {
      body.app = app.input.value.trim();
    }
    if (resource.input.value.trim()) {
      body.resource = resource.input.value.trim();
    }
    for (const [name, f] of [['blockRatePercent', blockRatePercent], ['blockRateMinutes', blockRateMinutes]]) {
      if (f.input.value !== '') {
        body[name] = Number(f.input.value);
      }
    }
    create.disabled = true;
    const before = knownIds;
    try {
      const { data } = await api('POST', '/webhooks', { body });
      replace(secret,
        h('p', {}, h('strong', {}, 'Webhook registered. Copy its signing secret now: it is shown only this once.')),
        h('p', { class: 'secret' }, h('code', { id: 'webhook-secret' }, data.secret)),
        h('p', {}, 'Verify each delivery\'s webhook-signature with it (Standard Webhooks).'),
        h('button', { type: 'button', onclick: () => { secret.hidden = true; secret.replaceChildren(); } }, 'Done, I copied it'));
      secret.hidden = false;
      // The defaults are properties, which reset empties.
      form.reset();
      events.input.value = '*';
      blockRatePercent.input.value = 50;
      blockRateMinutes.input.value = 5;
      load();
    } catch (err) {
      // One field holds every event type: events[i]'s error goes under it.
      if (err.details) {
        err.details = err.details.map((d) => (/^events\[\d+\]$/.test(d.field) ? { ...d, field: 'events' } : d));
      }
      if (outcomeUnknown(err)) {
        await settleCreate(body, before);
      } else {
        showFieldErrors(formErrors, fields, err);
      }
    } finally {
      create.disabled = false;
    }
  });

  load();
  const p = page('Webhooks',
    h('p', {}, 'Sluice posts events — breakers opening and closing, rules changed — to these endpoints, signed as Standard Webhooks asks, and retries for a day. '
      + 'An endpoint that keeps failing is paused until you resume it; its deliveries wait.'),
    secret,
    errors.el,
    table('Webhooks', ['URL', 'Events', 'Filter', 'State', 'Failures', 'Created', ''], tbody),
    deliveries,
    form);
  return { ...p, cleanup: undoSettled };
}
