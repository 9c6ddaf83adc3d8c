// The console's entry point: the session, the header and the router. Pages
// live in pages/; each render(ctx) answers {node, heading, title, cleanup}
// at once and fills itself in as its data arrives. Routes are in the URL's
// fragment (#/rules), so the server only ever serves static files.

import { ConnectionError, api, onUnauthorized, setCsrf } from './api.js';
import { connection } from './connection.js';
import { h, replace } from './dom.js';
import { clockTime } from './format.js';
import { feed } from './live.js';
import { loadRuleSchema } from './rulesinfo.js';
import { dropToast, toast } from './ui.js';
import * as account from './pages/account.js';
import * as apply from './pages/apply.js';
import * as history from './pages/history.js';
import * as instances from './pages/instances.js';
import * as login from './pages/login.js';
import * as overview from './pages/overview.js';
import * as resource from './pages/resource.js';
import * as ruleForm from './pages/ruleform.js';
import * as rules from './pages/rules.js';
import * as tokens from './pages/tokens.js';
import * as users from './pages/users.js';
import * as webhooks from './pages/webhooks.js';

// Pages marked reload are drawn again when the server answers after an
// outage, so that none stays on an error or on figures from before it;
// the others hold what a person is typing, which a redraw would lose.
const routes = [
  { pattern: /^\/login$/, page: login, public: true },
  { pattern: /^\/$/, page: overview, nav: '/', reload: true },
  { pattern: /^\/resources\/(.+)$/, page: resource, nav: '/', reload: true },
  { pattern: /^\/rules$/, page: rules, nav: '/rules', reload: true },
  { pattern: /^\/rules\/new$/, page: ruleForm, nav: '/rules' },
  { pattern: /^\/rules\/(\d+)\/edit$/, page: ruleForm, nav: '/rules' },
  { pattern: /^\/rules\/(\d+)\/history$/, page: history, nav: '/rules', reload: true },
  { pattern: /^\/apply$/, page: apply, nav: '/apply' },
  { pattern: /^\/instances$/, page: instances, nav: '/instances', reload: true },
  { pattern: /^\/tokens$/, page: tokens, nav: '/tokens', admin: true, reload: true },
  { pattern: /^\/users$/, page: users, nav: '/users', admin: true, reload: true },
  { pattern: /^\/webhooks$/, page: webhooks, nav: '/webhooks', admin: true, reload: true },
  { pattern: /^\/account$/, page: account },
];

/** session is who is logged in: me as GET /me answers it, or null. */
const session = {
  me: null,
  get isAdmin() {
    return this.me?.role === 'admin';
  },
  get canWrite() {
    return this.me?.role === 'admin' || this.me?.role === 'editor';
  },
};

const main = document.getElementById('main');
let current = null;
let currentRoute = null;
// currentHash is the address of the page shown, to go back to when the
// page keeps the person from leaving it.
let currentHash = '';
// shownPath is the path of the page shown, without its query: a page
// drawn again (filters, the server back) is no navigation.
let shownPath = null;
// unreached is set when the page could not even learn who is logged in
// because the server did not answer; it is drawn once the server is back.
let unreached = false;
let renders = 0;

