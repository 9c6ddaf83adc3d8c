// The console's only way to the server: the public REST API under
// /api/v1, with the session cookie and, on writes, the CSRF token.

import { connection } from './connection.js';

const base = '/api/v1';

/**
 * requestTimeoutMs bounds every request: a hung server must turn into an
 * error the page shows, never into a page that waits for ever (or looks
 * empty).
 */
const requestTimeoutMs = 10000;

let csrfToken = '';
// csrfUser is the id of the user whose session csrfToken belongs to.
let csrfUser = null;
const unauthorizedHandlers = new Set();
const replacedHandlers = new Set();

/** ApiError is an error answer in the API's envelope. */
export class ApiError extends Error {
  constructor(status, body, headers) {
    const err = body?.error ?? {};
    super(err.message || `the server answered ${status}`);
    this.status = status;
    this.code = err.code || 'error';
    this.details = Array.isArray(err.details) ? err.details : [];
    this.headers = headers;
  }
}

/**
 * ConnectionError is a request that got no answer: refused, cut, or timed
 * out.
 */
export class ConnectionError extends Error {
  constructor(cause) {
    const timedOut = cause?.name === 'TimeoutError';
    super(timedOut
      ? `it did not answer within ${requestTimeoutMs / 1000} s`
      : 'the connection was refused or cut');
    this.timedOut = timedOut;
    this.cause = cause;
  }
}

/**
 * send is fetch with the timeout, telling the connection monitor whether
 * the server answered. Any answer counts, an error status included.
 */
async function send(url, init) {
  let resp;
  try {
    resp = await fetch(url, { ...init, credentials: 'same-origin', cache: 'no-store', signal: AbortSignal.timeout(requestTimeoutMs) });
  } catch (err) {
    connection.failed('api');
    throw new ConnectionError(err);
  }
  // A proxy in front answers 502 or 504 for a server it cannot reach.
  if (resp.status === 502 || resp.status === 504) {
    connection.failed('api');
  } else {
    connection.ok('api');
  }
  return resp;
}

/**
 * setCsrf keeps the session's CSRF token, and the id of its user, for the
 * writes that follow.
 */
export function setCsrf(token, userId = null) {
  csrfToken = token || '';
  csrfUser = userId;
}

/**
 * onUnauthorized registers fn to run when the session has ended (any 401
 * but a failed login).
 */
export function onUnauthorized(fn) {
  unauthorizedHandlers.add(fn);
}

/**
 * onSessionReplaced registers fn to run just before the tab reloads as
 * the user another tab logged in as; it returns the undo.
 */
export function onSessionReplaced(fn) {
  replacedHandlers.add(fn);
  return () => replacedHandlers.delete(fn);
}

const writes = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/**
 * api sends one request and answers {status, data, headers}; an error
 * answer throws an ApiError. Options: query (an object), body (an object,
 * sent as JSON, or a string sent as is with contentType), headers, text
 * (read the answer as text).
 */
export async function api(method, path, options = {}) {
  const url = new URL(base + path, window.location.origin);
  for (const [key, value] of Object.entries(options.query ?? {})) {
    if (value !== undefined && value !== null && value !== '') {
      url.searchParams.set(key, String(value));
    }
  }
  const headers = new Headers(options.headers ?? {});
  headers.set('Accept', 'application/json');
  let body;
  if (typeof options.body === 'string') {
    body = options.body;
    headers.set('Content-Type', options.contentType ?? 'application/json');
  } else if (options.body !== undefined) {
    body = JSON.stringify(options.body);
    headers.set('Content-Type', 'application/json');
  }
  if (writes.has(method) && csrfToken) {
    headers.set('X-CSRF-Token', csrfToken);
  }
  let resp = await send(url, { method, headers, body });
  if (resp.status === 403 && writes.has(method) && await refreshCsrf()) {
    // A login in another tab replaced the session cookie this tab sends:
    // the write goes again with the new session's token, if it is the
    // same user's (refreshCsrf reloads the tab otherwise).
    headers.set('X-CSRF-Token', csrfToken);
    resp = await send(url, { method, headers, body });
  }
  if (!resp.ok) {
    let envelope = null;
    try {
      envelope = await resp.json();
    } catch {
      envelope = null;
    }
    const err = new ApiError(resp.status, envelope, resp.headers);
    if (resp.status === 401 && path !== '/auth/login') {
      for (const fn of unauthorizedHandlers) {
        fn(err);
      }
    }
    throw err;
  }
  let data = null;
  if (resp.status !== 204) {
    try {
      data = options.text ? await resp.text() : await resp.json();
    } catch (err) {
      // The timeout also bounds the body: a server that hangs halfway is
      // as unreachable as one that never answered.
      if (err.name === 'TimeoutError' || err.name === 'AbortError' || err instanceof TypeError) {
        connection.failed('api');
        throw new ConnectionError(err);
      }
      throw err;
    }
  }
  return { status: resp.status, data, headers: resp.headers };
}

/**
 * refreshCsrf asks for the session's CSRF token again and tells whether it
 * changed for the same user. A session of another user (a login as
 * someone else in another tab) never takes this tab's writes: the tab
 * reloads as that user instead.
 */
async function refreshCsrf() {
  if (!csrfToken) {
    return false;
  }
  try {
    const resp = await send(new URL(`${base}/me`, window.location.origin), {});
    const me = resp.ok ? await resp.json() : null;
    if (!me?.csrfToken || me.csrfToken === csrfToken) {
      return false;
    }
    if (me.user?.id !== csrfUser) {
      for (const fn of replacedHandlers) {
        fn();
      }
      window.location.reload();
      return false;
    }
    csrfToken = me.csrfToken;
    return true;
  } catch {
    return false;
  }
}

/** etagVersion reads a rule's version from its ETag header ("3"). */
export function etagVersion(headers) {
  const tag = headers.get('ETag') ?? '';
  const n = Number.parseInt(tag.replace(/^W\//, '').replaceAll('"', ''), 10);
  return Number.isNaN(n) ? null : n;
}

/** ifMatch is the If-Match header for a rule at version. */
export function ifMatch(version, reason) {
  const headers = { 'If-Match': `"${version}"` };
  if (reason) {
    headers['X-Change-Reason'] = reason;
  }
  return headers;
}

/** resourcePath is the API path segment of a resource name. */
export function resourcePath(name) {
  return `/resources/${encodeURIComponent(name)}`;
}
