// The JavaScript client of runneld (docs/clients.md, "JavaScript"): one ES module, no build step
// and no dependencies, for browsers and Node 20+ (Node 20 needs `--experimental-websocket`, or a
// WebSocket class in `connect`'s options). It speaks the line protocol over a WebSocket (`/ws`),
// one request or server line per text message: replies matched to requests by `ref`, and
// subscriptions that survive reconnects, each resumed from its last position, with what could
// not be resumed reported as a gap, and map subscriptions that keep their table. runneld serves this file at `GET /runnel.js`; its types are
// checked by `tsc -p clients/js` (JSDoc) and described for TypeScript in runnel.d.ts.

/**
 * A reply to a request (`"ok"` in it), or a server line that is an event (`"ev"`).
 * @typedef {{ [member: string]: unknown }} Line
 */
/**
 * A stage of a subscription: `{op: "take", count: 2}` (docs/protocol.md, "Stages").
 * @typedef {{ op: string, [argument: string]: unknown }} Stage
 */
/**
 * What `subscribe` takes: `filter` and `map` (expressions), `throttle` (seconds), which become
 * stages in that order, then `ops` (more stages); `from`, a position to continue after;
 * `conflate`, true: while this reader lags, the server keeps only the latest value for it (each
 * value it replaced counted in a `Gap` `dropped`); `since`, a time (`Time`): on a replay or
 * behavior subject, the values published at or after it, then live ones (not with `from`);
 * `until`, a time: the subscription completes once the subject's time passes it; `ts`, true:
 * each `Value` carries `ts`, its publish time; `callTimeout`, the deadline of this `subscribe`
 * (as `CallOptions`').
 * @typedef {{ filter?: string, map?: string, throttle?: number, ops?: Stage[], from?: string, conflate?: boolean, since?: Time, until?: Time, ts?: boolean, callTimeout?: number }} SubscribeOptions
 */
/**
 * A time as `since` and `until` take it (version 1.3): Unix milliseconds, an RFC 3339 string
 * (`"2026-12-02T14:00:00Z"`), or a `Date`.
 * @typedef {number | string | Date} Time
 */
/**
 * A call's own options: `callTimeout`, the seconds this call may take (waiting for a connection,
 * then for its reply) before it rejects with `timeout`, instead of the client's `callTimeout`;
 * 0: no deadline.
 * @typedef {{ callTimeout?: number }} CallOptions
 */
/**
 * What a subscription yields: a value, or a gap where values are missing.
 * @typedef {Value | Gap} RunnelEvent
 */
/**
 * What a map subscription yields (version 1.3): its table's changes (a `Value` with its `key` for
 * a write, a `Removed` for a removal), `Synced` each time the table is complete, and gaps.
 * @typedef {Value | Removed | Synced | Gap} MapEvent
 */
/**
 * Where the client's own notes go (console by default).
 * @typedef {{ info: (...data: unknown[]) => void, warn: (...data: unknown[]) => void, error: (...data: unknown[]) => void }} Logger
 */
/**
 * A WebSocket class: the browser's, Node's global one, or one given (`options.WebSocket`).
 * @typedef {new (url: string) => WebSocket} WebSocketClass
 */
/**
 * `connect`'s options (docs/clients.md lists their defaults).
 * @typedef {object} ConnectOptions
 * @property {string | (() => string | Promise<string>)} [token] sent as `auth` on every connection; a function is called for every connection, and a JWT it returns is refreshed (the function called again, its token sent as `auth`) when 80% of the time it had left has passed
 * @property {WebSocketClass} [WebSocket] the WebSocket class to use (default: the global one)
 * @property {boolean} [reconnect] reconnect when the connection is lost (never after `unauthorized`)
 * @property {[number, number]} [backoff] seconds before reconnect attempts: the first, doubling up to the second, each drawn from its upper half
 * @property {number} [timeout] seconds to connect and get the answer to `auth` or `ping`
 * @property {number} [callTimeout] seconds a call (`publish`, `request`, `subscribe`, `authenticate`, `unsubscribe`) may take, waiting for a connection and then for its reply, before it rejects with `timeout` (0: no deadline)
 * @property {number} [keepalive] seconds of silence from the server after which the client sends a `ping`; when nothing comes within `timeout` more, the connection is taken for lost (0: off)
 * @property {number} [buffer] events an iterated subscription holds for its consumer at most
 * @property {(reason: RunnelError) => void} [onDisconnect] each time the connection is lost, with why
 * @property {() => void} [onReconnect] each time the connection is back, every subscription resumed
 * @property {(error: RunnelError) => void} [onError] a publish without reply that failed
 * @property {Logger} [logger] where the client's notes go (a callback that threw, a failed publish without `onError`)
 */
/**
 * A request waiting for its reply.
 * @typedef {{ resolve: (reply: Line) => void, reject: (error: unknown) => void, hook: ((reply: Line) => void) | undefined }} Pending
 */
/**
 * One WebSocket and what it said before it closed.
 * @typedef {{ ws: WebSocket, closing: RunnelError | null, ended: boolean, setUp: boolean, heard: number, watch: ReturnType<typeof setTimeout> | null }} Connection
 */

/**
 * A failure with the protocol's `code` (`bad_expr`, `unauthorized`, `slow_consumer`...), the
 * server's `message`, and `stage` when a stage of a subscription caused it; or one of the
 * client's own codes: `connection_lost` (the connection ended before the answer came, or could
 * not be opened), `timeout` (no connection within `timeout`, or a call not done within its
 * `callTimeout`) and `closed` (the client was closed).
 */
export class RunnelError extends Error {
  /**
   * @param {string} code
   * @param {string} [message]
   * @param {number | null} [stage]
   */
  constructor(code, message = "", stage = null) {
    super(message);
    this.name = "RunnelError";
    /** @type {string} */
    this.code = code;
    /** @type {number | null} */
    this.stage = stage;
  }

  toString() {
    return `RunnelError ${this.code}` + (this.stage !== null ? ` (stage ${this.stage})` : "") +
      (this.message ? `: ${this.message}` : "");
  }

  /**
   * The error a failed reply, an `error` event or a `closing` line carries.
   * @param {Line} line
   */
  static of(line) {
    const stage = typeof line.stage === "number" ? line.stage : null;
    return new RunnelError(String(line.code), typeof line.message === "string" ? line.message : "", stage);
  }
}

/**
 * A value of a subscription: `subject` is where it was published (for a pattern, the matching
 * subject), `pos` its position `EPOCH:SEQ` (null for a value a stage made from no value of the
 * subject, such as `startWith`'s), `ts` the server's clock at its publish in Unix milliseconds,
 * for a subscription made with `ts` (null otherwise, and for a value a stage made from a
 * constant; version 1.3), `key` the key it was written to, for a map subject's (null otherwise;
 * version 1.3).
 */
export class Value {
  /**
   * @param {unknown} value
   * @param {string} subject
   * @param {string | null} pos
   * @param {number | null} [ts]
   * @param {string | null} [key]
   */
  constructor(value, subject, pos, ts = null, key = null) {
    /** @type {"value"} */
    this.type = "value";
    this.value = value;
    this.subject = subject;
    this.pos = pos;
    this.ts = ts;
    this.key = key;
  }
}

/**
 * A key gone from a map subscription's table (version 1.3): `reason` `deleted` (a `deleteKey`),
 * `expired` (not written for the map's `ttl_s`) or `not_resumed` (absent from the snapshot the
 * table was rebuilt from after a reconnect that could not resume: removed meanwhile, how is not
 * known); `pos` and `ts` as a `Value`'s (null for `not_resumed`).
 */
export class Removed {
  /**
   * @param {string} key
   * @param {string} reason
   * @param {string} subject
   * @param {string | null} [pos]
   * @param {number | null} [ts]
   */
  constructor(key, reason, subject, pos = null, ts = null) {
    /** @type {"removed"} */
    this.type = "removed";
    this.key = key;
    this.reason = reason;
    this.subject = subject;
    this.pos = pos;
    this.ts = ts;
  }
}

