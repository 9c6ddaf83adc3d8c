// Building the page from data without ever parsing markup: text always
// goes in as text nodes and properties are set one by one, so a rule name
// or a resource name can never become HTML, whatever it holds.

const forbidden = new Set(['innerHTML', 'outerHTML', 'srcdoc', 'style']);

// Properties set on the element itself rather than as attributes, because
// the attribute only holds the initial value. (An option's selected stays an
// attribute: it is what a form's reset goes back to.)
const properties = new Set(['value', 'checked', 'disabled', 'hidden', 'indeterminate', 'multiple']);

/**
 * h creates an element: h('a', {href: '#/rules', class: 'button'}, 'Rules').
 * Props named on* add event listeners; null, undefined and false props are
 * skipped; children are nodes, strings (as text) or arrays of them.
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(props ?? {})) {
    if (forbidden.has(key)) {
      throw new Error(`h: refusing to set ${key}`);
    }
    if (value === undefined || value === null || value === false) {
      continue;
    }
    if (key.startsWith('on') && typeof value === 'function') {
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (key === 'class') {
      el.className = value;
    } else if (key === 'dataset') {
      Object.assign(el.dataset, value);
    } else if (properties.has(key)) {
      el[key] = value;
    } else {
      el.setAttribute(key, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

/** append adds children (nodes, strings as text, arrays, or nothing) to el. */
export function append(el, children) {
  for (const child of [children].flat(Infinity)) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** replace makes children the only content of el. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** option is an <option> with a value and a label. */
export function option(value, label, selected) {
  return h('option', { value, selected: Boolean(selected) }, label ?? value);
}

let ids = 0;

/** uid returns an id unique in the page, for labels and aria references. */
export function uid(prefix) {
  ids += 1;
  return `${prefix}-${ids}`;
}
