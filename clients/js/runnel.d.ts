// Types of the JavaScript client of runneld (runnel.js, docs/clients.md "JavaScript"), for
// TypeScript users: `import { connect } from "./runnel.js"` finds them beside the module.
// Written by hand; `make check-js` compiles types-test/usage.ts against them and compares them with
// the declarations tsc makes from runnel.js's JSDoc (types-test/conformance.ts).

/** A reply to a request, or a server event: the line protocol's JSON object. */
export interface Line {
  [member: string]: unknown;
}

/** A stage of a subscription: `{op: "take", count: 2}` (docs/protocol.md, "Stages"). */
export interface Stage {
  op: string;
  [argument: string]: unknown;
}

/** What `subscribe` takes. */
export interface SubscribeOptions {
  /** An expression: a `filter` stage. */
  filter?: string;
  /** An expression: a `map` stage, after the filter. */
  map?: string;
  /** Seconds: a `throttle` stage, after both. */
  throttle?: number;
  /** More stages, after those. */
  ops?: Stage[];
  /** A position (`EPOCH:SEQ`) to continue right after; not for a pattern. */
  from?: string;
  /**
   * True: while this reader lags, the server keeps only the latest value for it, and says how
   * many it replaced (a `Gap` `dropped` before the next value). Version 1.3.
   */
  conflate?: boolean;
  /**
   * On a replay or behavior subject, the values published at or after this time, then live ones
   * (not with `from`; a `Gap` `not_resumed` first when the server no longer holds some of them).
   * Once a value has come, a resubscription continues after its position instead. Version 1.3.
   */
  since?: Time;
  /** The subscription completes once the subject's time passes this (kept across reconnects). Version 1.3. */
  until?: Time;
  /** True: each `Value` carries `ts`, its publish time in Unix milliseconds. Version 1.3. */
  ts?: boolean;
  /** Seconds this `subscribe` may take, as `CallOptions`' (not a stage: that is `ops: [{op: "timeout", ...}]`). */
  callTimeout?: number;
}

/** A time, as `since` and `until` take it: Unix milliseconds, an RFC 3339 string, or a `Date`. */
export type Time = number | string | Date;

/** A call's own options. */
export interface CallOptions {
  /**
   * Seconds this call may take, waiting for a connection and then for its reply, before it
   * rejects with `RunnelError` `timeout`; instead of the client's `callTimeout`. 0: no deadline.
   */
  callTimeout?: number;
}

/** Where the client's own notes go (console by default). */
export interface Logger {
  info(...data: unknown[]): void;
  warn(...data: unknown[]): void;
  error(...data: unknown[]): void;
}

/** `connect`'s options. */
export interface ConnectOptions {
  /**
   * Sent as `auth` on every connection. A function is called for every connection, and a JWT it
   * returns is refreshed (the function called again, its token sent as `auth`) when 80% of the
   * time it had left has passed; `unauthorized` then does not stop the reconnects.
   */
  token?: string | (() => string | Promise<string>);
  /** The WebSocket class to use (default: the global one; Node 20 has it with --experimental-websocket). */
  WebSocket?: new (url: string) => WebSocket;
  /** Reconnect when the connection is lost (never after `unauthorized`). Default true. */
  reconnect?: boolean;
  /** Seconds before reconnect attempts: the first, doubling up to the second, each drawn from its upper half. Default [0.1, 5]. */
  backoff?: [number, number];
  /** Seconds to connect and get the answer to `auth` or `ping`. Default 10. */
  timeout?: number;
  /**
   * Seconds a call (`publish`, `request`, `subscribe`, `authenticate`, `unsubscribe`) may take,
   * waiting for a connection and then for its reply, before it rejects with `RunnelError`
   * `timeout`; a call's `callTimeout` overrides it. Default 30; 0: no deadline.
   */
  callTimeout?: number;
  /** Seconds of silence from the server after which the client sends a `ping`; when nothing comes within `timeout` more, the connection is taken for lost. Default 30; 0: off. */
  keepalive?: number;
  /** Events an iterated subscription holds for its consumer at most. Default 1000. */
  buffer?: number;
  /** Each time the connection is lost, with why. */
  onDisconnect?: (reason: RunnelError) => void;
  /** Each time the connection is back, every subscription resumed. */
  onReconnect?: () => void;
  /** A publish without reply that failed (default: logged). */
  onError?: (error: RunnelError) => void;
  /** Where the client's notes go. Default console. */
  logger?: Logger;
}

/**
 * A failure with the protocol's `code`, the server's `message`, and `stage` when a stage of a
 * subscription caused it; or one of the client's own codes: `connection_lost`, `timeout` (no
 * connection within `timeout`, or a call not done within its `callTimeout`), `closed`.
 */