/**
 * A map subscription's table is complete and current: after its snapshot, and again after each
 * resubscription, once the changes it missed (or a new snapshot's differences) have come
 * (version 1.3).
 */
export class Synced {
  constructor() {
    /** @type {"synced"} */
    this.type = "synced";
  }
}

/**
 * Values this subscription will not get, in their place in the stream: `reason` `dropped` (the
 * server's slow-consumer policy `drop` dropped `count` events, or, for a `conflate` subscription,
 * `count` values were replaced by newer ones, or, in a cluster, `count` values of other nodes
 * were missed; null when the server does not know how many), `overflow` (this client's buffer
 * dropped `count` events) or `not_resumed` (after a reconnect, or with a `from` the server could
 * not continue from, or a `since` some of whose values the server no longer holds, values may be
 * missing: `count` is null; `cause` is the disconnect's reason).
 */
export class Gap {
  /**
   * @param {"dropped" | "overflow" | "not_resumed"} reason
   * @param {number | null} [count]
   * @param {RunnelError | null} [cause]
   */
  constructor(reason, count = null, cause = null) {
    /** @type {"gap"} */
    this.type = "gap";
    this.reason = reason;
    this.count = count;
    this.cause = cause;
  }
}

/**
 * Calls one of the caller's callbacks: one that throws, or returns a promise that rejects, is
 * logged, and stops nothing.
 * @template T
 * @param {Logger} logger
 * @param {((argument: T) => void | Promise<void>) | undefined} callback
 * @param {T} argument
 */
function callBack(logger, callback, argument) {
  if (!callback) return;
  try {
    const result = callback(argument);
    // An async callback's rejection is logged as a throw is, never left unhandled.
    if (result && typeof result.then === "function") {
      result.then(undefined, (/** @type {unknown} */ error) => logger.error("runnel: a callback threw", error));
    }
  } catch (error) {
    logger.error("runnel: a callback threw", error);
  }
}

/**
 * "EPOCH:SEQ" as its epoch and its sequence number.
 * @param {string} pos
 * @returns {[string, number]}
 */
function splitPosition(pos) {
  const colon = pos.lastIndexOf(":");
  return [pos.slice(0, colon), Number(pos.slice(colon + 1))];
}

/**
 * `since` or `until` as `sub` takes it: Unix milliseconds (a number as it is, a `Date`'s time), or
 * an RFC 3339 string as it is (the server checks it); undefined when not given. An invalid `Date`
 * is a RangeError, anything else a TypeError.
 * @param {string} name
 * @param {Time | undefined} when
 * @returns {number | string | undefined}
 */
function timeOption(name, when) {
  if (when === undefined) return undefined;
  if (when instanceof Date) {
    const time = when.getTime();
    if (Number.isNaN(time)) throw new RangeError(`runnel: ${name} is an invalid Date`);
    return time;
  }
  if (typeof when === "number" || typeof when === "string") return when;
  throw new TypeError(`runnel: ${name} is Unix milliseconds (a number), an RFC 3339 string or a Date, not ${String(when)}`);
}

/** @param {string} subject */
function isPattern(subject) {
  return subject.split(".").some((token) => token === "*" || token === ">");
}

/**
 * The WebSocket URL of `url`: `ws://` and `wss://` as they are, an empty path as `/ws`;
 * `http://HOST:PORT` and `https://` (with no path, as a page's `location.origin`, or `/ws`) as
 * that server's `/ws`. Any other URL is refused (TypeError) with what to use instead: this client
 * speaks WebSocket only, and runneld serves it at `/ws` on its HTTP port.
 * @param {string} url
 */
function webSocketURL(url) {
  /** @type {URL} */
  let parsed;
  try {
    parsed = new URL(url);
  } catch {
    throw new TypeError(`runnel: ${url} is not a URL: ${SPEAKS_WEBSOCKET}`);
  }
  const noPath = parsed.pathname === "/" || parsed.pathname === "";
  if (parsed.protocol === "ws:" || parsed.protocol === "wss:") {
    if (noPath) parsed.pathname = "/ws";
    return parsed.href;
  }
  if (parsed.protocol === "http:" || parsed.protocol === "https:") {
    const ws = `${parsed.protocol === "https:" ? "wss" : "ws"}://${parsed.host}/ws`;
    if (noPath || parsed.pathname === "/ws") return ws;
    throw new TypeError(`runnel: ${url} is not runneld's WebSocket: this client speaks WebSocket only, ` +
      `at ${ws} (an http:// or https:// URL with no path means that too)`);
  }
  if (parsed.protocol === "runnel:" || parsed.protocol === "runnels:") {
    const tls = parsed.protocol === "runnels:";
    throw new TypeError(`runnel: ${url} is runneld's line protocol over ${tls ? "TLS" : "TCP"} (the URL of the ` +
      "Python and Swift clients), which this client does not speak: the browser and Node client speaks WebSocket, at " +
      (tls ? `wss://${parsed.hostname}:HTTPS_PORT/ws, HTTPS_PORT being runneld's HTTPS port (https_listen)`
        : `ws://${parsed.hostname}:HTTP_PORT/ws, HTTP_PORT being runneld's HTTP port (http_listen, 7456 by default)`));
  }
  throw new TypeError(`runnel: ${url} is not a ws:// or wss:// URL: ${SPEAKS_WEBSOCKET}`);
}

const SPEAKS_WEBSOCKET = "this client speaks WebSocket, at ws://HOST:HTTP_PORT/ws, HTTP_PORT being runneld's " +
  "HTTP port (http_listen, 7456 by default), or wss://HOST:HTTPS_PORT/ws (https_listen)";

/**
 * Why a WebSocket to `url` did not open, from what it said (`event`: an `error`, with a message
 * in Node, or a `close`): its words, then what is likely wrong, as questions, since a WebSocket
 * does not tell a refused connection from an HTTP answer that is not a WebSocket's. Without
 * `hint` (a reconnect, to a URL that worked), its words only.
 * @param {string} url
 * @param {Event} event
 * @param {boolean} hint
 */
function notOpened(url, event, hint) {
  const told = /** @type {{ message?: unknown, code?: unknown, reason?: unknown }} */ (event);
  const message = told.message ? String(told.message) : "";
  const code = told.code !== undefined ? Number(told.code) : null;
  const reason = told.reason ? `: ${told.reason}` : "";
  const said = message || (code !== null ? `closed with code ${code}${reason} before it opened` : "it failed before it opened");
  if (!hint) return `could not connect to ${url} (${said})`;
  const parsed = new URL(url);
  const path = parsed.pathname === "/ws" ? "" : ` (this URL's path is ${parsed.pathname})`;
  const others = ["nothing is listening there"];
  if (parsed.protocol === "wss:") others.push("the server's certificate is not trusted");
  if (globalThis.location !== undefined) others.push("runneld refused this page's origin (http_allowed_origins)");
  return `could not connect to ${url} (${said}): is this runneld's HTTP port (http_listen) and the /ws path${path}? ` +
    `runneld's line port (listen) does not speak WebSocket. Or ${others.join(", or ")}`;
}

/**
 * A call's deadline, `seconds` from now: `passed` resolves with `PASSED` when it has passed (null
 * for no deadline: 0, or more than a timer holds); `cancel()` stops its timer.
 * @param {number} seconds
 * @returns {{ passed: Promise<symbol> | null, cancel: () => void }}
 */
function deadlineIn(seconds) {
  if (!(seconds > 0 && seconds * 1000 < 2 ** 31)) return { passed: null, cancel: () => {} };
  /** @type {ReturnType<typeof setTimeout> | undefined} */
  let timer;
  /** @type {Promise<symbol>} */
  const passed = new Promise((resolve) => { timer = setTimeout(() => resolve(PASSED), seconds * 1000); });
  return { passed, cancel: () => clearTimeout(timer) };
}

/**
 * A request as a timeout's message names it: its `op`, and its subject or subscription.
 * @param {Line} body
 */
