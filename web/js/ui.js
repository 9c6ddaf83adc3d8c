// Small widgets every page uses: page frames, labelled fields with their
// error text, error boxes, badges, a pager, a confirmation dialog and the
// status line for short messages.

import { ApiError, ConnectionError } from './api.js';
import { h, replace, uid } from './dom.js';

/** page is a page's frame: its heading (focused on arrival) and body. */
export function page(title, ...children) {
  const heading = h('h1', { tabindex: '-1' }, title);
  return { node: h('section', { class: 'page' }, heading, ...children), heading, title };
}

/** messageOf words any error for a person. */
export function messageOf(err) {
  if (err instanceof ApiError) {
    return err.message;
  }
  if (err instanceof ConnectionError) {
    return `Could not reach the server: ${err.message}.`;
  }
  return `Something went wrong in the console: ${err?.message ?? err}.`;
}

/**
 * reveal brings an error that has just appeared into view and moves focus to
 * it when it is out of sight: a failed save at the foot of a long form
 * would otherwise write its error where nobody is looking.
 */
function reveal(el) {
  const box = el.getBoundingClientRect();
  if (box.top >= 0 && box.bottom <= window.innerHeight) {
    return;
  }
  el.setAttribute('tabindex', '-1');
  el.scrollIntoView({ block: 'center' });
  el.focus({ preventScroll: true });
}

/**
 * loadError is the row of a table whose rows could not be loaded: the
 * reason and a button that asks again (retry). The page also loads again
 * by itself when the server answers after an outage.
 */
export function loadError(colspan, err, retry) {
  return stateRow(colspan, 'error', h('span', { role: 'alert' }, messageOf(err)), ' ',
    h('button', { type: 'button', class: 'link', onclick: retry }, 'Try again'));
}

/**
 * stateRow is a table's only row while it has no rows to show, saying
 * which of loading, empty or error it is (kind), across colspan columns.
 */
export function stateRow(colspan, kind, ...children) {
  return h('tr', { class: `state-row ${kind}` }, h('td', { colspan, class: kind === 'empty' ? 'empty' : kind }, ...children));
}

/**
 * showFieldErrors puts each of the API's field errors next to its field
 * of fields (by the API's name) and the rest in box. An app of a scope is
 * named apps[i]: its error goes next to the apps field, naming the app
 * of apps (the list sent) it is about unless it does, since the field
 * holds them all.
 */
export function showFieldErrors(box, fields, err, apps) {
  const rest = [];
  for (const d of err.details ?? []) {
    const item = /^apps\[(\d+)\]$/.exec(d.field);
    const f = fields[item ? 'apps' : d.field];
    if (f) {
      const app = item ? apps?.[item[1]] : null;
      f.setError(app && !d.message.includes(app) ? `${app}: ${d.message}` : d.message);
    } else {
      rest.push(d);
    }
  }
  box.show(err, rest);
}

/**
 * errorBox is an alert region: show(err, extraDetails) writes the error's
 * message and the field errors not shown elsewhere; clear() empties it.
 */
export function errorBox() {
  const el = h('div', { class: 'alert error', role: 'alert', hidden: true });
  return {
    el,
    show(err, details) {
      const appearing = el.hidden;
      const list = (details ?? (err instanceof ApiError ? err.details : [])).map((d) =>
        h('li', {}, h('code', {}, d.field), ': ', d.message));
      replace(el, h('p', {}, messageOf(err)), list.length ? h('ul', {}, list) : null);
      el.hidden = false;
      if (appearing) {
        reveal(el);
      }
    },
    text(message) {
      const appearing = el.hidden;
      replace(el, h('p', {}, message));
      el.hidden = false;
      if (appearing) {
        reveal(el);
      }
    },
    clear() {
      el.replaceChildren();
      el.hidden = true;
    },
  };
}

/** badge is a small label; kind colours it (ok, warn, bad, info, muted). */
export function badge(text, kind, title) {
  return h('span', { class: `badge ${kind ?? ''}`, title }, text);
}

/**
 * field is a labelled input with a hint and a place for its error. It
 * returns {row, input, setError(message)}.
 */
export function field({ label, input, hint, id }) {
  const inputId = id ?? uid('field');
  input.id = inputId;
  const errorId = `${inputId}-error`;
  const hintId = `${inputId}-hint`;
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const described = [hint ? hintId : null].filter(Boolean).join(' ');
  if (described) {
    input.setAttribute('aria-describedby', described);
  }
  const isCheck = input.type === 'checkbox';
  const labelEl = h('label', { for: inputId }, label);
  const row = h('div', { class: isCheck ? 'field check' : 'field' },
    isCheck ? [input, labelEl] : [labelEl, input],
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    error);
  return {
    row,
    input,
    setError(message) {
      error.textContent = message ?? '';
      error.hidden = !message;
      if (message) {
        input.setAttribute('aria-invalid', 'true');
        input.setAttribute('aria-describedby', [errorId, described].filter(Boolean).join(' '));
      } else {
        input.removeAttribute('aria-invalid');
        if (described) {
          input.setAttribute('aria-describedby', described);
        } else {
          input.removeAttribute('aria-describedby');
        }
      }
    },
  };
}

