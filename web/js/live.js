// One Server-Sent Events connection to /api/v1/metrics/stream for the
// whole console: it keeps the last five minutes of every active resource's
// figures, one point a second, and the circuit breaker transitions seen
// since the console was opened, for the pages to read. The stream opens
// with the server's own five minutes (the backlog event), so charts are
// full from the first paint; a second without figures (the server down,
// the connection lost) is kept as null, drawn as a gap.

import { connection } from './connection.js';

/** windowSec is how much of the stream is kept: five minutes. */
export const windowSec = 300;

/**
 * staleAfterMs is how long the stream may go without a frame before its
 * figures count as stale. The server sends one a second, traffic or not,
 * so silence means a hung server or a dead connection that the browser
 * has not noticed (EventSource would wait for ever).
 */
const staleAfterMs = 5000;

/** reopenAfterMs is the wait before opening a stream the browser gave up on. */
const reopenAfterMs = 2000;

/**
 * gapAfterSec is how far apart two frames may be and still count as
 * consecutive: the stream's ticks drift against the clock's seconds.
 */
const gapAfterSec = 2;

const keys = ['t', 'pass', 'block', 'shadow', 'rt', 'conc', 'limit'];

function emptyBuffer() {
  return { t: [], pass: [], block: [], shadow: [], rt: [], conc: [], limit: [], lastActive: 0 };
}

/** push appends one second to buf; a second missed before it becomes a gap. */
function push(buf, t, values) {
  const last = buf.t[buf.t.length - 1];
  if (last !== undefined && t - last > gapAfterSec) {
    buf.t.push(last + 1);
    for (const key of keys.slice(1)) {
      buf[key].push(null);
    }
  }
  buf.t.push(t);
  for (const key of keys.slice(1)) {
    buf[key].push(values[key]);
  }
}

/** trim drops what is older than the window ending at t. */
function trim(buf, t) {
  let old = 0;
  while (old < buf.t.length && buf.t[old] <= t - windowSec) {
    old += 1;
  }
  if (old > 0) {
    for (const key of keys) {
      buf[key].splice(0, old);
    }
  }
}

class LiveFeed {
  constructor() {
    this.source = null;
    this.buffers = new Map();
    this.latestFrame = new Map();
    this.breakerEvents = [];
    this.statsListeners = new Set();
    this.breakerListeners = new Set();
    this.stateListeners = new Set();
    this.state = 'off';
    this.lastFrameAt = 0;
    this.watchdog = 0;
    this.reopenTimer = 0;
  }

  /**
   * start opens the stream, once, and keeps it open: EventSource
   * reconnects by itself after an error, and the watchdog reopens a
   * stream that went silent or that the browser closed for good.
   */
  start() {
    if (this.watchdog) {
      return;
    }
    this.open();
    this.watchdog = setInterval(() => this.check(), 1000);
  }

  open() {
    this.source?.close();
    const source = new EventSource('/api/v1/metrics/stream');
    this.source = source;
    this.lastFrameAt = Date.now();
    if (this.state !== 'stale') {
      this.setState('connecting');
    }
    source.addEventListener('error', () => {
      if (source !== this.source) {
        return;
      }
      connection.failed('stream');
      this.setState('stale');
      if (source.readyState === EventSource.CLOSED) {
        clearTimeout(this.reopenTimer);
        this.reopenTimer = setTimeout(() => this.open(), reopenAfterMs);
      }
    });
    source.addEventListener('backlog', (e) => this.onBacklog(JSON.parse(e.data)));
    source.addEventListener('stats', (e) => this.onStats(JSON.parse(e.data)));
    source.addEventListener('breaker', (e) => this.onBreaker(JSON.parse(e.data)));
  }

  check() {
    if (Date.now() - this.lastFrameAt <= staleAfterMs) {
      return;
    }
    connection.failed('stream');
    this.setState('stale');
    this.open();
  }

  /** stop closes the stream and forgets what it held (on logout). */
  stop() {
    clearInterval(this.watchdog);
    clearTimeout(this.reopenTimer);
    this.watchdog = 0;
    this.source?.close();
    this.source = null;
    this.buffers.clear();
    this.latestFrame.clear();
    this.breakerEvents = [];
    this.setState('off');
  }

  setState(state) {
    this.state = state;
    for (const fn of this.stateListeners) {
      fn(state);
    }
  }