function describe(body) {
  const about = typeof body.subject === "string" ? ` ${body.subject}` : typeof body.sid === "string" ? ` ${body.sid}` : "";
  return `${String(body.op)}${about}`;
}

/** What a deadline's `passed` resolves with. */
const PASSED = Symbol("deadline passed");

/**
 * Seconds for a deadline: a number, 0 or more (0: none).
 * @param {unknown} seconds
 * @param {string} what
 * @returns {number}
 */
function checkedSeconds(seconds, what) {
  if (typeof seconds !== "number" || !(seconds >= 0)) {
    throw new RangeError(`runnel: ${what} is a number of seconds, 0 or more (0: no deadline), not ${String(seconds)}`);
  }
  return seconds;
}

/**
 * What a subscription needs of its client.
 * @typedef {object} ClientLink
 * @property {number} buffer
 * @property {Logger} logger
 * @property {() => boolean} connected
 * @property {() => RunnelError | null} lastDisconnect
 * @property {(body: Line, seconds?: number) => Promise<Line>} call sends a request once connected, returns its reply (within `seconds`, or the client's `callTimeout`)
 * @property {(body: Line) => void} sendSoon sends a request, its reply unread
 * @property {(sid: string) => void} forget the subscription ended
 */

/**
 * One subscription's state: its stages, its positions, its buffer. The client feeds it the
 * reply to each of its `sub` requests and its events; `Subscription` is its face.
 */
class SubscriptionState {
  /**
   * @param {ClientLink} link
   * @param {string} sid
   * @param {string} subject
   * @param {Stage[]} ops
   * @param {string | undefined} start
   * @param {boolean} conflate
   * @param {{ since: number | string | undefined, until: number | string | undefined, ts: boolean }} history
   *   `since` and `until` (Unix ms or RFC 3339) and `ts` (version 1.3)
   * @param {((event: MapEvent) => void) | undefined} onValue
   * @param {((error: RunnelError | null) => void) | undefined} onEnd
   */
  constructor(link, sid, subject, ops, start, conflate, history, onValue, onEnd) {
    this.link = link;
    this.sid = sid;
    this.subject = subject;
    this.pattern = isPattern(subject);
    this.ops = ops;
    this.conflate = conflate;
    this.since = history.since;
    this.until = history.until;
    this.ts = history.ts;
    this.onValue = onValue;
    this.onEnd = onEnd;
    /** @type {Map<string, string>} the newest position seen, per source subject */
    this.positions = new Map(start && !this.pattern ? [[subject, start]] : []);
    /** @type {Map<string, [string, number]>} after a subscription that could not resume: what a value must pass */
    this.skip = new Map();
    this.subscribedBefore = false;
    // A map's snapshot: from a reply that did not resume until `synced`, one may come (`syncing`);
    // once a keyed value of it has (`inSnapshot`), the newest position among its values waits for
    // `synced` to become the subscription's (a position in the middle of a snapshot resumes
    // nothing: the keys not sent yet would be missing).
    this.syncing = false;
    this.inSnapshot = false;
    /** @type {string | null} */
    this.snapshotPos = null;
    /** @type {MapEvent[]} */
    this.queue = [];
    this.overflowed = 0;
    /** @type {Promise<void> | null} what consumers waiting for an event await */
    this.arrival = null;
    this.arrived = () => {};
    this.ended = false;
    /** @type {RunnelError | null} */
    this.error = null;
  }

  get position() {
    return this.pattern || this.inSnapshot ? null : this.positions.get(this.subject) ?? null;
  }

  /**
   * This subscription's `sub` request, from its last position when it has one, else from `since`
   * (the server refuses both together: once a value has come, a resubscription continues after
   * it); `until`, conflating and `ts` if asked, every time.
   */
  request() {
    /** @type {Line} */
    const body = { op: "sub", subject: this.subject, sid: this.sid, positions: true };
    if (this.ops.length) body.ops = this.ops;
    if (this.position) body.from = this.position;
    else if (this.since !== undefined) body.since = this.since;
    if (this.until !== undefined) body.until = this.until;
    if (this.conflate) body.conflate = true;
    if (this.ts) body.ts = true;
    return body;
  }

  /**
   * The reply to one of this subscription's `sub` requests (handled before any of its events).
   * A refused first `sub` is the caller's error (`subscribe` rejects), not an end to report.
   * @param {Line} reply
   * @param {Line} sent
   */
  answered(reply, sent) {
    if (!reply.ok) {
      if (this.subscribedBefore) this.end(RunnelError.of(reply));
      else this.ended = true;
      return;
    }
    if (this.ended) {
      // Unsubscribed while a resubscription was under way.
      this.link.sendSoon({ op: "unsub", sid: this.sid });
      return;
    }
    // A resubscription with neither `from` nor `since` may have missed values; with `since`,
    // `resumed` says whether the server still held every value since then.
    if (reply.resumed === false || (this.subscribedBefore && !("from" in sent) && !("since" in sent))) {
      this.skip = new Map([...this.positions].map(([subject, pos]) => [subject, splitPosition(pos)]));
      this.put(new Gap("not_resumed", null, this.link.lastDisconnect()));
    }
    this.subscribedBefore = true;
    this.syncing = !this.pattern && reply.resumed !== true;
    this.inSnapshot = false;
    this.snapshotPos = null;
  }

  /**
   * Notes the position of an event about to be delivered (a map's snapshot's apart, until
   * `synced`); false for a value to skip: one at or before the last position shown, after a
   * resubscription that could not resume (a snapshot is never skipped: it is the table).
   * @param {string} subject
   * @param {string | null} pos
   * @param {boolean} keyed
   */
  seen(subject, pos, keyed) {
    if (keyed && this.syncing) {
      this.inSnapshot = true;
      if (pos && (this.snapshotPos === null || splitPosition(pos)[1] > splitPosition(this.snapshotPos)[1])) {
        this.snapshotPos = pos;
      }
      return true;
    }
    if (!pos) return true;
    const shown = keyed ? undefined : this.skip.get(subject);
    if (shown) {
      const [epoch, seq] = splitPosition(pos);
      if (epoch === shown[0] && seq <= shown[1]) return false;
      this.skip.delete(subject);
    }
    this.positions.set(subject, pos);
    return true;
  }

  /**
   * A map's `synced`: after a snapshot, the subscription's position is the snapshot's (its `pos`
   * when it has one, else its newest value's; none for an empty snapshot).
   * @param {Line} line
   */
  syncedAt(line) {
    if (this.syncing) {
      const pos = typeof line.pos === "string" ? line.pos : this.snapshotPos;
      if (pos) this.positions.set(this.subject, pos);
      else this.positions.delete(this.subject);
      this.skip.delete(this.subject);
    }
    this.syncing = false;
    this.inSnapshot = false;
    this.snapshotPos = null;
  }

  /** The connection is lost (the client reconnects). */
  lost() {}

  /** @param {Line} line an event of this subscription */
  event(line) {
    if (line.ev === "next") {
      const subject = typeof line.subject === "string" ? line.subject : this.subject;
      const pos = typeof line.pos === "string" ? line.pos : null;
      const key = typeof line.key === "string" ? line.key : null;
      if (!this.seen(subject, pos, key !== null)) return;
      const ts = typeof line.ts === "number" ? line.ts : null;
      this.put(new Value(line.value === undefined ? null : line.value, subject, pos, ts, key));
    } else if (line.ev === "synced") {
      this.syncedAt(line);
    } else if (line.ev === "dropped") {
      this.put(new Gap("dropped", line.count === undefined ? null : Number(line.count)));
    } else if (line.ev === "completed") {
      this.end(null);
    } else if (line.ev === "error") {
      this.end(RunnelError.of(line));
    }
  }

  /** @param {MapEvent} event */
  put(event) {
    if (this.onValue) {
      callBack(this.link.logger, this.onValue, event);
      return;
    }
    if ((event instanceof Value || event instanceof Removed) && this.queue.length >= this.link.buffer) {
      this.overflowed += 1;
      return;
    }
    if (this.overflowed) this.queue.push(this.takeOverflow());
    this.queue.push(event);
    this.wake();
  }