function parseHash() {
  const raw = window.location.hash.replace(/^#/, '') || '/';
  const [path, query] = raw.split('?');
  return { path: path || '/', params: new URLSearchParams(query ?? '') };
}

/** go navigates to a console path, with optional query parameters. */
function go(path, params) {
  const query = params ? new URLSearchParams(params).toString() : '';
  const target = `#${path}${query ? `?${query}` : ''}`;
  if (window.location.hash === target) {
    route();
  } else {
    window.location.hash = target;
  }
}

/** setParams rewrites the query of the current route without leaving it. */
function setParams(params) {
  const { path } = parseHash();
  const query = new URLSearchParams(
    Object.entries(params).filter(([, v]) => v !== '' && v !== null && v !== undefined),
  ).toString();
  window.history.replaceState(null, '', `#${path}${query ? `?${query}` : ''}`);
}

async function loadSession() {
  const { data } = await api('GET', '/me');
  session.me = data;
  setCsrf(data.csrfToken, data.user?.id ?? null);
  feed.start();
  renderHeader();
  checkDemo();
}

/** signedIn is called by the login page once the session is open. */
async function signedIn(next) {
  await loadSession();
  go(next && next !== '/login' ? next : '/');
}

/**
 * signedOut forgets the session and goes to the login page, which says
 * why (reason: one of the login page's reason codes) and, with keepPlace,
 * comes back here after the login.
 */
function signedOut(reason, keepPlace) {
  session.me = null;
  setCsrf('');
  feed.stop();
  connection.reset();
  renderHeader();
  const { path } = parseHash();
  if (path !== '/login') {
    const params = { reason };
    if (keepPlace && path !== '/') {
      params.next = path;
    }
    go('/login', params);
  }
}

async function logout() {
  try {
    await api('POST', '/auth/logout');
  } catch {
    // The session may have ended already; the page goes to login anyway.
  }
  signedOut('logged-out', false);
}

function renderHeader() {
  const nav = document.getElementById('nav');
  const who = document.getElementById('session');
  nav.hidden = !session.me;
  who.hidden = !session.me;
  for (const link of nav.querySelectorAll('[data-admin]')) {
    link.hidden = !session.isAdmin;
  }
  if (session.me) {
    replace(document.getElementById('whoami'), `${session.me.name} (${session.me.role})`);
  } else {
    document.getElementById('demo-banner').hidden = true;
  }
}

function markNav(navPath) {
  for (const link of document.querySelectorAll('#nav a')) {
    if (link.getAttribute('href') === `#${navPath}`) {
      link.setAttribute('aria-current', 'page');
    } else {
      link.removeAttribute('aria-current');
    }
  }
}

/**
 * checkDemo shows the demo banner while the demo's rules exist: rules the
 * demo seeded carry its marks (GET /rules/fields).
 */
async function checkDemo() {
  try {
    const { demo } = await loadRuleSchema();
    const { data } = await api('GET', '/rules', { query: { q: demo.descriptionPrefix, pageSize: 1 } });
    document.getElementById('demo-banner').hidden = !(session.me && data.total > 0);
  } catch {
    // The banner is a hint; the pages report errors themselves.
  }
}

async function route() {
  const seq = ++renders;
  const { path, params } = parseHash();
  if (!path.startsWith('/')) {
    return; // an in-page anchor
  }
  // A page with unsaved changes asks before it is left (leave resolves
  // to whether to go); kept, the address goes back to it.
  if (session.me && current?.leave && window.location.hash !== currentHash) {
    const target = window.location.hash;
    if (!await current.leave()) {
      if (seq === renders) {
        window.history.replaceState(null, '', currentHash);
      }
      return;
    }
    if (seq !== renders || window.location.hash !== target) {
      return;
    }
  }
  const found = routes.find((r) => r.pattern.test(path)) ?? routes[1];
  if (!found.public && !session.me) {
    try {
      await loadSession();
    } catch (err) {
      if (seq !== renders) {
        return;
      }
      if (err instanceof ConnectionError) {
        // Not a lost session: the server is down. The banner says so,
        // and the page comes once it answers.
        unreached = true;
        replace(main, h('p', { class: 'alert error' }, `Could not reach the server: ${err.message}. This page loads by itself once it answers.`));
        return;
      }
      go('/login', path === '/' ? undefined : { next: path });
      return;
    }
  }
  if (session.me) {
    try {
      await loadRuleSchema();
    } catch {
      // The pages that show rules report the API's error themselves.
    }
  }
  if (seq !== renders) {
    return;
  }
  unreached = false;
  if (found.admin && !session.isAdmin) {
    toast('That page is for admins.', true);
    go('/');
    return;
  }
  current?.cleanup?.();
  if (path !== shownPath) {
    dropToast();
  }
  shownPath = path;
  const ctx = {
    match: path.match(found.pattern),
    params,
    session,
    go,
    setParams,
    signedIn,
    signedOut,
    refreshDemo: checkDemo,
  };
  currentRoute = found;
  currentHash = window.location.hash;
  current = found.page.render(ctx);
  replace(main, current.node);
  document.title = `${current.title} · Sluice`;
  markNav(found.nav);
  current.heading?.focus({ preventScroll: true });
  window.scrollTo(0, 0);
}

function start() {
  onUnauthorized(() => {
    if (session.me) {
      signedOut('session-ended', true);
    }
  });
  document.getElementById('logout').addEventListener('click', logout);
  document.querySelector('.skip').addEventListener('click', (e) => {
    e.preventDefault();
    main.focus();
  });
  const status = document.getElementById('live-status');
  const labels = { live: 'live', connecting: 'connecting…', stale: 'stale', off: '' };
  const drawStatus = () => {
    // "live" only while the API answers too: a hung server may leave the
    // stream's connection open with nothing on it.
    const state = feed.state === 'live' && connection.state.stale ? 'stale' : feed.state;
    status.textContent = labels[state];
    status.className = `live-status ${state}`;
    status.title = state === 'live' ? 'Receiving the metric stream' : 'Not receiving the metric stream';
  };
  feed.subscribeState(drawStatus);
  const banner = document.getElementById('connection-banner');
  connection.subscribe((state, recovered) => {
    drawStatus();
    banner.hidden = !state.stale;
    if (state.stale) {
      const since = h('time', { datetime: state.since.toISOString() }, clockTime(state.since));
      replace(banner, ...(state.api
        ? ['Server unreachable since ', since, ' — figures are stale. Retrying…']
        : ['Live figures stopped at ', since, ' — figures are stale. Reconnecting…']));
    }
    if (recovered && (unreached || session.me && currentRoute?.reload)) {
      route();
      toast('The server answers again: the page is up to date.');
    }
  });
  window.addEventListener('hashchange', route);
  route();
}

start();

