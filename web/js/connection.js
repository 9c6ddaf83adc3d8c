// Whether the console can trust its figures: the API and the live stream
// each report whether the server answers, and while either does not, the
// console says since when its figures are stale. While the API is down, a
// health probe asks again every few seconds, so the console notices the
// server is back even when no page is asking.

/** probeEveryMs is how often the health probe asks while the API is down. */
const probeEveryMs = 2000;

/** probeTimeoutMs bounds one probe: a hung server must not hold it. */
const probeTimeoutMs = 3000;

class Connection {
  constructor() {
    this.down = new Map(); // source ("api" or "stream") → since when
    // lastAnswer is when each source last reached the server: an outage is
    // noticed only after a timeout (10 s) or a stall (5 s), and its "since"
    // is the last good answer, not the moment it was noticed.
    this.lastAnswer = new Map();
    this.listeners = new Set();
    this.probeTimer = 0;
  }

  /** ok records that source reached the server. */
  ok(source) {
    this.lastAnswer.set(source, new Date());
    if (!this.down.delete(source)) {
      return;
    }
    if (source === 'api') {
      clearTimeout(this.probeTimer);
      this.probeTimer = 0;
    }
    this.notify(this.down.size === 0);
  }

  /** failed records that source could not reach the server. */
  failed(source) {
    if (this.down.has(source)) {
      return;
    }
    this.down.set(source, this.lastAnswerOf(source));
    if (source === 'api') {
      this.probe();
    }
    this.notify(false);
  }

  /**
   * lastAnswerOf is the last time source's failure can date from: the
   * stream's last frame for the stream; for the API, its last answer or
   * the stream's last frame, whichever is later, since the server answered
   * then. Now, if neither ever answered.
   */
  lastAnswerOf(source) {
    const times = (source === 'api' ? [...this.lastAnswer.values()] : [this.lastAnswer.get(source)]).filter(Boolean);
    return times.length ? new Date(Math.max(...times.map((d) => d.getTime()))) : new Date();
  }

  /** reset forgets every failure (on logout: nothing is shown then). */
  reset() {
    const wasDown = this.down.size > 0;
    this.down.clear();
    this.lastAnswer.clear();
    clearTimeout(this.probeTimer);
    this.probeTimer = 0;
    if (wasDown) {
      this.notify(false);
    }
  }

  probe() {
    clearTimeout(this.probeTimer);
    this.probeTimer = setTimeout(async () => {
      try {
        const resp = await fetch('/api/v1/health', { cache: 'no-store', signal: AbortSignal.timeout(probeTimeoutMs) });
        // A 503 (database unreachable) is an answer: the server is up.
        if (resp.status < 500 || resp.status === 503) {
          this.ok('api');
          return;
        }
      } catch {
        // Still unreachable: ask again.
      }
      if (this.down.has('api')) {
        this.probe();
      }
    }, probeEveryMs);
  }

  /**
   * state is {stale, since, api}: whether figures are stale, since when
   * (the earliest failure still unresolved), and whether the API itself is
   * unreachable (else only the live stream is).
   */
  get state() {
    const times = [...this.down.values()];
    const since = times.length ? new Date(Math.min(...times.map((d) => d.getTime()))) : null;
    return { stale: times.length > 0, since, api: this.down.has('api') };
  }

  notify(recovered) {
    for (const fn of this.listeners) {
      fn(this.state, recovered);
    }
  }

  /**
   * subscribe calls fn(state, recovered) on every change; recovered is
   * true when the server answers again after a failure. It returns the undo.
   */
  subscribe(fn) {
    this.listeners.add(fn);
    fn(this.state, false);
    return () => this.listeners.delete(fn);
  }
}

/** connection is the console's one view of whether the server answers. */
export const connection = new Connection();
