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

/**
 * A value of a subscription, with the subject it was published to, its position, its publish time
 * and, for a map subject's, its key.
 */
export class Value {
  constructor(value: unknown, subject: string, pos: string | null, ts?: number | null, key?: string | null);
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
  /** The key it was written to, for a map subject's value; null otherwise. Version 1.3. */
  key: string | null;
}

/** A key gone from a map subscription's table. Version 1.3. */
export class Removed {
  constructor(key: string, reason: string, subject: string, pos?: string | null, ts?: number | null);
  readonly type: "removed";
  key: string;
  /**
   * `deleted` (a `deleteKey`), `expired` (the map's `ttl_s`), or `not_resumed` (absent from the
   * snapshot the table was rebuilt from after a reconnect that could not resume).
   */
  reason: string;
  subject: string;
  /** `EPOCH:SEQ`; null for `not_resumed`. */
  pos: string | null;
  /** The server's clock at the removal, for a subscription made with `ts`; else null. */
  ts: number | null;
}

/** A map subscription's table is complete and current (after each snapshot, and each resume). Version 1.3. */
export class Synced {
  readonly type: "synced";
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

/** What a map subscription yields: its table's changes (`Value` with `key`, `Removed`), `Synced`, gaps. */
export type MapEvent = Value | Removed | Synced | Gap;

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

/**
 * A subscription to a map subject that keeps its table (version 1.3): an async iterator of its
 * changes (or a callback for them), `Synced` each time the table is complete. After a reconnect
 * the table is kept and the changes missed applied (`resumed: true`), or a new snapshot is built
 * apart and swapped in whole at `synced`, its differences yielded then.
 */
export class MapSubscription implements AsyncIterableIterator<MapEvent> {
  private constructor();
  readonly sid: string;
  readonly subject: string;
  /** The table now: empty until the first `synced`; a new `Map` after a rebuild (read it through this property). */
  readonly table: ReadonlyMap<string, unknown>;
  /** Whether the table is complete and current: from each `synced` until the connection is lost. */
  readonly synced: boolean;
  /** The position the table is at, or null. */
  readonly position: string | null;
  readonly ended: boolean;
  /** Resolves once synced; rejects with the error that ended the subscription before, or `timeout` past `callTimeout`. */
  waitSynced(options?: CallOptions): Promise<void>;
  next(): Promise<IteratorResult<MapEvent, undefined>>;
  return(): Promise<IteratorResult<MapEvent, undefined>>;
  [Symbol.asyncIterator](): MapSubscription;
  /** Ends it here at once and in the server, as `Subscription.unsubscribe`. */
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
  /** Resolves with how many subscriptions received the value (`key`: a map subject's key, version 1.3). */
  publish(subject: string, value: unknown, options: { reply: true; key?: string } & CallOptions): Promise<number>;
  /** Resolves once sent (within `callTimeout`, while disconnected); a failure goes to `onError`. */
  publish(subject: string, value?: unknown, options?: { reply?: false; key?: string } & CallOptions): Promise<undefined>;
  publish(subject: string, value?: unknown, options?: { reply?: boolean; key?: string } & CallOptions): Promise<number | undefined>;
  /** Removes `key` from a map subject (version 1.3); `reply` as `publish`'s. */
  deleteKey(subject: string, key: string, options: { reply: true } & CallOptions): Promise<number>;
  deleteKey(subject: string, key: string, options?: { reply?: false } & CallOptions): Promise<undefined>;
  deleteKey(subject: string, key: string, options?: { reply?: boolean } & CallOptions): Promise<number | undefined>;
  /** `create`, `list`, `stats`, `delete`, `complete`, `error`, `ping`: the reply. */
  request(op: string, fields?: Record<string, unknown>, options?: CallOptions): Promise<Line>;
  /** Sends `token` as `auth` on the live connection; the next connections send it too (unless `token` is a function). */
  authenticate(token: string, options?: CallOptions): Promise<void>;
  subscribe(
    subject: string,
    options?: SubscribeOptions,
    onValue?: (event: RunnelEvent) => void | Promise<void>,
    onEnd?: (error: RunnelError | null) => void | Promise<void>,
  ): Promise<Subscription>;
  /**
   * Subscribes to a map subject and keeps its table (version 1.3); resolves once the server has
   * accepted it, before the table is synced. A pattern or `from` is a TypeError.
   */
  subscribeMap(
    subject: string,
    options?: SubscribeOptions,
    onChange?: (event: MapEvent) => void | Promise<void>,
    onEnd?: (error: RunnelError | null) => void | Promise<void>,
  ): Promise<MapSubscription>;
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