/**
 * pager is "page N of M" with previous and next buttons that call
 * onPage(n); update(page, pageSize, total) redraws it.
 */
export function pager(onPage) {
  const el = h('nav', { class: 'pager', 'aria-label': 'Pages' });
  return {
    el,
    update(pageNo, pageSize, total) {
      const pages = Math.max(1, Math.ceil(total / pageSize));
      replace(el,
        h('button', { type: 'button', disabled: pageNo <= 1, onclick: () => onPage(pageNo - 1) }, '← Previous'),
        h('span', {}, `Page ${pageNo} of ${pages} (${total} in all)`),
        h('button', { type: 'button', disabled: pageNo >= pages, onclick: () => onPage(pageNo + 1) }, 'Next →'));
      el.hidden = total <= pageSize && pageNo === 1;
    },
  };
}

/** focusable finds the controls a keyboard can reach inside el. */
function focusable(el) {
  return [...el.querySelectorAll('button, input, select, textarea, a[href]')].filter((c) => !c.disabled && !c.hidden);
}

/**
 * confirmDialog asks a question in a modal dialog and resolves to null
 * when the person cancels (the Cancel button or Escape), else to
 * {reason}. With askReason it offers an optional reason for the change,
 * which the caller sends as X-Change-Reason so that the rule's history
 * says why.
 */
export function confirmDialog({ title, message, confirmLabel, askReason }) {
  return new Promise((resolve) => {
    const titleId = uid('dialog-title');
    const messageId = uid('dialog-message');
    const reasonInput = askReason
      ? h('input', { type: 'text', id: uid('dialog-reason'), maxlength: 1024, autocomplete: 'off', dataset: { role: 'reason' } })
      : null;
    const cancel = h('button', { type: 'button', 'data-action': 'cancel', onclick: () => dialog.close('cancel') }, 'Cancel');
    const confirm = h('button', { type: 'submit', class: 'danger', 'data-action': 'confirm', value: 'confirm' }, confirmLabel);
    // A form of method dialog closes the dialog on submit, so Enter in the
    // reason field confirms as the button does.
    const form = h('form', { method: 'dialog' },
      h('h2', { id: titleId }, title),
      h('p', { id: messageId }, message),
      reasonInput ? h('div', { class: 'field' },
        h('label', { for: reasonInput.id }, 'Reason (optional; kept in the rule\'s history)'), reasonInput) : null,
      h('div', { class: 'actions' }, cancel, confirm));
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId, 'aria-describedby': messageId }, form);
    // A modal dialog makes the page behind it inert, but Tab would still
    // leave it for the browser's own controls: it cycles inside instead.
    dialog.addEventListener('keydown', (e) => {
      if (e.key !== 'Tab') {
        return;
      }
      const controls = focusable(dialog);
      const first = controls[0];
      const last = controls[controls.length - 1];
      if (e.shiftKey && document.activeElement === first) {
        e.preventDefault();
        last.focus();
      } else if (!e.shiftKey && document.activeElement === last) {
        e.preventDefault();
        first.focus();
      }
    });
    const opener = document.activeElement;
    dialog.addEventListener('close', () => {
      dialog.remove();
      opener?.focus?.({ preventScroll: true });
      resolve(dialog.returnValue === 'confirm' ? { reason: reasonInput?.value.trim() ?? '' } : null);
    });
    document.body.append(dialog);
    dialog.showModal();
    (reasonInput ?? cancel).focus();
  });
}

/** reasonHeaders is the X-Change-Reason header for a reason, if any. */
export function reasonHeaders(reason) {
  return reason ? { 'X-Change-Reason': reason } : {};
}

/**
 * confirmThen asks with confirmDialog and, when the person confirms, runs
 * act with the reason given (empty unless question.askReason), handing an
 * error it throws to onError. It resolves to whether the person confirmed.
 */
export async function confirmThen(question, act, onError) {
  const answer = await confirmDialog(question);
  if (!answer) {
    return false;
  }
  try {
    await act(answer.reason);
  } catch (err) {
    onError(err);
  }
  return true;
}

let toastTimer = 0;
// toastCarried is whether the toast shown is about the page a navigation
// is taking the person to ("Saved orders-qps", then the rule list).
let toastCarried = false;

function hideToast() {
  const el = document.getElementById('toast');
  el.textContent = '';
  el.hidden = true;
}

/**
 * toast shows a short message in the status line for a while; carried
 * keeps it through the navigation that follows (made by the caller).
 */
export function toast(message, carried = false) {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.hidden = false;
  toastCarried = carried;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(hideToast, 8000);
}

/**
 * dropToast hides the toast when a page is left: a message about the page
 * before ("Deleted orders-qps") would read as news about the next. A
 * carried toast survives this once.
 */
export function dropToast() {
  if (toastCarried) {
    toastCarried = false;
    return;
  }
  clearTimeout(toastTimer);
  hideToast();
}

/** table is a table with a header row, inside a box that scrolls sideways on small screens. */
export function table(caption, headers, body) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
      h('thead', {}, h('tr', {}, headers.map((label) => h('th', { scope: 'col' }, label)))),
      body));
}