  takeOverflow() {
    const count = this.overflowed;
    this.overflowed = 0;
    return new Gap("overflow", count);
  }

  /** @returns {Promise<IteratorResult<MapEvent, undefined>>} */
  async next() {
    for (;;) {
      const event = this.queue.shift();
      if (event) return { value: event, done: false };
      if (this.overflowed) return { value: this.takeOverflow(), done: false };
      if (this.ended) {
        if (this.error) throw this.error;
        return { value: undefined, done: true };
      }
      this.arrival ??= new Promise((resolve) => { this.arrived = resolve; });
      await this.arrival;
    }
  }

  /** @param {RunnelError | null} error */
  end(error) {
    if (this.ended) return;
    this.ended = true;
    this.error = error;
    this.link.forget(this.sid);
    this.wake();
    if (this.onEnd) callBack(this.link.logger, this.onEnd, error);
    else if (error && this.onValue) this.link.logger.warn(`runnel: the subscription to ${this.subject} ended:`, error);
  }

  wake() {
    if (!this.arrival) return;
    this.arrival = null;
    this.arrived();
  }

  /** @param {number} [seconds] the call's deadline (the client's `callTimeout` by default) */
  async unsubscribe(seconds) {
    if (this.ended) return;
    this.end(null);
    this.queue.length = 0;
    this.overflowed = 0;
    if (!this.link.connected()) return; // a connection lost meanwhile took the server's subscription with it
    try {
      // Past its deadline the `unsub` was sent all the same: the server ends the subscription when it reads it.
      await this.link.call({ op: "unsub", sid: this.sid }, seconds);
    } catch (error) {
      if (!(error instanceof RunnelError)) throw error;
    }
  }
}

/**
 * One `sub`: an async iterator of `Value` and `Gap` events (or, given `onValue`, a callback for
 * them), which ends when the subscription completes, throws the RunnelError that ended it, and
 * ends quietly after `unsubscribe()` or the client's `close()`. Leaving a `for await` loop early
 * (`break`, `return`, a throw) unsubscribes.
 * @implements {AsyncIterableIterator<RunnelEvent>}
 */
export class Subscription {
  /** @type {SubscriptionState} */
  #state;

  /** @param {SubscriptionState} state */
  constructor(state) {
    this.#state = state;
    this.sid = state.sid;
    this.subject = state.subject;
    this.pattern = state.pattern;
  }

  /**
   * The position of the newest value of a one-subject subscription (or its `from`): give it as
   * `from` to a later subscription to continue after it. Null for a pattern.
   */
  get position() {
    return this.#state.position;
  }

  /** Whether the subscription has ended (completed, failed, unsubscribed or closed). */
  get ended() {
    return this.#state.ended;
  }

