// Small widgets every page uses: page frames, labelled fields with their
// error text, error boxes, badges, a pager, a confirmation dialog and the
// status line for short messages.

import { ApiError } from './api.js';
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
  return `Could not reach the server (${err?.message ?? err}).`;
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
      const list = (details ?? (err instanceof ApiError ? err.details : [])).map((d) =>
        h('li', {}, h('code', {}, d.field), ': ', d.message));
      replace(el, h('p', {}, messageOf(err)), list.length ? h('ul', {}, list) : null);
      el.hidden = false;
    },
    text(message) {
      replace(el, h('p', {}, message));
      el.hidden = false;
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

/**
 * confirmDialog asks a yes/no question in a modal dialog and resolves to
 * true when the person confirms.
 */
export function confirmDialog({ title, message, confirmLabel }) {
  return new Promise((resolve) => {
    const titleId = uid('dialog-title');
    const dialog = h('dialog', { class: 'dialog', 'aria-labelledby': titleId },
      h('h2', { id: titleId }, title),
      h('p', {}, message));
    const cancel = h('button', { type: 'button', onclick: () => dialog.close('cancel') }, 'Cancel');
    const confirm = h('button', { type: 'button', class: 'danger', 'data-action': 'confirm', onclick: () => dialog.close('confirm') }, confirmLabel);
    dialog.append(h('div', { class: 'actions' }, cancel, confirm));
    dialog.addEventListener('close', () => {
      dialog.remove();
      resolve(dialog.returnValue === 'confirm');
    });
    document.body.append(dialog);
    dialog.showModal();
    cancel.focus();
  });
}

/**
 * confirmThen asks with confirmDialog and, when the person confirms, runs
 * act, handing an error it throws to onError. It resolves to whether the
 * person confirmed.
 */
export async function confirmThen(question, act, onError) {
  if (!(await confirmDialog(question))) {
    return false;
  }
  try {
    await act();
  } catch (err) {
    onError(err);
  }
  return true;
}

let toastTimer = 0;

/** toast shows a short message in the status line for a while. */
export function toast(message) {
  const el = document.getElementById('toast');
  el.textContent = message;
  el.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => {
    el.textContent = '';
    el.hidden = true;
  }, 8000);
}

/** table is a table with a header row, inside a box that scrolls sideways on small screens. */
export function table(caption, headers, body) {
  return h('div', { class: 'table-wrap' },
    h('table', {},
      caption ? h('caption', { class: 'visually-hidden' }, caption) : null,
      h('thead', {}, h('tr', {}, headers.map((label) => h('th', { scope: 'col' }, label)))),
      body));
}