  onStats(frame) {
    this.lastFrameAt = Date.now();
    connection.ok('stream');
    if (this.state !== 'live') {
      this.setState('live');
    }
    const t = Math.floor(Date.parse(frame.time) / 1000);
    this.latestFrame.clear();
    for (const r of frame.resources) {
      this.latestFrame.set(r.name, r);
      if (!this.buffers.has(r.name)) {
        this.buffers.set(r.name, emptyBuffer());
      }
    }
    for (const [name, buf] of this.buffers) {
      const r = this.latestFrame.get(name);
      if (buf.t.length && buf.t[buf.t.length - 1] >= t) {
        continue; // a reconnect repeated a second
      }
      push(buf, t, {
        pass: r?.passQps ?? 0,
        block: r?.blockQps ?? 0,
        shadow: r?.shadowBlockQps ?? 0,
        rt: r && r.completeQps > 0 ? r.avgRtMs : null,
        conc: r?.concurrency ?? 0,
        // An adaptive rule's limit; the backlog does not keep it.
        limit: r?.adaptiveLimit ?? null,
      });
      if (r) {
        buf.lastActive = t;
      }
      trim(buf, t);
      if (buf.lastActive <= t - windowSec) {
        this.buffers.delete(name); // idle for the whole window
      }
    }
    for (const fn of this.statsListeners) {
      fn(frame);
    }
  }

  /**
   * onBacklog takes the server's last five minutes in: they replace what
   * the console kept of the same seconds, and what it kept that the
   * server did not sample (a restarted server has no backlog of its past)
   * stays, with a gap where neither had figures.
   */
  onBacklog(backlog) {
    const from = Date.parse(backlog.from) / 1000;
    const to = Date.parse(backlog.to) / 1000;
    for (const r of backlog.resources) {
      const kept = this.buffers.get(r.name) ?? emptyBuffer();
      const keptAt = new Map(kept.t.map((t, i) => [t, i]));
      const keptValues = (i) => ({ pass: kept.pass[i], block: kept.block[i], shadow: kept.shadow[i], rt: kept.rt[i], conc: kept.conc[i], limit: kept.limit[i] });
      const buf = emptyBuffer();
      buf.lastActive = kept.lastActive;
      kept.t.forEach((t, i) => {
        if (t < from) {
          push(buf, t, keptValues(i));
        }
      });
      // A second the server did not sample is the console's if it saw it
      // (the server restarted), else a gap.
      r.passQps.forEach((pass, i) => {
        const t = from + i;
        if (pass !== null) {
          push(buf, t, { pass, block: r.blockQps[i], shadow: r.shadowBlockQps[i], rt: r.avgRtMs[i], conc: r.concurrency[i], limit: keptAt.has(t) ? kept.limit[keptAt.get(t)] : null });
          if (pass || r.blockQps[i] || r.shadowBlockQps[i] || r.concurrency[i]) {
            buf.lastActive = Math.max(buf.lastActive, t);
          }
        } else if (keptAt.has(t)) {
          push(buf, t, keptValues(keptAt.get(t)));
        } else if (buf.t.length) {
          push(buf, t, { pass: null, block: null, shadow: null, rt: null, conc: null, limit: null });
        }
      });
      kept.t.forEach((t, i) => {
        if (t > to) {
          push(buf, t, keptValues(i));
        }
      });
      trim(buf, Math.max(to, buf.t[buf.t.length - 1] ?? to));
      this.buffers.set(r.name, buf);
    }
    for (const fn of this.statsListeners) {
      fn(null);
    }
  }

  onBreaker(event) {
    this.breakerEvents.push(event);
    for (const fn of this.breakerListeners) {
      fn(event);
    }
  }

  /** series is a resource's kept figures, or null if it had none. */
  series(name) {
    return this.buffers.get(name) ?? null;
  }

  /** latest is a resource's figures of the last second, or null. */
  latest(name) {
    return this.latestFrame.get(name) ?? null;
  }

  /** subscribe calls fn with every stats frame, and with null when a backlog came in; it returns the undo. */
  subscribe(fn) {
    this.statsListeners.add(fn);
    return () => this.statsListeners.delete(fn);
  }

  /** subscribeBreakers calls fn with every breaker event; it returns the undo. */
  subscribeBreakers(fn) {
    this.breakerListeners.add(fn);
    return () => this.breakerListeners.delete(fn);
  }

  /** subscribeState calls fn with the connection's state; it returns the undo. */
  subscribeState(fn) {
    this.stateListeners.add(fn);
    fn(this.state);
    return () => this.stateListeners.delete(fn);
  }
}

/** feed is the console's one live feed. */
export const feed = new LiveFeed();