  /**
   * The next event; `done` once the subscription has ended, after what it buffered.
   * @returns {Promise<IteratorResult<RunnelEvent, undefined>>}
   */
  next() {
    // A subscription that is not a map subscription yields no `Removed` or `Synced`.
    return /** @type {Promise<IteratorResult<RunnelEvent, undefined>>} */ (this.#state.next());
  }

  /**
   * Unsubscribes (the end of a `for await` loop left early).
   * @returns {Promise<IteratorResult<RunnelEvent, undefined>>}
   */
  async return() {
    await this.#state.unsubscribe();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /**
   * Ends the subscription: here at once (what it buffered is dropped), and in the server
   * (`unsub`, whose answer it waits for within `callTimeout`; it does not reject). While the client
   * is disconnected it resolves at once: the lost connection took the server's subscription.
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async unsubscribe(options = {}) {
    const seconds = options.callTimeout === undefined ? undefined : checkedSeconds(options.callTimeout, "callTimeout");
    return this.#state.unsubscribe(seconds);
  }
}

/**
 * A map subscription's state (version 1.3): a subscription's, and its table.
 */
class MapSubscriptionState extends SubscriptionState {
  /** @param {ConstructorParameters<typeof SubscriptionState>} parameters */
  constructor(...parameters) {
    super(...parameters);
    /** @type {Map<string, unknown>} */
    this.table = new Map();
    /** @type {Map<string, Value> | null} the table a snapshot is building, null when changes go to `table` itself */
    this.fresh = null;
    this.synced = false;
    /** @type {Set<() => void>} what `waitSynced` calls wait on */
    this.settling = new Set();
  }

  /**
   * @param {Line} reply
   * @param {Line} sent
   */
  answered(reply, sent) {
    super.answered(reply, sent);
    if (this.ended) return;
    // Resumed: the changes missed come, applied to the table kept; else a snapshot, built apart.
    this.fresh = reply.resumed === true ? null : new Map();
    this.synced = false;
  }

  lost() {
    this.synced = false;
  }

  /** @param {Line} line */
  event(line) {
    if (line.ev !== "next" && line.ev !== "removed" && line.ev !== "synced") {
      super.event(line);
      return;
    }
    if (line.ev === "synced") {
      this.syncedAt(line);
      this.swap();
      this.synced = true;
      this.settle();
      this.put(new Synced());
      return;
    }
    if (typeof line.key !== "string") return;
    const key = line.key;
    const pos = typeof line.pos === "string" ? line.pos : null;
    const ts = typeof line.ts === "number" ? line.ts : null;
    this.seen(this.subject, pos, true);
    if (line.ev === "next") {
      const value = new Value(line.value === undefined ? null : line.value, this.subject, pos, ts, key);
      if (this.fresh) {
        this.fresh.set(key, value);
        return;
      }
      this.table.set(key, value.value);
      this.put(value);
    } else {
      if (this.fresh) {
        this.fresh.delete(key);
        return;
      }
      this.table.delete(key);
      this.put(new Removed(key, String(line.reason), this.subject, pos, ts));
    }
  }

  /**
   * The end of a snapshot: its table replaces the one kept, and what differs is yielded, once the
   * new table is in place.
   */
  swap() {
    const fresh = this.fresh;
    if (!fresh) return;
    this.fresh = null;
    const old = this.table;
    this.table = new Map([...fresh].map(([key, value]) => [key, value.value]));
    for (const [key, value] of fresh) {
      if (!old.has(key) || JSON.stringify(old.get(key)) !== JSON.stringify(value.value)) this.put(value);
    }
    for (const key of old.keys()) {
      if (!fresh.has(key)) this.put(new Removed(key, "not_resumed", this.subject));
    }
  }

  settle() {
    const waiting = [...this.settling];
    this.settling.clear();
    for (const wake of waiting) wake();
  }

  /** @param {RunnelError | null} error */
  end(error) {
    const wasEnded = this.ended;
    super.end(error);
    if (!wasEnded) this.settle();
  }

  /**
   * Resolves once the table is synced, or rejects with the error that ended the subscription
   * before; `timeout` past `seconds`.
   * @param {number} seconds
   * @returns {Promise<void>}
   */
  async waitSynced(seconds) {
    if (!this.synced && !this.ended) {
      const deadline = deadlineIn(seconds);
      /** @type {() => void} */
      let wake = () => {};
      const settled = new Promise((resolve) => { wake = () => resolve(undefined); this.settling.add(wake); });
      try {
        const outcome = await (deadline.passed ? Promise.race([settled, deadline.passed]) : settled);
        if (outcome === PASSED && !this.synced && !this.ended) {
          throw new RunnelError("timeout", `sub ${this.subject}: not synced within ${seconds} s`);
        }
      } finally {
        this.settling.delete(wake);
        deadline.cancel();
      }
    }
    if (!this.synced && this.error) throw this.error;
  }
}

/**
 * A subscription to a map subject (version 1.3) that keeps its table: `table`, the key -> value
 * of the map as this subscription sees it (after its stages), complete once `synced`. Iterated
 * (or given `onChange`), it yields the table's changes as they are made to it: a `Value` with its
 * `key` for a write, a `Removed` for a removal, `Synced` each time the table is complete and
 * current, and `Gap`s. The table is updated as the messages are read, whatever the consumer
 * takes: past the buffer, changes are dropped from the iteration (a `Gap` `overflow`), never from
 * the table. After a reconnect it resumes from its position: `resumed: true` applies the changes
 * it missed to the table it kept; otherwise (a `Gap` `not_resumed` first) the new snapshot is
 * built apart and swapped in whole at `synced`, its differences from the old table yielded then,
 * so the table is never seen half built.
 * @implements {AsyncIterableIterator<MapEvent>}
 */
export class MapSubscription {
  /** @type {MapSubscriptionState} */
  #state;
  /** @type {(options: CallOptions) => number} */
  #seconds;

  /**
   * @param {MapSubscriptionState} state
   * @param {(options: CallOptions) => number} seconds a call's deadline, from its options
   */
  constructor(state, seconds) {
    this.#state = state;
    this.#seconds = seconds;
    this.sid = state.sid;
    this.subject = state.subject;
  }

  /**
   * The table now, key -> value: empty until the first `synced`; replaced by a new `Map` at a
   * `synced` that ends a rebuild (read it through this property, not a reference kept).
   * @returns {ReadonlyMap<string, unknown>}
   */
  get table() {
    return this.#state.table;
  }

  /** Whether the table is complete and current: from each `synced` until the connection is lost. */
  get synced() {
    return this.#state.synced;
  }

  /** The position the table is at (given as `from` when the client subscribes again), or null. */
  get position() {
    return this.#state.position;
  }

  /** Whether the subscription has ended (completed, failed, unsubscribed or closed). */
  get ended() {
    return this.#state.ended;
  }

  /**
   * Resolves once the table is synced (at once when it is); rejects with the `RunnelError` that
   * ended the subscription before that, or with `timeout` past `callTimeout` (the client's by
   * default). A subscription ended quietly (unsubscribed, the client closed) resolves.
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  waitSynced(options = {}) {
    return this.#state.waitSynced(this.#seconds(options));
  }

  /** The next change; `done` once the subscription has ended, after what it buffered. */
  next() {
    return this.#state.next();
  }

  /**
   * Unsubscribes (the end of a `for await` loop left early).
   * @returns {Promise<IteratorResult<MapEvent, undefined>>}
   */
  async return() {
    await this.#state.unsubscribe();
    return { value: undefined, done: true };
  }

  [Symbol.asyncIterator]() {
    return this;
  }

  /**
   * Ends the subscription, as `Subscription.unsubscribe`.
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async unsubscribe(options = {}) {
    const seconds = options.callTimeout === undefined ? undefined : checkedSeconds(options.callTimeout, "callTimeout");
    return this.#state.unsubscribe(seconds);
  }
}

/**
 * A JWT's `exp` (seconds since 1970), or null when `token` is not a JWT with a numeric one.
 * @param {string} token
 * @returns {number | null}
 */
function jwtExpiry(token) {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const payload = JSON.parse(atob(parts[1].replace(/-/g, "+").replace(/_/g, "/")));
    return typeof payload?.exp === "number" ? payload.exp : null;
  } catch {
    return null;
  }
}

/** What only `connect` passes to `Client`'s constructor. */
const CONNECTING = Symbol("connect");

/** A connection to runneld (see `connect`). */
export class Client {
  #url;
  /** @type {string | (() => string | Promise<string>) | undefined} */
  #token;
  /** @type {ReturnType<typeof setTimeout> | null} the next refresh of a function's JWT */
  #refreshTimer = null;
  /** @type {WebSocketClass} */
  #WebSocket;
  #reconnect;
  /** @type {[number, number]} */
  #backoff;
  #timeout;
  #callTimeout;
  #keepalive;
  #onDisconnect;
  #onReconnect;
  #onError;
  /** @type {Logger} */
  #logger;
  /** @type {Connection | null} */
  #connection = null;
  #nextRef = 1;
  #nextSid = 1;
  /** @type {Map<number, Pending>} */
  #pending = new Map();
  /** @type {Map<number, (reply: Line) => void>} what to do with the reply to a call that timed out, should it come */
  #late = new Map();
  /** @type {Map<string, SubscriptionState>} */
  #subscriptions = new Map();
  /** @type {Promise<void>} resolved while connected and set up (or when the client is done) */
  #ready;
  /** @type {() => void} */
  #setReady = () => {};
  #isReady = false;
  /** @type {RunnelError | null} why the client will never connect again */
  #final = null;
  /** @type {RunnelError | null} */
  #lastDisconnect = null;
  /** @type {{ timer: ReturnType<typeof setTimeout>, wake: () => void } | null} a reconnect's wait */
  #sleeping = null;
  /** @type {ClientLink} */
  #link;
  /** @type {WebSocket | null} the WebSocket a connection is being set up on, until it is */
  #opening = null;

  /**
   * Use `connect`, which also opens the first connection.
   * @param {string} url
   * @param {ConnectOptions} options
   * @param {symbol} key `connect`'s
   */
  constructor(url, options, key) {
    if (key !== CONNECTING) throw new TypeError("runnel: use connect() to make a Client");
    const WebSocketClass = options.WebSocket ?? /** @type {WebSocketClass | undefined} */ (globalThis.WebSocket);
    if (!WebSocketClass) {
      throw new TypeError("runnel: no WebSocket here: run Node 20 with --experimental-websocket, or pass options.WebSocket");
    }
    const buffer = options.buffer ?? 1000;
    if (!(buffer >= 1)) throw new RangeError("runnel: buffer is at least 1");
    this.#url = webSocketURL(url);
    this.#token = options.token;
    this.#WebSocket = WebSocketClass;
    this.#reconnect = options.reconnect ?? true;
    this.#backoff = options.backoff ?? [0.1, 5];
    this.#timeout = options.timeout ?? 10;
    this.#callTimeout = checkedSeconds(options.callTimeout ?? 30, "callTimeout");
    this.#keepalive = options.keepalive ?? 30;
    this.#onDisconnect = options.onDisconnect;
    this.#onReconnect = options.onReconnect;
    this.#onError = options.onError;
    this.#logger = options.logger ?? console;
    this.#ready = this.#notReady();
    this.#link = {
      buffer,
      logger: this.#logger,
      connected: () => this.connected,
      lastDisconnect: () => this.#lastDisconnect,
      call: (body, seconds) => this.#call(body, { seconds }),
      sendSoon: (body) => {
        this.#call(body, { check: false }).catch((error) => {
          // A connection lost, or closed, took what this undoes with it.
          if (!(error instanceof RunnelError && (error.code === "connection_lost" || error.code === "closed"))) {
            this.#logger.info("runnel:", error);
          }
        });
      },
      forget: (sid) => { this.#subscriptions.delete(sid); },
    };
  }

  /**
   * Connects to `url` and authenticates with `options.token` (or pings without one); resolves
   * with the client once the server has answered, or rejects with a RunnelError
   * (`unauthorized`, `limit`, `connection_lost`, `timeout`): the first connection is not retried.
   * @param {string} url
   * @param {ConnectOptions} [options]
   */
  static async connect(url, options = {}) {
    const client = new Client(url, options, CONNECTING);
    await client.#open();
    return client;
  }

  /** The WebSocket URL the client connects to. */
  get url() {
    return this.#url;
  }

  /** Whether a connection is up and set up now. */
  get connected() {
    return this.#isReady && this.#final === null;
  }

  /** Why the connection was last lost (a `closing` line's code, or `connection_lost`), or null. */
  get lastDisconnect() {
    return this.#lastDisconnect;
  }

  /**
   * Publishes `value` (any JSON value) to `subject`; with `key`, to a map subject, as that key's
   * value (version 1.3). With `{reply: true}`, resolves with how many
   * subscriptions received it, or rejects with the server's RunnelError; without, resolves once
   * the line is sent, and a failure (the server answers only those) goes to `onError`. Either
   * waits for the connection while the client reconnects, within `callTimeout` (`timeout` past
   * it, and the value is not sent).
   * @param {string} subject
   * @param {unknown} [value]
   * @param {{ reply?: boolean, key?: string } & CallOptions} [options]
   * @returns {Promise<number | undefined>}
   */
  async publish(subject, value = null, options = {}) {
    /** @type {Line} */
    const body = { op: "pub", subject, value };
    if (options.key !== undefined) body.key = options.key;
    return this.#publish(body, options);
  }