export class RunnelError extends Error {
  constructor(code: string, message?: string, stage?: number | null);
  code: string;
  stage: number | null;
  static of(line: Line): RunnelError;
}

/** A value of a subscription, with the subject it was published to, its position and its publish time. */
export class Value {
  constructor(value: unknown, subject: string, pos: string | null, ts?: number | null);
  readonly type: "value";
  value: unknown;
  subject: string;
  /** `EPOCH:SEQ`; null for a value a stage made from no value of the subject. */
  pos: string | null;
  /**
   * The server's clock at its publish, Unix milliseconds, for a subscription made with `ts`;
   * null otherwise, and for a value a stage made from a constant. Version 1.3.
   */
  ts: number | null;
}

/** Values this subscription will not get, in their place in the stream. */
export class Gap {
  constructor(reason: "dropped" | "overflow" | "not_resumed", count?: number | null, cause?: RunnelError | null);
  readonly type: "gap";
  reason: "dropped" | "overflow" | "not_resumed";
  /**
   * How many (`dropped`: dropped by the server, or, under `conflate`, replaced by newer values;
   * `overflow`); null for `not_resumed`.
   */
  count: number | null;
  /** The disconnect's reason, for `not_resumed` after a reconnect. */
  cause: RunnelError | null;
}

export type RunnelEvent = Value | Gap;

/**
 * One `sub`: an async iterator of events (or a callback for them), which ends at completion,
 * throws the RunnelError that ended it, and ends quietly after `unsubscribe()` or `close()`.
 * Leaving a `for await` loop early unsubscribes.
 */
export class Subscription implements AsyncIterableIterator<RunnelEvent> {
  private constructor();
  readonly sid: string;
  readonly subject: string;
  readonly pattern: boolean;
  /** The position of the newest value (or the `from`), for a later `{from: position}`; null for a pattern. */
  readonly position: string | null;
  readonly ended: boolean;
  next(): Promise<IteratorResult<RunnelEvent, undefined>>;
  return(): Promise<IteratorResult<RunnelEvent, undefined>>;
  [Symbol.asyncIterator](): Subscription;
  /** Ends it here at once and in the server (`unsub`, waited for within `callTimeout`; never rejects). */
  unsubscribe(options?: CallOptions): Promise<void>;
}

/** A connection to runneld, reconnecting and resuming its subscriptions (see `connect`). */
export class Client {
  private constructor();
  static connect(url: string, options?: ConnectOptions): Promise<Client>;
  /** The WebSocket URL the client connects to. */
  readonly url: string;
  /** Whether a connection is up and set up now. */
  readonly connected: boolean;
  /** Why the connection was last lost, or null. */
  readonly lastDisconnect: RunnelError | null;
  /** Resolves with how many subscriptions received the value. */
  publish(subject: string, value: unknown, options: { reply: true } & CallOptions): Promise<number>;
  /** Resolves once sent (within `callTimeout`, while disconnected); a failure goes to `onError`. */
  publish(subject: string, value?: unknown, options?: { reply?: false } & CallOptions): Promise<undefined>;
  publish(subject: string, value?: unknown, options?: { reply?: boolean } & CallOptions): Promise<number | undefined>;
  /** `create`, `list`, `stats`, `delete`, `complete`, `error`, `ping`: the reply. */
  request(op: string, fields?: Record<string, unknown>, options?: CallOptions): Promise<Line>;
  /** Sends `token` as `auth` on the live connection; the next connections send it too (unless `token` is a function). */
  authenticate(token: string, options?: CallOptions): Promise<void>;
  subscribe(
    subject: string,
    options?: SubscribeOptions,
    onValue?: (event: RunnelEvent) => void,
    onEnd?: (error: RunnelError | null) => void,
  ): Promise<Subscription>;
  /**
   * Calls `start` when `subject` gets its first subscription and `stop` when its last goes (its
   * occupancy, `$sys.occupancy.SUBJECT`; version 1.3), only on those transitions: never either
   * twice in a row, no `stop` when nobody watches at first, across reconnects too. One that
   * throws or rejects is logged. Resolves with the occupancy subscription: `unsubscribe()` ends
   * the watch. A pattern or a `$` name rejects with a TypeError.
   */
  whileWatched(
    subject: string,
    start: () => void | Promise<void>,
    stop: () => void | Promise<void>,
    options?: CallOptions,
  ): Promise<Subscription>;
  close(): Promise<void>;
}

/**
 * Connects (`ws://HOST:PORT/ws`, `wss://`, or `http(s)://HOST:PORT` for its `/ws`) and
 * authenticates. Another URL (`runnel://`, an HTTP path other than `/ws`) rejects with a
 * TypeError saying what to use.
 */
export function connect(url: string, options?: ConnectOptions): Promise<Client>;
