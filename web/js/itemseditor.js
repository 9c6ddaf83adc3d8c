// Editors for the rule fields that hold many items: an object of value →
// threshold (a hotspot rule's specificItems, "per value") and a list of
// names (an authority rule's origins, "who may call"). Each is rows of
// inputs with add and remove, checked in the browser where the mistake is
// plain (a value twice, a threshold without its value, too many rows), and
// shows the API's errors at the row they name (origins[1], or the value an
// error about specificItems quotes).

import { h, replace, uid } from './dom.js';
import { decimalNumber } from './format.js';

/**
 * rowsEditor is the shared part: a group of rows of one or more columns.
 * columns: [{key, head, label(n), numeric}], head over the column and
 * label(n) the input's in row n; noun names a row for people ("value",
 * "origin"). It returns the group and its parts for the editors below.
 */
function rowsEditor({ id, label, hint, columns, noun, max }) {
  const hintId = `${id}-hint`;
  const errorId = `${id}-error`;
  const list = h('ol', { class: 'item-rows', id: `${id}-rows` });
  const error = h('p', { class: 'field-error', id: errorId, hidden: true });
  const add = h('button', { type: 'button', id: `${id}-add` }, `Add ${/^[aeiou]/.test(noun) ? 'an' : 'a'} ${noun}`);
  const count = h('span', { class: 'muted small', 'aria-live': 'polite' });
  // Column heads for the eye; each input carries its own label.
  const head = columns.length > 1
    ? h('div', { class: 'item-row item-head', 'aria-hidden': 'true', hidden: true },
      columns.map((c) => h('span', { class: c.numeric ? 'narrow' : null }, c.head)))
    : null;
  const described = hint ? hintId : null;
  const group = h('fieldset', { class: 'items-field', id, 'aria-describedby': described },
    h('legend', {}, label),
    hint ? h('p', { class: 'hint', id: hintId }, hint) : null,
    head,
    list,
    h('div', { class: 'actions' }, add, count),
    error);
  const rows = [];
  const errors = [];

  function renumber() {
    rows.forEach((r, i) => {
      r.el.dataset.row = String(i);
      for (const c of columns) {
        r.inputs[c.key].setAttribute('aria-label', c.label(i + 1));
      }
      r.remove.setAttribute('aria-label', `Remove ${noun} ${i + 1}`);
    });
    if (head) {
      head.hidden = rows.length === 0;
    }
    add.disabled = rows.length >= max;
    count.textContent = rows.length >= max ? `${max} at most.` : '';
  }

  function addRow(values, focus) {
    const inputs = {};
    for (const c of columns) {
      inputs[c.key] = h('input', {
        type: 'text', autocomplete: 'off', spellcheck: 'false', dataset: { col: c.key },
        inputmode: c.numeric ? 'decimal' : null, class: c.numeric ? 'narrow' : null,
        value: values?.[c.key] === undefined ? '' : String(values[c.key]),
      });
    }
    const rowError = h('p', { class: 'field-error', hidden: true });
    const row = { inputs, error: rowError };
    row.remove = h('button', {
      type: 'button', class: 'link danger', onclick: () => {
        const i = rows.indexOf(row);
        rows.splice(i, 1);
        row.el.remove();
        renumber();
        group.dispatchEvent(new Event('input', { bubbles: true }));
        (rows[Math.min(i, rows.length - 1)]?.inputs[columns[0].key] ?? add).focus();
      },
    }, 'Remove');
    row.el = h('li', {}, h('div', { class: 'item-row' }, columns.map((c) => inputs[c.key]), row.remove), rowError);
    rows.push(row);
    list.append(row.el);
    renumber();
    if (focus) {
      inputs[columns[0].key].focus();
    }
    return row;
  }
  add.addEventListener('click', () => addRow(null, true));

  function setRowError(row, message) {
    const text = [row.error.textContent, message].filter(Boolean).join(' ');
    row.error.textContent = text;
    row.error.hidden = !text;
    row.error.id ||= uid(`${id}-row-error`);
    for (const input of Object.values(row.inputs)) {
      input.setAttribute('aria-invalid', 'true');
      input.setAttribute('aria-describedby', row.error.id);
    }
  }

  function setGroupError(message) {
    errors.push(message);
    error.textContent = errors.join(' ');
    error.hidden = false;
    group.setAttribute('aria-describedby', [errorId, described].filter(Boolean).join(' '));
  }

  function clear() {
    errors.length = 0;
    error.textContent = '';
    error.hidden = true;
    if (described) {
      group.setAttribute('aria-describedby', described);
    } else {
      group.removeAttribute('aria-describedby');
    }
    for (const r of rows) {
      r.error.textContent = '';
      r.error.hidden = true;
      for (const input of Object.values(r.inputs)) {
        input.removeAttribute('aria-invalid');
        input.removeAttribute('aria-describedby');
      }
    }
  }

  function write(items) {
    rows.length = 0;
    replace(list);
    items.forEach((values) => addRow(values, false));
    renumber();
  }

  return { group, rows, add, addRow, setRowError, setGroupError, clear, write };
}