  /**
   * Removes `key` from the map subject `subject` (a `pub` with `delete`, version 1.3; a key it
   * does not hold is no error); `reply` and `callTimeout` as `publish`'s. To delete a subject
   * itself: `request("delete", {subject})`.
   * @param {string} subject
   * @param {string} key
   * @param {{ reply?: boolean } & CallOptions} [options]
   * @returns {Promise<number | undefined>}
   */
  async deleteKey(subject, key, options = {}) {
    return this.#publish({ op: "pub", subject, key, delete: true }, options);
  }

  /**
   * @param {Line} body a `pub`
   * @param {{ reply?: boolean } & CallOptions} options
   * @returns {Promise<number | undefined>}
   */
  async #publish(body, options) {
    const seconds = this.#seconds(options);
    if (options.reply) return Number((await this.#call(body, { seconds })).receivers);
    const deadline = deadlineIn(seconds);
    try {
      await this.#waitReady(body, seconds, deadline.passed);
    } finally {
      deadline.cancel();
    }
    this.#send(body);
    return undefined;
  }

  /**
   * Sends `token` as `auth` on the live connection; rejects with the RunnelError when refused
   * (the connection keeps its rights). The next connections send it too, unless the `token`
   * option is a function. The new token's rights apply to the subscriptions already made.
   * @param {string} token
   * @param {CallOptions} [options]
   * @returns {Promise<void>}
   */
  async authenticate(token, options = {}) {
    await this.#call({ op: "auth", token }, { seconds: this.#seconds(options) });
    if (typeof this.#token !== "function") this.#token = token;
  }

  /**
   * Sends one request (`create`, `list`, `stats`, `delete`, `complete`, `error`, `ping`) with
   * `fields`, and resolves with its reply; rejects with the RunnelError when the server refused
   * it. `sub`, `unsub` and `auth` are `subscribe`, `unsubscribe` and the `token` option.
   * @param {string} op
   * @param {Record<string, unknown>} [fields]
   * @param {CallOptions} [options]
   * @returns {Promise<Line>}
   */
  async request(op, fields = {}, options = {}) {
    if (op === "sub" || op === "unsub" || op === "auth") {
      throw new TypeError(`runnel: ${op}: use subscribe(), Subscription.unsubscribe() or authenticate()`);
    }
    return this.#call({ ...fields, op }, { seconds: this.#seconds(options) });
  }

  /**
   * Subscribes to `subject` (a name or a pattern); resolves once the server has accepted it, or
   * rejects with its RunnelError (`bad_expr` with its `stage`, `unauthorized`...). Without
   * `onValue`, iterate over the subscription; with it, `onValue` is called with each event and
   * `onEnd` with null at completion, unsubscribe or close, or with the error that ended it.
   * @param {string} subject
   * @param {SubscribeOptions} [options]
   * @param {(event: RunnelEvent) => void} [onValue]
   * @param {(error: RunnelError | null) => void} [onEnd]
   */
  async subscribe(subject, options = {}, onValue, onEnd) {
    const state = this.#subscription(SubscriptionState, subject, options,
      /** @type {((event: MapEvent) => void) | undefined} */ (onValue), onEnd);
    await this.#subscribed(state, options);
    return new Subscription(state);
  }

  /**
   * Subscribes to the map subject `subject` (version 1.3) and keeps its table (see
   * `MapSubscription`): resolves once the server has accepted the `sub`, before the table is
   * synced (`await subscription.waitSynced()`). `options` as `subscribe`'s but `from` (the
   * subscription resumes from its own position) and `since`/`until` (not for a map); `onChange`
   * and `onEnd` as `subscribe`'s `onValue` and `onEnd`. A pattern, or `from`, is a TypeError.
   * @param {string} subject
   * @param {SubscribeOptions} [options]
   * @param {(event: MapEvent) => void} [onChange]
   * @param {(error: RunnelError | null) => void} [onEnd]
   * @returns {Promise<MapSubscription>}
   */
  async subscribeMap(subject, options = {}, onChange, onEnd) {
    if (isPattern(subject)) throw new TypeError(`runnel: subscribeMap takes a map subject's name, not a pattern: ${subject}`);
    if (options.from !== undefined) {
      throw new TypeError("runnel: a map subscription starts from a snapshot, and resumes from its own position: no from");
    }
    const state = this.#subscription(MapSubscriptionState, subject, options, onChange, onEnd);
    await this.#subscribed(state, options);
    return new MapSubscription(state, (callOptions) => this.#seconds(callOptions));
  }

  /**
   * A subscription's state, of `kind`, checked; not subscribed yet.
   * @template {SubscriptionState} S
   * @param {new (...parameters: ConstructorParameters<typeof SubscriptionState>) => S} kind
   * @param {string} subject
   * @param {SubscribeOptions} options
   * @param {((event: MapEvent) => void) | undefined} onValue
   * @param {((error: RunnelError | null) => void) | undefined} onEnd
   * @returns {S}
   */
  #subscription(kind, subject, options, onValue, onEnd) {
    /** @type {Stage[]} */
    const ops = [];
    if (options.filter !== undefined) ops.push({ op: "filter", expr: options.filter });
    if (options.map !== undefined) ops.push({ op: "map", expr: options.map });
    if (options.throttle !== undefined) ops.push({ op: "throttle", seconds: options.throttle });
    ops.push(...(options.ops ?? []));
    const history = {
      since: timeOption("since", options.since), until: timeOption("until", options.until), ts: options.ts ?? false,
    };
    const state = new kind(this.#link, `s${this.#nextSid++}`, subject, ops, options.from,
      options.conflate ?? false, history, onValue, onEnd);
    if (state.pattern && options.from !== undefined) {
      throw new TypeError("runnel: a pattern subscription has no position to start from");
    }
    if (options.from !== undefined && options.since !== undefined) {
      throw new TypeError("runnel: a subscription starts from a position (from) or a time (since), not both");
    }
    return state;
  }

  /**
   * Sends the first `sub` of `state` once connected; resolves once the server has accepted it.
   * @param {SubscriptionState} state
   * @param {SubscribeOptions} options
   */
  async #subscribed(state, options) {
    const seconds = this.#seconds(options);
    const deadline = deadlineIn(seconds);
    const started = Date.now();
    try {
      // Registered once connected, so that a reconnect under way does not subscribe it too.
      await this.#waitReady(state.request(), seconds, deadline.passed);
      this.#subscriptions.set(state.sid, state);
      await this.#call(state.request(), {
        hook: (reply, sent) => state.answered(reply, sent), ready: false, seconds, deadline: deadline.passed, started,
        // A `sub` the server accepts after its deadline, when `subscribe` has rejected: undone.
        late: (reply) => { if (reply.ok) this.#link.sendSoon({ op: "unsub", sid: state.sid }); },
      });
    } catch (error) {
      this.#subscriptions.delete(state.sid);
      state.ended = true;
      throw error;
    } finally {
      deadline.cancel();
    }
  }

  /**
   * Calls `start()` when `subject` gets its first subscription and `stop()` when its last goes,
   * from its occupancy (`$sys.occupancy.SUBJECT`, version 1.3): only on those transitions, so
   * never either twice in a row, and no `stop()` when nobody watches at first. After a reconnect
   * the count is compared with the last one. A `start` or `stop` that throws, or whose promise
   * rejects, is logged, and the watch goes on. Resolves, as `subscribe` does, with the occupancy
   * subscription: its `unsubscribe()` ends the watch (calling neither). Rejects with a TypeError
   * for a pattern or one of the server's `$` names.
   * @param {string} subject
   * @param {() => void | Promise<void>} start
   * @param {() => void | Promise<void>} stop
   * @param {CallOptions} [options]
   * @returns {Promise<Subscription>}
   */
  async whileWatched(subject, start, stop, options = {}) {
    if (isPattern(subject) || subject.startsWith("$")) {
      throw new TypeError(`runnel: whileWatched takes a subject name, not a pattern or a $ name: ${subject}`);
    }
    const logger = this.#logger;
    /** @param {() => void | Promise<void>} transition */
    const run = (transition) => {
      try {
        Promise.resolve(transition()).catch((error) => logger.error("runnel: a callback threw", error));
      } catch (error) {
        logger.error("runnel: a callback threw", error);
      }
    };
    let watched = false; // nothing started yet: a first count of 0 stops nothing
    return this.subscribe(`$sys.occupancy.${subject}`, { callTimeout: options.callTimeout }, (event) => {
      // A gap (after a reconnect, say) tells no count: the value after it does.
      if (!(event instanceof Value)) return;
      const now = Number(/** @type {{ subscribers?: unknown } | null} */ (event.value)?.subscribers) > 0;
      if (now === watched) return;
      watched = now;
      run(now ? start : stop);
    });
  }

  /**
   * Closes the connection, which disposes every subscription in the server; subscriptions here
   * end, requests still waiting and later calls reject with `closed`. Resolves once the
   * WebSocket has closed.
   * @returns {Promise<void>}
   */
  async close() {
    if (this.#final !== null) return;
    this.#final = new RunnelError("closed", "the client was closed");
    this.#refreshLater(undefined);
    this.#wakeUp();
    this.#setReady();
    for (const subscription of [...this.#subscriptions.values()]) subscription.end(null);
    this.#failPending(this.#final);
    this.#opening?.close();
    const connection = this.#connection;
    if (!connection || connection.ended) return;
    if (connection.watch !== null) clearTimeout(connection.watch);
    await new Promise((resolve) => {
      const done = () => { clearTimeout(timer); resolve(undefined); };
      const timer = setTimeout(done, this.#timeout * 1000);
      connection.ws.addEventListener("close", done);
      connection.ws.close(1000);
    });
  }

  /** @returns {Promise<void>} */
  #notReady() {
    this.#isReady = false;
    return new Promise((resolve) => {
      this.#setReady = () => {
        this.#isReady = true;
        resolve();
      };
    });
  }

  /**
   * Waits until the client is connected and set up (or will never be: its `closed` or final
   * error); for a call, `body`, until its deadline at most (`timeout` past it: not sent).
   * @param {Line} [body]
   * @param {number} [seconds]
   * @param {Promise<symbol> | null} [deadline]
   */
  async #waitReady(body, seconds, deadline) {
    // Again when a connection came and went meanwhile: `#ready` is then a new promise.
    while (!this.#isReady && this.#final === null) {
      if (!deadline) {
        await this.#ready;
      } else if ((await Promise.race([this.#ready, deadline])) === PASSED && !this.#isReady && this.#final === null) {
        const lost = this.#lastDisconnect;
        throw new RunnelError("timeout", `${describe(body ?? {})}: not sent within ${seconds} s: the client was ` +
          `disconnected, reconnecting to ${this.#url}` + (lost ? ` (the connection was lost: ${lost.code}: ${lost.message})` : ""));
      }
    }
    if (this.#final !== null) throw this.#final;
  }

  /**
   * A call's deadline: its `callTimeout`, else the client's.
   * @param {CallOptions} options
   */
  #seconds(options) {
    return options.callTimeout === undefined ? this.#callTimeout : checkedSeconds(options.callTimeout, "callTimeout");
  }

  /**
   * Connects, authenticates (or pings), subscribes again every subscription from its position;
   * then the client is ready. All within `timeout` seconds.
   */
  async #open() {
    let timedOut = false;
    const deadline = setTimeout(() => {
      timedOut = true;
      this.#opening?.close();
    }, this.#timeout * 1000);
    /** @type {string | undefined} */
    let token;
    try {
      const ws = await this.#socket(() => timedOut);
      this.#opening = ws;
      /** @type {Connection} */
      const connection = { ws, closing: null, ended: false, setUp: false, heard: Date.now(), watch: null };
      this.#connection = connection;
      ws.onmessage = (message) => this.#receive(connection, message.data);
      ws.onclose = (event) => this.#closed(connection, event.code, event.reason);
      ws.onerror = () => {
        // A WebSocket that failed may not say `close` as well (Node 20's): it is closed now.
        this.#closed(connection, 1006, "");
        connection.ws.close();
      };
      try {
        token = await this.#currentToken();
        await this.#call(token !== undefined ? { op: "auth", token } : { op: "ping" }, { ready: false });
        await Promise.all([...this.#subscriptions.values()].map((subscription) =>
          this.#call(subscription.request(), {
            hook: (reply, sent) => subscription.answered(reply, sent), ready: false, check: false,
          })));
        if (this.#final !== null) throw this.#final;
        if (connection.ended) throw connection.closing ?? new RunnelError("connection_lost", "the server closed the connection");
      } catch (error) {
        ws.close();
        throw timedOut ? this.#timedOut() : error;
      }
      connection.setUp = true;
      this.#setReady();
      this.#refreshLater(token);
      this.#watch(connection);
    } finally {
      this.#opening = null;
      clearTimeout(deadline);
    }
  }

  /**
   * After `keepalive` seconds without a message from the server, a `ping`; when nothing at all
   * comes within `timeout` seconds more, the connection is taken for lost (a peer gone without
   * a word, or a network that dropped it, leaves a WebSocket open that would never hear again),
   * so the client reconnects.
   * @param {Connection} connection
   */
  #watch(connection) {
    if (!(this.#keepalive > 0) || connection.ended) return;
    const wait = Math.max(0, connection.heard + this.#keepalive * 1000 - Date.now());
    connection.watch = setTimeout(() => {
      if (Date.now() - connection.heard < this.#keepalive * 1000) return this.#watch(connection);
      const asked = Date.now();
      this.#call({ op: "ping" }, { ready: false }).catch(() => {});
      connection.watch = setTimeout(() => {
        if (connection.heard >= asked) return this.#watch(connection);
        this.#closed(connection, 1006, `no answer to a keep-alive ping within ${this.#timeout} s`);
        connection.ws.close();
      }, this.#timeout * 1000);
    }, wait);
  }

  /** The token for a new connection: the option's, or what its function returns now. */
  async #currentToken() {
    return typeof this.#token === "function" ? String(await this.#token()) : this.#token;
  }

  /**
   * When `token` came from a function and is a JWT with `exp`: gets a new one and sends it as
   * `auth` before it expires (a failure is logged; the expiry then closes the connection, and the
   * reconnect asks the function again). `undefined` only stops the one planned.
   * @param {string | undefined} token
   */
  #refreshLater(token) {
    if (this.#refreshTimer !== null) clearTimeout(this.#refreshTimer);
    this.#refreshTimer = null;
    const expiry = typeof this.#token === "function" && token !== undefined ? jwtExpiry(token) : null;
    if (expiry === null || this.#final !== null) return;
    const delay = Math.max(0, (expiry * 1000 - Date.now()) * 0.8);
    this.#refreshTimer = setTimeout(async () => {
      this.#refreshTimer = null;
      try {
        const fresh = await this.#currentToken();
        await this.#call({ op: "auth", token: fresh });
        this.#refreshLater(fresh);
      } catch (error) {
        this.#logger.warn("runnel: the token's refresh failed:", String(error));
      }
    }, delay);
  }

  #timedOut() {
    return new RunnelError("timeout", `no answer from ${this.#url} within ${this.#timeout} s`);
  }

  /**
   * A WebSocket to the URL, once open.
   * @param {() => boolean} timedOut
   * @returns {Promise<WebSocket>}
   */
  #socket(timedOut) {
    return new Promise((resolve, reject) => {
      const ws = new this.#WebSocket(this.#url);
      this.#opening = ws;
      ws.onopen = () => resolve(ws);
      // Node 20's WebSocket reports a failed connection with `error` alone, no `close`.
      /** @param {Event} event */
      const failed = (event) => {
        // Once connected (a loss since), the URL is right: no questions about it.
        const hint = this.#lastDisconnect === null;
        reject(timedOut() ? this.#timedOut() : new RunnelError("connection_lost", notOpened(this.#url, event, hint)));
      };
      // A browser's `error` says nothing, and its `close` (code 1006) follows at once: that one
      // is reported, when it comes.
      ws.onerror = (event) => {
        if (/** @type {{ message?: unknown }} */ (event).message) failed(event);
        else setTimeout(() => failed(event), 100);
      };
      ws.onclose = failed;
    });
  }

  /**
   * @param {Connection} connection
   * @param {unknown} data
   */
  #receive(connection, data) {
    // runneld sends text messages only; nothing is read from a connection already given up.
    if (typeof data !== "string" || connection.ended) return;
    connection.heard = Date.now();
    /** @type {Line} */
    let line;
    try {
      line = JSON.parse(data);
    } catch {
      this.#logger.warn("runnel: a message that is not JSON:", data.slice(0, 200));
      return;
    }
    if ("ok" in line) {
      this.#reply(line);
    } else if (line.ev === "closing") {
      connection.closing = RunnelError.of(line);
    } else if (typeof line.sid === "string") {
      this.#subscriptions.get(line.sid)?.event(line);
    }
  }

  /** @param {Line} line */
  #reply(line) {
    if (line.ref === undefined) {
      // Only a `pub` without `ref` is answered without one, and only when it failed.
      const error = RunnelError.of(line);
      if (this.#onError) callBack(this.#logger, this.#onError, error);
      else this.#logger.warn("runnel: a publish failed:", error);
      return;
    }
    const ref = Number(line.ref);
    const waiting = this.#pending.get(ref);
    if (!waiting) {
      // The reply to a call that timed out: ignored, or undone (a `sub`).
      const late = this.#late.get(ref);
      this.#late.delete(ref);
      late?.(line);
      return;
    }
    this.#pending.delete(ref);
    waiting.hook?.(line);
    waiting.resolve(line);
  }

  /**
   * The connection closed: what waits for a reply on it fails, and, if it was set up, the client
   * reconnects (or gives up).
   * @param {Connection} connection
   * @param {number} code the WebSocket's close code
   * @param {string} why the WebSocket's close reason
   */
  #closed(connection, code, why) {
    if (connection.ended) return;
    connection.ended = true;
    if (connection.watch !== null) clearTimeout(connection.watch);
    const reason = connection.closing ??
      new RunnelError("connection_lost", why || `the connection closed (WebSocket code ${code})`);
    if (this.#connection === connection) this.#connection = null;
    this.#failPending(reason);
    if (!connection.setUp || this.#final !== null) return;
    for (const subscription of this.#subscriptions.values()) subscription.lost();
    this.#ready = this.#notReady();
    this.#lastDisconnect = reason;
    callBack(this.#logger, this.#onDisconnect, reason);
    // A token refused now is refused again, unless a function hands out new ones.
    if (!this.#reconnect || (reason.code === "unauthorized" && typeof this.#token !== "function")) {
      this.#giveUp(reason);
      return;
    }
    this.#reconnectWithBackoff();
  }

  /** Reconnects, waiting before each attempt (doubling from the first delay to the second). */
  async #reconnectWithBackoff() {
    let delay = this.#backoff[0];
    for (;;) {
      await new Promise((resolve) => {
        const wake = () => resolve(undefined);
        this.#sleeping = { timer: setTimeout(wake, delay * (0.5 + Math.random() / 2) * 1000), wake };
      });
      this.#sleeping = null;
      if (this.#final !== null) return;
      try {
        await this.#open();
        callBack(this.#logger, this.#onReconnect, undefined);
        return;
      } catch (error) {
        if (this.#final !== null) return;
        if (error instanceof RunnelError && error.code === "unauthorized") {
          this.#giveUp(error);
          return;
        }
        this.#logger.info(`runnel: reconnecting to ${this.#url}:`, String(error));
      }
      delay = Math.min(delay * 2, this.#backoff[1]);
    }
  }

  #wakeUp() {
    if (!this.#sleeping) return;
    clearTimeout(this.#sleeping.timer);
    this.#sleeping.wake();
  }

  /** @param {RunnelError} reason */
  #giveUp(reason) {
    this.#final = reason;
    this.#refreshLater(undefined);
    this.#setReady();
    for (const subscription of [...this.#subscriptions.values()]) subscription.end(reason);
  }

  /**
   * The calls waiting for a reply on the connection fail with `reason` (it is lost, or the client
   * closed); the replies of those that timed out will not come.
   * @param {RunnelError} reason
   */
  #failPending(reason) {
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#late.clear();
    for (const waiting of pending) waiting.reject(reason);
  }

  /**
   * Sends `body` with a fresh `ref` and resolves with the reply (rejecting with its error when
   * `check`); `hook` sees the reply first, as it is read. Waits for the connection unless
   * `ready` is false (the requests that set a new connection up, which `timeout` bounds).
   * Within `seconds` (by default the client's `callTimeout` for a call that waits for the
   * connection, else none), from the call or from `deadline`, a deadline already running: past
   * it, rejects with `timeout`, and a reply that comes later is ignored, or given to `late`.
   * @param {Line} body
   * @param {{ hook?: (reply: Line, sent: Line) => void, ready?: boolean, check?: boolean, seconds?: number,
   *   deadline?: Promise<symbol> | null, started?: number, late?: (reply: Line) => void }} [options]
   * @returns {Promise<Line>}
   */
  async #call(body, options = {}) {
    const { hook, ready = true, check = true, late } = options;
    const seconds = options.seconds ?? (ready ? this.#callTimeout : 0);
    const own = options.deadline === undefined ? deadlineIn(seconds) : null;
    const deadline = own ? own.passed : options.deadline ?? null;
    const started = options.started ?? Date.now();
    try {
      if (ready) await this.#waitReady(body, seconds, deadline);
      const sentAfter = (Date.now() - started) / 1000;
      const ref = this.#nextRef++;
      const reply = await new Promise((resolve, reject) => {
        /** @type {Pending} */
        const waiting = { resolve, reject, hook: hook && ((line) => hook(line, body)) };
        this.#pending.set(ref, waiting);
        try {
          this.#send({ ...body, ref });
        } catch (error) {
          this.#pending.delete(ref);
          reject(error);
          return;
        }
        deadline?.then(() => {
          if (this.#pending.get(ref) !== waiting) return;
          this.#pending.delete(ref);
          if (late) this.#late.set(ref, late);
          const waited = sentAfter >= 0.05 ? ` after ${sentAfter.toFixed(1)} s waiting for the connection` : "";
          reject(new RunnelError("timeout", `${describe(body)}: no reply within ${seconds} s (the client was connected: ` +
            `the request was sent${waited})`));
        });
      });
      if (check && !reply.ok) throw RunnelError.of(reply);
      return reply;
    } finally {
      own?.cancel();
    }
  }

  /** @param {Line} body */
  #send(body) {
    const connection = this.#connection;
    if (!connection || connection.ended) throw this.#final ?? new RunnelError("connection_lost", "not connected");
    connection.ws.send(JSON.stringify(body));
  }
}

/**
 * Connects to runneld at `url` (`ws://HOST:PORT/ws`, `wss://...`; `http://HOST:PORT` is taken as
 * its `/ws`) and authenticates with `options.token` (or pings without one): resolves with the
 * client once the server has answered, or rejects with a RunnelError (`unauthorized`, `limit`,
 * `connection_lost`, whose message asks whether this is runneld's HTTP port and `/ws`,
 * `timeout`), or with a TypeError for a URL this client does not speak (`runnel://`, an HTTP path
 * other than `/ws`), saying what to use. Then, when the connection is lost, it reconnects (unless
 * `reconnect` is false or the server said `unauthorized`) and resumes each subscription;
 * `onDisconnect` is called with each loss's reason, `onReconnect` when it is back.
 * @param {string} url
 * @param {ConnectOptions} [options]
 */
export function connect(url, options = {}) {
  return Client.connect(url, options);
}