/**
 * untouched keeps the value an editor was filled with while the person
 * has not edited it: kept.value is that value, exactly as the rule has it
 * (the rows show it trimmed), until an edit in group makes it undefined.
 */
function untouched(group) {
  const kept = { value: undefined };
  group.addEventListener('input', () => {
    kept.value = undefined;
  });
  group.addEventListener('change', () => {
    kept.value = undefined;
  });
  return kept;
}

/**
 * firstInvalid is where focus goes for an error of the editor: its first
 * input marked invalid, else (an error about the whole group, under it)
 * its first input or its add button; never the group itself, which
 * cannot take focus.
 */
function firstInvalid(group) {
  return group.querySelector('[aria-invalid="true"]') ?? group.querySelector('input, button:not(:disabled)');
}

/**
 * objectEditor edits an object of value → number (specificItems): rows of
 * a value and its threshold. read() answers the object, a threshold that
 * is not a number sent as typed for the API to name.
 */
export function objectEditor({ id, label, hint, max }) {
  const ed = rowsEditor({
    id, label, hint, max, noun: 'value',
    columns: [
      { key: 'value', head: 'Value', label: (n) => `Value ${n}` },
      { key: 'threshold', head: 'Its threshold', label: (n) => `Threshold of value ${n}`, numeric: true },
    ],
  });
  const filled = () => ed.rows.filter((r) => r.inputs.value.value.trim() !== '' || r.inputs.threshold.value.trim() !== '');
  const kept = untouched(ed.group);
  return {
    row: ed.group,
    get input() {
      return firstInvalid(ed.group);
    },
    read() {
      if (kept.value) {
        return kept.value;
      }
      const out = {};
      for (const r of filled()) {
        const raw = r.inputs.threshold.value.trim();
        out[r.inputs.value.value.trim()] = decimalNumber(raw) ?? raw;
      }
      return out;
    },
    write(value) {
      kept.value = value;
      ed.write(Object.entries(value ?? {}).map(([v, threshold]) => ({ value: v, threshold })));
    },
    /** check marks the plain mistakes and tells whether there were any. */
    check() {
      let bad = false;
      const seen = new Map();
      for (const r of filled()) {
        const value = r.inputs.value.value.trim();
        const raw = r.inputs.threshold.value.trim();
        if (value === '') {
          ed.setRowError(r, 'Give the value this threshold is for.');
          bad = true;
        } else if (seen.has(value)) {
          ed.setRowError(r, `"${value}" is listed twice: keep one row per value.`);
          bad = true;
        }
        if (decimalNumber(raw) === null) {
          ed.setRowError(r, 'Give a threshold: a number ≥ 0, in decimal, such as 100 or 2.5.');
          bad = true;
        }
        seen.set(value, r);
      }
      if (filled().length > max) {
        ed.setGroupError(`At most ${max} values.`);
        bad = true;
      }
      return bad;
    },
    /**
     * setError shows an API error: at the row of the value it quotes
     * (the threshold of "vip" …) or under the whole group.
     */
    setError(message) {
      if (!message) {
        ed.clear();
        return;
      }
      const quoted = [...message.matchAll(/"((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
      const row = ed.rows.find((r) => quoted.includes(r.inputs.value.value.trim()));
      if (row) {
        ed.setRowError(row, message);
      } else {
        ed.setGroupError(message);
      }
    },
  };
}

/**
 * arrayEditor edits a list of names (origins): a row per name. read()
 * answers the names filled in, in order; an error naming origins[i] is
 * shown at row i.
 */
export function arrayEditor({ id, label, hint, max }) {
  const ed = rowsEditor({
    id, label, hint, max, noun: 'origin',
    columns: [{ key: 'name', label: (n) => `Origin ${n}` }],
  });
  const filled = () => ed.rows.filter((r) => r.inputs.name.value.trim() !== '');
  const kept = untouched(ed.group);
  return {
    row: ed.group,
    get input() {
      return firstInvalid(ed.group);
    },
    read() {
      return kept.value ?? filled().map((r) => r.inputs.name.value.trim());
    },
    write(value) {
      kept.value = value;
      const names = value ?? [];
      ed.write((names.length ? names : ['']).map((name) => ({ name })));
    },
    check() {
      let bad = false;
      const seen = new Set();
      for (const r of filled()) {
        const name = r.inputs.name.value.trim();
        if (seen.has(name)) {
          ed.setRowError(r, `"${name}" is listed twice.`);
          bad = true;
        }
        seen.add(name);
      }
      if (filled().length > max) {
        ed.setGroupError(`At most ${max} origins.`);
        bad = true;
      }
      return bad;
    },
    /** setError shows an API error at the row its path names (origins[1]), else under the group. */
    setError(message, path) {
      if (!message) {
        ed.clear();
        return;
      }
      const index = Number(/\[(\d+)\]/.exec(path ?? '')?.[1] ?? -1);
      const row = filled()[index];
      if (row) {
        ed.setRowError(row, message);
      } else {
        ed.setGroupError(message);
      }
    },
  };
}
