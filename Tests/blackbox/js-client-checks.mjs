// The JavaScript client's checks (clients/js/runnel.js, imported from this checkout) in Node:
// the client behaviour checklist of docs/clients.md. test_js_client.py runs each check
// as a process of its own against the runneld it started, which it describes in the environment
// (RUNNEL_CHECK, JSON: `ws`, `wss`, `http` URLs, `linePort`, `token`, `pid`, `config`); a check that needs
// runneld killed or restarted asks the harness on stdout (`@harness kill`) and reads its answer,
// one JSON line, on stdin.
//
//   node Tests/blackbox/js-client-checks.mjs --list     # SUITE NAME [trusts-ca], one check a line
//   node Tests/blackbox/js-client-checks.mjs NAME       # runs one; exit status 0 when it passed
//
// Node 20 needs --experimental-websocket (the harness adds it when Node has no WebSocket).

import assert from "node:assert/strict";
import { createHmac } from "node:crypto";
import { once } from "node:events";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { isMainThread, parentPort, Worker, workerData } from "node:worker_threads";
import { Client, connect, Gap, MapSubscription, Removed, RunnelError, Synced, Value } from "../../clients/js/runnel.js";

const context = JSON.parse(process.env.RUNNEL_CHECK ?? "{}");
const TOKEN = context.token;
const DEADLINE = 10_000; // ms for any one thing to happen

// ---- helpers -------------------------------------------------------------------------------

/** Resolves as `promise` does, or fails when that takes longer than `ms`. */
async function within(promise, what, ms = DEADLINE) {
  let timer;
  const late = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A promise to set: `latch.set()` resolves `latch.promise`. */
function latch() {
  const result = { isSet: false };
  result.promise = new Promise((resolve) => {
    result.set = () => {
      result.isSet = true;
      resolve();
    };
  });
  return result;
}

function connected(options = {}) {
  return connect(context.ws, { token: TOKEN, ...options });
}

/** The next `count` events of `subscription`, within the deadline each. */
async function take(subscription, count) {
  const events = [];
  for (let i = 0; i < count; i++) {
    const next = await within(subscription.next(), `event ${i + 1} of ${count}`);
    assert.ok(!next.done, `the subscription ended after ${events.length} events`);
    events.push(next.value);
  }
  return events;
}

/** Values (their `value`) until one equals `last`; gaps go to `gaps` with their place (else they fail). */
async function valuesUntil(subscription, last, gaps = null) {
  const seen = [];
  while (!seen.length || seen[seen.length - 1] !== last) {
    const [event] = await take(subscription, 1);
    if (event instanceof Gap) {
      assert.ok(gaps, `a gap where none was: ${JSON.stringify(event)}, after ${seen}`);
      gaps.push([seen.length, event]);
    } else {
      seen.push(event.value);
    }
  }
  return seen;
}

async function expectError(promise, code) {
  try {
    await within(promise, `${code} error`);
  } catch (error) {
    assert.ok(error instanceof RunnelError, `not a RunnelError: ${error?.stack ?? error}`);
    assert.equal(error.code, code, String(error));
    return error;
  }
  assert.fail(`no ${code} error`);
}

async function expectEnd(subscription) {
  const next = await within(subscription.next(), "the end");
  assert.ok(next.done, `the subscription went on: ${JSON.stringify(next.value)}`);
}

/** Awaits `read()` every 50 ms until `predicate` holds of it (a server's stats: no event tells). */
async function poll(read, predicate, what, ms = DEADLINE) {
  const deadline = Date.now() + ms;
  for (;;) {
    const current = await read();
    if (predicate(current)) return current;
    assert.ok(Date.now() < deadline, `${what}: ${JSON.stringify(current)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

/** A logger that keeps what it is given. */
function recording() {
  const records = [];
  const keep = (level) => (...data) => records.push([level, ...data]);
  return { records, info: keep("info"), warn: keep("warn"), error: keep("error") };
}

let stdinLines = null;

/** Asks test_js_client.py to do `action` to the daemon (`kill`, `restart`); its answer. */
async function harness(action) {
  stdinLines ??= createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  process.stdout.write(`@harness ${action}\n`);
  const answer = await within(stdinLines.next(), `the harness's answer to ${action}`, 30_000);
  assert.ok(!answer.done, "the harness went away");
  const reply = JSON.parse(answer.value);
  Object.assign(context, reply);
  return reply;
}

/**
 * Runs `job` (publishing, then waiting for the server's stats to show `key` above `above`) on a
 * worker thread while this thread is blocked: its clients read nothing meanwhile, a consumer far
 * slower than the network, and the server's slow-consumer policy applies to them.
 */
async function blockedWhile(job) {
  const shared = new Int32Array(new SharedArrayBuffer(4));
  const worker = new Worker(new URL(import.meta.url), { workerData: { job, shared, context } });
  const finished = once(worker, "message");
  const outcome = Atomics.wait(shared, 0, 0, 120_000);
  assert.notEqual(outcome, "timed-out", "the worker did not finish within 120 s");
  const [message] = await finished;
  await worker.terminate();
  assert.ok(!message.error, message.error);
}

/** The worker's side of `blockedWhile`. */
async function publishInWorker({ job, shared, context: given }) {
  try {
    const publisher = await connect(given.ws, { token: given.token });
    // Watched over a connection of its own: a `stats` behind the publisher's queued values would
    // come back only once all of them were read, long after what it waits for.
    const watcher = await connect(given.ws, { token: given.token });
    for (let n = 0; n < job.count; n++) publisher.publish(job.subject, { n, pad: "x".repeat(job.pad) });
    await poll(() => watcher.request("stats"), (stats) => stats[job.key] > job.above, job.key, 60_000);
    // The blocked thread reads again at once: the server's flush of a closing line lasts 2 s,
    // and closing the publisher waits for its queued values, which may take longer.
    release(shared);
    await watcher.close();
    await publisher.close();
    parentPort?.postMessage({});
  } catch (error) {
    parentPort?.postMessage({ error: String(error?.stack ?? error) });
  } finally {
    release(shared);
  }
}

function release(shared) {
  Atomics.store(shared, 0, 1);
  Atomics.notify(shared, 0);
}

// ---- main: one daemon with a token, a token of limited rights, HTTPS -----------------------

async function check_connect_with_a_good_token_a_wrong_one_and_none() {
  const client = await connected();
  assert.ok(client.connected);
  assert.equal((await client.request("ping")).ok, true);
  await client.close();
  assert.ok(!client.connected);
  const wrong = await expectError(connect(context.ws, { token: "not-a-token" }), "unauthorized");
  assert.ok(wrong.message, String(wrong));
  await expectError(connect(context.ws), "unauthorized");
  // An http:// URL is its server's /ws.
  const viaHTTP = await connect(context.http, { token: TOKEN });
  assert.equal(viaHTTP.url, context.ws);
  await viaHTTP.close();
  assert.throws(() => new Client(context.ws, {}), TypeError, "a Client made without connect()");
  // Nothing listening: the first connection is not retried.
  await expectError(connect("ws://127.0.0.1:1/ws", { token: TOKEN }), "connection_lost");
  // A server that accepts and never answers: `timeout`. (Node 20's WebSocket does not close a
  // socket still in its handshake when told to, so the server's side is destroyed here.)
  const sockets = [];
  const silent = createServer((socket) => sockets.push(socket));
  await once(silent.listen(0, "127.0.0.1"), "listening");
  const started = Date.now();
  await expectError(connect(`ws://127.0.0.1:${silent.address().port}/ws`, { timeout: 0.3 }), "timeout");
  assert.ok(Date.now() - started >= 300);
  assert.equal(sockets.length, 1);
  sockets[0].destroy();
  silent.close();
}

async function check_every_transport_publishes_and_subscribes() {
  const publisher = await connected();
  for (const [scheme, address] of [["ws", context.ws], ["wss", context.wss]]) {
    const client = await connect(address, { token: TOKEN });
    const subject = `transport.${scheme}`;
    const subscription = await client.subscribe(subject, { map: ".n" });
    assert.equal(await publisher.publish(subject, { n: 21 }, { reply: true }), 1);
    const big = "x".repeat(300_000); // one long WebSocket message, many TLS records
    await client.publish(subject, { n: big });
    const [first, second] = await take(subscription, 2);
    assert.ok(first instanceof Value && first.type === "value");
    assert.deepEqual([first.value, first.subject], [21, subject]);
    assert.match(first.pos, /^[A-Za-z0-9_-]+:1$/);
    assert.equal(second.value, big, scheme);
    // Compressed, this client's WebSocket and the publisher's: Node's WebSocket offers
    // permessage-deflate, and runneld accepts.
    assert.equal((await client.request("stats")).compression.websockets, 2, scheme);
    await client.close();
  }
  await publisher.close();
}

async function check_an_untrusted_certificate_fails_the_connection() {
  // This process was not told to trust the test certificate (NODE_EXTRA_CA_CERTS).
  await expectError(connect(context.wss, { token: TOKEN }), "connection_lost");
}

async function check_publish_with_and_without_a_reply() {
  const failures = [];
  const client = await connected({ onError: (error) => failures.push(error) });
  const first = await client.subscribe("pub.a");
  const second = await client.subscribe("pub.>");
  assert.equal(await client.publish("pub.a", { k: 1 }, { reply: true }), 2);
  assert.equal(await client.publish("pub.a", [2]), undefined);
  assert.deepEqual((await take(first, 2)).map((event) => event.value), [{ k: 1 }, [2]]);
  assert.deepEqual((await take(second, 2)).map((event) => [event.subject, event.value]),
    [["pub.a", { k: 1 }], ["pub.a", [2]]]);
  assert.equal(await client.publish("nobody.here", null, { reply: true }), 0);
  // A quiet publish is answered only when it fails: the failure goes to onError.
  await client.request("complete", { subject: "pub.a" });
  await client.publish("pub.a", 3);
  await client.request("ping"); // answered after the publish's failure, in order
  assert.deepEqual(failures.map((failure) => failure.code), ["terminated"]);
  await expectError(client.publish("pub.a", 4, { reply: true }), "terminated");
  // Without onError, the logger hears of it.
  const logger = recording();
  const quiet = await connected({ logger });
  await quiet.publish("pub.a", 5);
  await quiet.request("ping");
  assert.deepEqual(logger.records.map(([level, , error]) => [level, error?.code]), [["warn", "terminated"]]);
  await quiet.close();
  // The limited token may publish to `limited.>` only: the server's message names the right.
  const limited = await connect(context.ws, { token: "limited-token" });
  assert.equal(await limited.publish("limited.x", 1, { reply: true }), 0);
  const refused = await expectError(limited.publish("pub.b", 1, { reply: true }), "unauthorized");
  assert.match(refused.message, /may not publish to pub\.b/);
  await limited.close();
  await client.close();
}

async function check_typed_errors_carry_code_message_and_stage() {
  const client = await connected();
  let error = await expectError(client.subscribe("err.a", { filter: ".a > 1", map: ".b +" }), "bad_expr");
  assert.ok(error instanceof Error && error.stage === 1 && error.message, String(error));
  assert.match(String(error), /^RunnelError bad_expr \(stage 1\): /);
  error = await expectError(client.subscribe("err.a", { ops: [{ op: "nosuch" }] }), "bad_operator");
  assert.equal(error.stage, 0);
  await expectError(client.subscribe("bad name"), "bad_request");
  await client.request("create", { subject: "err.r", kind: "replay", capacity: 2 });
  error = await expectError(client.request("create", { subject: "err.r", kind: "replay", capacity: 3 }), "kind_mismatch");
  assert.equal(error.stage, null);
  // A stage failing on a value ends its subscription: iterating throws the error event's.
  const failing = await client.subscribe("err.eval", { map: ".n + 1" });
  await client.publish("err.eval", { n: "text" });
  error = await expectError(failing.next(), "eval");
  assert.equal(error.stage, 0);
  const ended = await client.subscribe("err.subject");
  await client.request("error", { subject: "err.subject", message: "it broke" });
  error = await expectError(ended.next(), "subject_error");
  assert.equal(error.message, "it broke");
  // With callbacks, onEnd gets the error.
  const endings = [];
  const over = latch();
  await client.subscribe("err.eval2", { map: ".n + 1" }, () => {}, (end) => { endings.push(end); over.set(); });
  await client.publish("err.eval2", { n: [] });
  await within(over.promise, "onEnd");
  assert.deepEqual(endings.map((end) => [end.code, end.stage]), [["eval", 0]]);
  await assert.rejects(client.request("sub", { subject: "x" }), TypeError);
  await client.close();
}

async function check_subscribe_with_stages_as_an_iterator_and_with_callbacks() {
  const client = await connected();
  const hot = await client.subscribe("cpu", { filter: ".load > 0.9", map: ".host", ops: [{ op: "take", count: 2 }] });
  const throttled = await client.subscribe("cpu", { map: ".host", throttle: 0.05 });
  const seen = [];
  const endings = [];
  const called = latch();
  let ended = latch();
  const callback = await client.subscribe("cpu", { filter: ".load < 0.5", map: ".host" },
    (event) => { seen.push(event); called.set(); }, (error) => { endings.push(error); ended.set(); });
  for (const [host, load] of [["a", 0.95], ["b", 0.2], ["c", 0.99], ["d", 0.97]]) {
    await client.publish("cpu", { host, load });
  }
  // take 2 completes the first: the iteration ends after "a" and "c".
  assert.deepEqual((await take(hot, 2)).map((event) => event.value), ["a", "c"]);
  await expectEnd(hot);
  assert.ok(hot.ended);
  // throttle keeps the newest of a burst.
  assert.equal((await take(throttled, 1))[0].value, "d");
  await within(called.promise, "the callback");
  assert.deepEqual(seen.map((event) => event.value), ["b"]);
  await callback.unsubscribe();
  assert.deepEqual(endings, [null]);
  ended = latch();
  const completes = await client.subscribe("cpu", { ops: [{ op: "take", count: 1 }] }, (event) => seen.push(event),
    (error) => { endings.push(error); ended.set(); });
  await client.publish("cpu", { host: "e", load: 0.1 });
  await within(ended.promise, "completion");
  assert.deepEqual(endings, [null, null]);
  assert.notEqual(completes.sid, callback.sid);
  await throttled.unsubscribe();
  // Two consumers waiting at once each get an event, in order.
  const twice = await client.subscribe("twice.a");
  const both = Promise.all([twice.next(), twice.next()]);
  await client.publish("twice.a", 1);
  await client.publish("twice.a", 2);
  assert.deepEqual((await within(both, "two waiting consumers")).map((next) => next.value.value), [1, 2]);
  // Leaving a for-await loop early unsubscribes.
  const looped = await client.subscribe("loop.a");
  await client.publish("loop.a", 1);
  let got = null;
  for await (const event of looped) {
    got = event.value;
    break;
  }
  assert.equal(got, 1);
  assert.ok(looped.ended);
  const [entry] = (await client.request("list", { prefix: "loop.a" })).subjects;
  assert.equal(entry.subscribers, 0);
  // A callback that throws is logged; the subscription and the connection go on.
  const logger = recording();
  const other = await connected({ logger });
  const failing = [];
  const raised = latch();
  await other.subscribe("callback.broken", {}, (event) => {
    failing.push(event.value);
    if (failing.length === 2) raised.set();
    throw new Error("the callback's own bug");
  });
  await other.publish("callback.broken", 1);
  await other.publish("callback.broken", 2);
  await within(raised.promise, "the second value");
  assert.deepEqual(failing, [1, 2]);
  assert.equal((await other.request("ping")).ok, true);
  assert.deepEqual(logger.records.map(([level, , error]) => [level, error.message]),
    [["error", "the callback's own bug"], ["error", "the callback's own bug"]]);
  // An async callback that rejects is logged too, and leaves no unhandled rejection.
  const unhandled = [];
  const onUnhandled = (reason) => unhandled.push(reason);
  process.on("unhandledRejection", onUnhandled);
  try {
    const rejected = latch();
    await other.subscribe("callback.async", {}, async (event) => {
      await new Promise((resolve) => setTimeout(resolve, 1));
      rejected.set();
      throw new Error(`async bug ${event.value}`);
    });
    await other.publish("callback.async", 3);
    await within(rejected.promise, "the async callback");
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(unhandled, []);
    assert.deepEqual(logger.records.slice(2).map(([level, , error]) => [level, error.message]),
      [["error", "async bug 3"]]);
  } finally {
    process.off("unhandledRejection", onUnhandled);
  }
  await other.close();
  await client.close();
}

async function check_positions_and_from() {
  const client = await connected();
  await client.request("create", { subject: "pos.r", kind: "replay", capacity: 10 });
  for (let n = 1; n <= 5; n++) await client.publish("pos.r", n);
  const everything = await client.subscribe("pos.r");
  const events = await take(everything, 5);
  const epochs = new Set(events.map((event) => event.pos.split(":")[0]));
  assert.equal(epochs.size, 1);
  assert.deepEqual(events.map((event) => event.pos.split(":")[1]), ["1", "2", "3", "4", "5"]);
  assert.equal(everything.position, events[4].pos);
  // From the second value's position: exactly the values after it, and no gap.
  const after = await client.subscribe("pos.r", { from: events[1].pos });
  assert.deepEqual((await take(after, 3)).map((event) => event.value), [3, 4, 5]);
  await client.publish("pos.r", 6);
  assert.equal((await take(after, 1))[0].value, 6);
  // A position the server cannot continue from: a gap, then what a plain sub gets.
  const lost = await client.subscribe("pos.r", { from: "another-epoch:3" });
  const [gap, ...replayed] = await take(lost, 7);
  assert.deepEqual(gap, new Gap("not_resumed"));
  assert.deepEqual(replayed.map((event) => event.value), [1, 2, 3, 4, 5, 6]);
  await assert.rejects(client.subscribe("pos.*", { from: events[1].pos }), TypeError);
  await client.close();
}

/**
 * Publishes `values` to `subject` and resolves with a Unix ms time between each and the next, 50 ms
 * after the one's reply and 50 ms before the next is sent: no millisecond clock can put either
 * publish on that time's side.
 */
async function publishApart(client, subject, values) {
  const pause = () => new Promise((resolve) => setTimeout(resolve, 50));
  const betweens = [];
  for (const value of values) {
    if (betweens.length) await pause();
    await client.publish(subject, value, { reply: true });
    await pause();
    betweens.push(Date.now());
  }
  return betweens.slice(0, -1);
}

/**
 * A WebSocket class that keeps its sockets, the requests sent over them and the lines read
 * (`Recorded.sent`, `.received`, `.sockets`): what goes over the wire.
 */
function recordingWebSocket() {
  const sockets = [];
  const sent = [];
  const received = [];
  class Recorded extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
      this.addEventListener("message", (message) => received.push(JSON.parse(message.data)));
    }

    send(data) {
      sent.push(JSON.parse(data));
      super.send(data);
    }
  }
  return Object.assign(Recorded, { sockets, sent, received });
}

/** Whether `value` is a Unix ms time (an integer) within [from, to]. */
const timeWithin = (value, from, to) => Number.isInteger(value) && value >= from && value <= to;

async function check_since_until_and_ts_read_history_by_time() {
  const Recorded = recordingWebSocket();
  const client = await connected({ WebSocket: Recorded });
  const opened = [];
  try {
    await client.request("create", { subject: "history.r", kind: "replay", capacity: 10 });
    // since: after the first value's publish, before the second's; until: before the third's.
    const [since, until] = await publishApart(client, "history.r", [1, 2, 3]);
    const history = await client.subscribe("history.r", { since, ts: true });
    opened.push(history);
    const events = await take(history, 2);
    assert.deepEqual(events.map((event) => event.value), [2, 3]);
    const times = events.map((event) => event.ts);
    assert.ok(timeWithin(times[0], since, times[1]) && timeWithin(times[1], times[0], Date.now()),
      `since ${since}: ${times}`);
    const replies = Recorded.received.filter((line) => line.sid === history.sid && "ok" in line);
    assert.deepEqual(replies.map((line) => line.resumed), [true]);
    // Then live values, with their time too.
    await client.publish("history.r", 4, { reply: true });
    const [live] = await take(history, 1);
    assert.ok(live.value === 4 && timeWithin(live.ts, times[1], Date.now()), JSON.stringify(live));
    // A Date and an RFC 3339 string: the same instants. Values until the second time: the second
    // value, then the end; no `ts` asked, none given.
    const text = new Date(until).toISOString();
    const bounded = await client.subscribe("history.r", { since: new Date(since), until: text });
    opened.push(bounded);
    assert.deepEqual((await take(bounded, 1)).map((event) => [event.value, event.ts]), [[2, null]]);
    await expectEnd(bounded);
    const request = Recorded.sent.find((body) => body.sid === bounded.sid);
    assert.deepEqual([request.since, request.until, "ts" in request], [since, text, false]);
    // A since whose values the server no longer all holds (capacity 2, three values since): a gap
    // first, then what it holds.
    await client.request("create", { subject: "history.small", kind: "replay", capacity: 2 });
    const before = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 50));
    for (const n of [1, 2, 3]) await client.publish("history.small", n, { reply: true });
    const evicted = await client.subscribe("history.small", { since: before });
    opened.push(evicted);
    const [gap, ...held] = await take(evicted, 3);
    assert.deepEqual(gap, new Gap("not_resumed"));
    assert.deepEqual(held.map((event) => event.value), [2, 3]);
    // Refused here: an invalid Date, a time of another type, since with from; by the server:
    // since on a plain subject and on a pattern.
    const count = Recorded.sent.length;
    await assert.rejects(client.subscribe("history.r", { since: new Date("not a date") }), RangeError);
    await assert.rejects(client.subscribe("history.r", { until: {} }), TypeError);
    await assert.rejects(client.subscribe("history.r", { since, from: events[0].pos }), TypeError);
    assert.deepEqual(Recorded.sent.slice(count), []);
    await expectError(client.subscribe("history.plain", { since }), "bad_request");
    await expectError(client.subscribe("history.*", { since }), "bad_request");
  } finally {
    for (const subscription of opened) await subscription.unsubscribe();
    await client.close();
  }
}

async function check_a_since_subscription_resumes_by_position_after_a_reconnect() {
  // Its WebSocket closed here (the conflation check's way): the client reconnects 0.5 to 1 s later
  // and subscribes again, from the last value's position, not from `since` (the server refuses
  // both), keeping `until` and `ts`.
  const Recorded = recordingWebSocket();
  const admin = await connected();
  const lost = latch();
  const back = latch();
  const client = await connected({ WebSocket: Recorded, backoff: [1, 1], onDisconnect: lost.set, onReconnect: back.set });
  try {
    await admin.request("create", { subject: "history.resume", kind: "replay", capacity: 100 });
    const [since] = await publishApart(admin, "history.resume", [1, 2]);
    const until = Date.now() + 600_000;
    const subscription = await client.subscribe("history.resume", { since, until, ts: true });
    const [two] = await take(subscription, 1);
    assert.ok(two.value === 2 && timeWithin(two.ts, since, Date.now()), JSON.stringify(two));
    Recorded.sockets[0].close();
    await within(lost.promise, "the disconnect");
    for (const n of [3, 4, 5]) await admin.publish("history.resume", n, { reply: true });
    await within(back.promise, "the reconnect");
    // Nothing lost, nothing repeated, no gap; each value with its time.
    const events = await take(subscription, 3);
    assert.deepEqual(events.map((event) => [event instanceof Value, event.value]), [[true, 3], [true, 4], [true, 5]]);
    assert.ok(events.every((event) => timeWithin(event.ts, two.ts, Date.now())), JSON.stringify(events));
    const subs = Recorded.sent.filter((body) => body.op === "sub");
    assert.deepEqual(subs.map((body) => [body.since, body.from, body.until, body.ts]),
      [[since, undefined, until, true], [undefined, two.pos, until, true]]);
    const replies = Recorded.received.filter((line) => line.sid === subscription.sid && "ok" in line);
    assert.deepEqual(replies.map((line) => line.resumed), [true, true]);
    await admin.publish("history.resume", 6, { reply: true });
    assert.deepEqual((await take(subscription, 1)).map((event) => event.value), [6]);
    await subscription.unsubscribe();
  } finally {
    await client.close();
    await admin.close();
  }
}

/** A map subscription's table as a plain object, for deepEqual. */
const tableOf = (subscription) => Object.fromEntries(subscription.table);

/** A change of a map subscription, described: [type, key, value or reason]. */
const described = (event) => [event.type, event.key, event instanceof Removed ? event.reason : event.value];

async function check_a_map_subscription_keeps_the_servers_table_and_its_changes() {
  const Recorded = recordingWebSocket();
  const admin = await connected();
  const client = await connected({ WebSocket: Recorded });
  const opened = [];
  try {
    await admin.request("create", { subject: "maps.hosts", kind: "map" });
    // Before the subscription (its snapshot): keys written, one written again, one removed;
    // removing a key the map does not hold is no error.
    assert.equal(await admin.publish("maps.hosts", { load: 1 }, { reply: true, key: "a" }), 0);
    await admin.publish("maps.hosts", { load: 2 }, { reply: true, key: "b" });
    await admin.publish("maps.hosts", { load: 3 }, { reply: true, key: "c" });
    await admin.publish("maps.hosts", { load: 20 }, { reply: true, key: "b" });
    assert.equal(await admin.deleteKey("maps.hosts", "c", { reply: true }), 0);
    assert.equal(await admin.deleteKey("maps.hosts", "absent", { reply: true }), 0);
    const hosts = await client.subscribeMap("maps.hosts", { conflate: true });
    opened.push(hosts);
    assert.ok(hosts instanceof MapSubscription);
    await within(hosts.waitSynced(), "the snapshot");
    assert.ok(hosts.synced);
    assert.deepEqual(tableOf(hosts), { a: { load: 1 }, b: { load: 20 } });
    // The snapshot comes as the table's first changes (in no promised order), then Synced.
    const [...snapshot] = await take(hosts, 3);
    const synced = snapshot.pop();
    assert.ok(synced instanceof Synced && snapshot.every((event) => event instanceof Value), JSON.stringify(snapshot));
    assert.deepEqual(snapshot.map(described).sort(), [["value", "a", { load: 1 }], ["value", "b", { load: 20 }]]);
    assert.equal(new Set(snapshot.map((event) => event.pos.split(":")[0])).size, 1);
    const newest = Math.max(...snapshot.map((event) => Number(event.pos.split(":")[1])));
    // Then each change, in order: a write, a new key, a removal.
    assert.equal(await admin.publish("maps.hosts", { load: 5 }, { reply: true, key: "a" }), 1);
    await admin.publish("maps.hosts", { load: 6 }, { reply: true, key: "d" });
    assert.equal(await admin.deleteKey("maps.hosts", "b", { reply: true }), 1);
    const changes = await take(hosts, 3);
    assert.deepEqual(changes.map(described),
      [["value", "a", { load: 5 }], ["value", "d", { load: 6 }], ["removed", "b", "deleted"]]);
    assert.ok(changes[2] instanceof Removed);
    const seqs = changes.map((event) => Number(event.pos.split(":")[1]));
    assert.ok(newest < seqs[0] && seqs[0] < seqs[1] && seqs[1] < seqs[2], `${newest} ${seqs}`);
    assert.deepEqual(tableOf(hosts), { a: { load: 5 }, d: { load: 6 } });
    assert.equal(hosts.position, changes[2].pos);
    // The server's table: another subscription's snapshot, and the keys `list` counts.
    const other = await admin.subscribeMap("maps.hosts");
    opened.push(other);
    await within(other.waitSynced(), "the other snapshot");
    assert.deepEqual(tableOf(other), tableOf(hosts));
    const { subjects: [entry] } = await admin.request("list", { prefix: "maps.hosts" });
    assert.deepEqual([entry.kind, entry.keys], ["map", 2]);
    const [request] = Recorded.sent.filter((body) => body.op === "sub");
    assert.deepEqual([request.positions, request.conflate, "from" in request], [true, true, false]);
    // Stages run over the values: the table holds what they make, of the keys they let through.
    const loads = await client.subscribeMap("maps.hosts", { filter: '$key != "d"', map: ".load * 2" });
    opened.push(loads);
    await within(loads.waitSynced(), "the staged snapshot");
    assert.deepEqual(tableOf(loads), { a: 10 });
    // With a callback: the changes, the table already changed when each comes.
    const called = [];
    let watched = null;
    watched = await client.subscribeMap("maps.hosts", {}, (event) => called.push([event.type, watched && tableOf(watched)]));
    opened.push(watched);
    await within(watched.waitSynced(), "the callback's snapshot");
    await admin.deleteKey("maps.hosts", "d", { reply: true });
    await poll(async () => called.length, (count) => count === 4, "the callback's changes");
    const whole = { a: { load: 5 }, d: { load: 6 } };
    assert.deepEqual(called, [["value", whole], ["value", whole], ["synced", whole], ["removed", { a: { load: 5 } }]]);
    // A key not written for the map's ttl_s goes, reason expired.
    await admin.request("create", { subject: "maps.ttl", kind: "map", ttl_s: 1 });
    const expiring = await client.subscribeMap("maps.ttl", { ts: true });
    opened.push(expiring);
    await admin.publish("maps.ttl", "soon gone", { reply: true, key: "k" });
    const [first, written, gone] = await take(expiring, 3);
    assert.ok(first instanceof Synced);
    assert.deepEqual([written.key, written.value, Number.isInteger(written.ts)], ["k", "soon gone", true]);
    assert.deepEqual(described(gone), ["removed", "k", "expired"]);
    assert.ok(gone.ts - written.ts >= 900 && gone.ts - written.ts <= 3000, `${written.ts} ${gone.ts}`);
    assert.deepEqual(tableOf(expiring), {});
    // Refused here: a pattern, a position to start from; by the server: a map's pub without a
    // key, a key on a subject that is not a map.
    await assert.rejects(client.subscribeMap("maps.*"), TypeError);
    await assert.rejects(client.subscribeMap("maps.hosts", { from: hosts.position }), TypeError);
    await expectError(admin.publish("maps.hosts", 1, { reply: true }), "bad_request");
    await expectError(admin.publish("maps.plain", 1, { reply: true, key: "a" }), "bad_request");
    await expectError(admin.deleteKey("maps.plain", "a", { reply: true }), "bad_request");
  } finally {
    for (const subscription of opened) await subscription.unsubscribe();
    await client.close();
    await admin.close();
  }
}

async function check_a_map_subscription_resumes_its_table_after_a_reconnect() {
  // Its WebSocket closed here (as the conflation check's): the client reconnects 0.5 to 1 s later
  // and subscribes again from its table's position; the server still holds every change since,
  // so the table is kept and the changes missed are applied to it.
  const Recorded = recordingWebSocket();
  const admin = await connected();
  const lost = latch();
  const reasons = [];
  const client = await connected({ WebSocket: Recorded, backoff: [1, 1],
    onDisconnect: (reason) => { reasons.push(reason); lost.set(); } });
  try {
    await admin.request("create", { subject: "maps.resume", kind: "map" });
    for (const [value, key] of ["a", "b", "c"].entries()) await admin.publish("maps.resume", value, { reply: true, key });
    const hosts = await client.subscribeMap("maps.resume", { ts: true, conflate: true });
    assert.deepEqual((await take(hosts, 4)).map((event) => event.type), ["value", "value", "value", "synced"]);
    await admin.publish("maps.resume", 10, { reply: true, key: "a" });
    const [live] = await take(hosts, 1);
    assert.equal(hosts.position, live.pos);
    assert.deepEqual(tableOf(hosts), { a: 10, b: 1, c: 2 });
    Recorded.sockets[0].close();
    await within(lost.promise, "the disconnect");
    assert.ok(!hosts.synced);
    assert.deepEqual(tableOf(hosts), { a: 10, b: 1, c: 2 });
    await admin.publish("maps.resume", 11, { reply: true, key: "b" });
    await admin.deleteKey("maps.resume", "c", { reply: true });
    await admin.publish("maps.resume", 12, { reply: true, key: "d" });
    await within(hosts.waitSynced(), "the resumed table");
    // Exactly the changes missed, in order, no gap, then Synced.
    const missed = await take(hosts, 4);
    assert.deepEqual(missed.map((event) => event.type === "synced" ? ["synced"] : described(event)),
      [["value", "b", 11], ["removed", "c", "deleted"], ["value", "d", 12], ["synced"]]);
    assert.ok(missed.slice(0, 3).every((event) => Number.isInteger(event.ts)), JSON.stringify(missed));
    assert.deepEqual(tableOf(hosts), { a: 10, b: 11, d: 12 });
    const subs = Recorded.sent.filter((body) => body.op === "sub");
    assert.deepEqual(subs.map((body) => [body.from, body.ts, body.conflate]), [[undefined, true, true], [live.pos, true, true]]);
    const replies = Recorded.received.filter((line) => line.sid === hosts.sid && "ok" in line);
    assert.deepEqual(replies.map((line) => line.resumed), [undefined, true]);
    assert.deepEqual(reasons.map((reason) => reason.code), ["connection_lost"]);
    // Live changes go on; the table is the server's.
    await admin.deleteKey("maps.resume", "a", { reply: true });
    assert.deepEqual((await take(hosts, 1)).map(described), [["removed", "a", "deleted"]]);
    const fresh = await admin.subscribeMap("maps.resume");
    await within(fresh.waitSynced(), "the server's table");
    assert.deepEqual(tableOf(fresh), { b: 11, d: 12 });
    assert.deepEqual(tableOf(hosts), tableOf(fresh));
    await fresh.unsubscribe();
    await hosts.unsubscribe();
  } finally {
    await client.close();
    await admin.close();
  }
}

async function check_a_map_subscription_rebuilds_its_table_when_it_cannot_resume() {
  // The network drops the connection without a word (item 12's way); meanwhile the map is deleted
  // and made again, with a new epoch: the client's `from` cannot resume, and the new snapshot is
  // built apart and swapped in whole at `synced`, its differences the changes.
  const network = await silentNetwork();
  const admin = await connected();
  const reasons = [];
  /** @type {WebSocket[]} */
  const sockets = [];
  const sent = [];
  const received = [];
  class Recorded extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
      this.addEventListener("message", (message) => received.push(JSON.parse(message.data)));
    }

    send(data) {
      sent.push(JSON.parse(data));
      super.send(data);
    }
  }
  const client = await connect(network.url, { token: TOKEN, WebSocket: Recorded, keepalive: 1, timeout: 1,
    onDisconnect: (reason) => reasons.push(reason) });
  try {
    await admin.request("create", { subject: "maps.rebuild", kind: "map" });
    for (const [key, value] of [["a", 1], ["b", 2], ["c", 3]]) await admin.publish("maps.rebuild", value, { reply: true, key });
    // Each change, with the table as it stood when the change came.
    const seen = [];
    let hosts = null;
    hosts = await client.subscribeMap("maps.rebuild", {}, (event) => seen.push([event, hosts && tableOf(hosts)]));
    await within(hosts.waitSynced(), "the snapshot");
    const old = tableOf(hosts);
    const oldPosition = hosts.position;
    assert.deepEqual(old, { a: 1, b: 2, c: 3 });
    const first = seen.length;
    network.silence();
    await admin.request("delete", { subject: "maps.rebuild" });
    await admin.request("create", { subject: "maps.rebuild", kind: "map" });
    await admin.publish("maps.rebuild", 2, { reply: true, key: "b" }); // as it was
    await admin.publish("maps.rebuild", 30, { reply: true, key: "c" }); // another value
    await admin.publish("maps.rebuild", 4, { reply: true, key: "d" }); // a new key
    const fresh = { b: 2, c: 30, d: 4 };
    await poll(async () => hosts.synced && seen.length > first && seen[seen.length - 1][0] instanceof Synced, Boolean,
      "the table rebuilt");
    assert.deepEqual(tableOf(hosts), fresh);
    const [[gap, atGap], ...rest] = seen.slice(first);
    const [synced, atSynced] = rest.pop();
    assert.ok(gap instanceof Gap && gap.reason === "not_resumed" && gap.cause?.code === "connection_lost", JSON.stringify(gap));
    assert.ok(synced instanceof Synced);
    assert.deepEqual(rest.map(([event]) => described(event)).sort(),
      [["removed", "a", "not_resumed"], ["value", "c", 30], ["value", "d", 4]]);
    // Never half a table: the old one until the snapshot was whole, then the new one whole.
    assert.deepEqual(atGap, old);
    for (const [, table] of rest) assert.deepEqual(table, fresh);
    assert.deepEqual(atSynced, fresh);
    const subs = sent.filter((body) => body.op === "sub");
    assert.deepEqual(subs.map((body) => body.from), [undefined, oldPosition]);
    const replies = received.filter((line) => line.sid === hosts.sid && "ok" in line);
    assert.deepEqual(replies.map((line) => line.resumed), [undefined, false]);
    assert.notEqual(hosts.position.split(":")[0], oldPosition.split(":")[0]);
    assert.deepEqual(reasons.map((reason) => [reason.code, reason.message]),
      [["connection_lost", "no answer to a keep-alive ping within 1 s"]]);
    // Live changes go on, applied to the new table.
    await admin.deleteKey("maps.rebuild", "b", { reply: true });
    await admin.publish("maps.rebuild", 5, { reply: true, key: "e" });
    // A snapshot's keys come in no order: the tables are compared as sorted entries.
    const sorted = (table) => JSON.stringify(Object.entries(table).sort());
    await poll(async () => tableOf(hosts), (table) => sorted(table) === sorted({ c: 30, d: 4, e: 5 }), "the live changes");
    assert.deepEqual(seen.slice(-2).map(([event]) => described(event)), [["removed", "b", "deleted"], ["value", "e", 5]]);
    await hosts.unsubscribe();
  } finally {
    await client.close();
    await admin.close();
    network.close();
  }
}

async function check_a_full_buffer_drops_the_newest_and_reports_a_gap() {
  const subscriber = await connected({ buffer: 10 });
  const publisher = await connected();
  const before = await publisher.request("stats");
  const subscription = await subscriber.subscribe("buffer.drop");
  for (let n = 0; n < 50; n++) await publisher.publish("buffer.drop", n);
  await publisher.request("ping");
  // The subscriber's ping is answered after every event the server wrote it before.
  await subscriber.request("ping");
  const first = await take(subscription, 11);
  assert.deepEqual(first.slice(0, 10).map((event) => event.value), range(0, 10));
  assert.deepEqual(first[10], new Gap("overflow", 40));
  await publisher.publish("buffer.drop", 50);
  assert.equal((await take(subscription, 1))[0].value, 50);
  const after = await publisher.request("stats");
  assert.equal(after.dropped, before.dropped, "the client dropped them, not the server");
  await subscriber.close();
  await publisher.close();
}

/**
 * silent_network.py in front of runneld's HTTP port: `silence()` makes the connections
 * open now lose everything, both ways, without closing (a network that drops a connection
 * without a word); connections made after it are forwarded.
 */
async function silentNetwork() {
  const script = fileURLToPath(new URL("silent_network.py", import.meta.url));
  const proxy = spawn("python3", [script, new URL(context.ws).port], { stdio: ["pipe", "pipe", "inherit"] });
  const [port] = await once(createInterface({ input: proxy.stdout }), "line");
  return {
    url: `ws://127.0.0.1:${port}/ws`,
    silence: () => proxy.kill("SIGUSR1"),
    close: () => proxy.kill("SIGTERM"),
  };
}

async function check_a_connection_gone_silent_is_noticed_by_the_keepalive_and_resumed() {
  // keepalive = 1 s, timeout = 1 s: a WebSocket the network dropped silently is taken for lost
  // within about 2 s, and the subscription resumes on a new one with nothing lost.
  const network = await silentNetwork();
  const admin = await connected();
  await admin.request("create", { subject: "silent.r", kind: "replay", capacity: 100 });
  const reasons = [];
  const client = await connect(network.url, {
    token: TOKEN, keepalive: 1, timeout: 1, onDisconnect: (reason) => reasons.push(reason),
  });
  const subscription = await client.subscribe("silent.r");
  assert.equal(await admin.publish("silent.r", 0, { reply: true }), 1);
  assert.equal((await take(subscription, 1))[0].value, 0);
  network.silence();
  for (let n = 1; n <= 5; n++) await admin.publish("silent.r", n, { reply: true });
  assert.deepEqual((await take(subscription, 5)).map((event) => event.value), [1, 2, 3, 4, 5]);
  assert.deepEqual(reasons.map((reason) => [reason.code, reason.message]),
    [["connection_lost", "no answer to a keep-alive ping within 1 s"]]);
  // A quiet connection that answers is kept: its pings are answered.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  assert.equal(reasons.length, 1);
  assert.ok(client.connected);
  await client.close();
  await admin.close();
  network.close();
}

async function check_clean_close_disposes_the_servers_subscriptions() {
  const admin = await connected();
  // From a quiet server: the last check's connections close a moment after their clients.
  const before = await poll(() => admin.request("stats"), (stats) => stats.connections === 1, "only this check's client");
  const client = await connected();
  await client.subscribe("close.a", { throttle: 30 }); // a value waiting holds a timer
  await client.subscribe("close.>", { filter: ".x > 1" });
  await client.subscribe("close.b", { ops: [{ op: "delay", seconds: 30 }] });
  await client.publish("close.a", { x: 5 });
  await client.publish("close.b", { x: 5 });
  const during = await poll(() => admin.request("stats"), (stats) => stats.timers >= before.timers + 2, "timers");
  assert.equal(during.subscriptions, before.subscriptions + 3);
  assert.equal(during.connections, before.connections + 1);
  await client.close();
  const keys = ["connections", "subscriptions", "timers"];
  await poll(() => admin.request("stats"), (stats) => keys.every((key) => stats[key] === before[key]), "stats as before");
  await expectError(client.publish("close.a", 1), "closed");
  await admin.close();
}

async function check_a_token_removed_by_a_reload_ends_its_subscriptions_without_reconnecting() {
  // Static tokens do not expire; a reload that removes one is how a token stops working today.
  const admin = await connected();
  const reasons = [];
  const lost = latch();
  const client = await connect(context.ws, {
    token: "revoked-token", onDisconnect: (reason) => { reasons.push(reason); lost.set(); },
  });
  const subscription = await client.subscribe("reload.a");
  const before = await admin.request("stats");
  writeFileSync(context.config, readFileSync(context.config, "utf8").replace(', "revoked-token"', ""));
  process.kill(context.pid, "SIGHUP");
  await within(lost.promise, "the disconnect");
  assert.deepEqual(reasons.map((reason) => [reason.code, reason.message]),
    [["unauthorized", "the token was removed from the configuration"]]);
  await expectError(subscription.next(), "unauthorized");
  await expectError(client.publish("reload.a", 1, { reply: true }), "unauthorized");
  await poll(() => admin.request("stats"), (stats) => stats.connections === before.connections - 1,
    "the connection closed and not opened again");
  await client.close();
  await admin.close();
}

/**
 * Runs `body` with runneld stopped (SIGSTOP): its connections stay open, and nothing is read or
 * answered until it goes on (SIGCONT, also when `body` throws). `body` starts once every thread
 * has stopped: kill(2) returns before a loop running on another core stops, which could still
 * answer a request sent meanwhile.
 */
async function whilePaused(body) {
  process.kill(context.pid, "SIGSTOP");
  const deadline = Date.now() + 5000;
  for (;;) {
    const states = readdirSync(`/proc/${context.pid}/task`).map((task) => {
      try {
        return readFileSync(`/proc/${context.pid}/task/${task}/stat`, "utf8").split(")").pop().trim()[0];
      } catch {
        return "T"; // a thread that has gone
      }
    });
    if (states.every((state) => state === "T")) break;
    assert.ok(Date.now() < deadline, `runneld's threads not all stopped: ${states}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  try {
    return await body();
  } finally {
    process.kill(context.pid, "SIGCONT");
  }
}

/** `call()`'s `timeout` error, and how many ms it took to come. */
async function timedOut(call) {
  const started = Date.now();
  const error = await expectError(call(), "timeout");
  return [error, Date.now() - started];
}

async function check_a_per_call_timeout_overrides_the_default() {
  const brief = await connected({ callTimeout: 0.5 });
  const patient = await connected(); // the default, 30 s
  const subscription = await patient.subscribe("deadline.kept");
  await whilePaused(async () => {
    // Connected, the requests sent, no reply: each call fails at its own deadline, saying so.
    const [[byDefault, tookByDefault], [longer, tookLonger], [shorter, tookShorter], [stats], [auth]] =
      await Promise.all([
        timedOut(() => brief.request("ping")),
        timedOut(() => brief.publish("deadline.a", 1, { reply: true, callTimeout: 2 })),
        timedOut(() => patient.subscribe("deadline.b", { map: ".n", callTimeout: 0.3 })),
        timedOut(() => patient.request("stats", {}, { callTimeout: 0.3 })),
        timedOut(() => patient.authenticate(TOKEN, { callTimeout: 0.3 })),
      ]);
    assert.ok(tookByDefault >= 450 && tookByDefault < 1900, `the default 0.5 s took ${tookByDefault} ms`);
    assert.equal(byDefault.message, "ping: no reply within 0.5 s (the client was connected: the request was sent)");
    assert.ok(tookLonger >= 1950 && tookLonger < 6000, `a call's 2 s took ${tookLonger} ms`);
    assert.match(longer.message, /^pub deadline\.a: no reply within 2 s \(the client was connected/);
    assert.ok(tookShorter >= 250 && tookShorter < 5000, `a call's 0.3 s took ${tookShorter} ms`);
    assert.match(shorter.message, /^sub deadline\.b: no reply within 0\.3 s/);
    assert.match(stats.message, /^stats: no reply within 0\.3 s/);
    assert.match(auth.message, /^auth: no reply within 0\.3 s/);
    // unsubscribe ends the subscription here at once, and waits for the server's answer no longer
    // than its deadline.
    await within(subscription.unsubscribe({ callTimeout: 0.3 }), "unsubscribe", 1500);
    assert.ok(subscription.ended);
    await assert.rejects(brief.request("ping", {}, { callTimeout: -1 }), RangeError);
  });
  // The replies that come late are ignored; the clients go on.
  assert.equal((await brief.request("ping")).ok, true);
  assert.equal((await patient.request("ping")).ok, true);
  assert.ok(brief.connected && patient.connected);
  await assert.rejects(connect(context.ws, { token: TOKEN, callTimeout: "soon" }), RangeError);
  await brief.close();
  await patient.close();
}

async function check_a_subscribe_answered_after_its_deadline_leaves_no_subscription() {
  const admin = await connected();
  const before = await poll(() => admin.request("stats"), (stats) => stats.connections === 1, "only this check's client");
  const client = await connected();
  const seen = [];
  const [error] = await whilePaused(() => timedOut(() =>
    client.subscribe("deadline.late", { callTimeout: 0.3 }, (event) => seen.push(event))));
  assert.equal(error.message, "sub deadline.late: no reply within 0.3 s (the client was connected: the request was sent)");
  // The server reads the `sub` now, and answers it before this ping: the client, which gave up on
  // it, unsubscribes at once.
  assert.equal((await client.request("ping")).ok, true);
  await poll(() => admin.request("stats"), (stats) => stats.subscriptions === before.subscriptions,
    "the subscription made after its deadline, still in the server");
  assert.equal(await admin.publish("deadline.late", 1, { reply: true }), 0);
  await client.request("ping");
  assert.deepEqual(seen, []);
  await client.close();
  await admin.close();
}

/** The message of the error event of a bare WebSocket to `url` that cannot open (Node's words). */
async function webSocketFailure(url) {
  const ws = new WebSocket(url);
  const [event] = await within(Promise.race([once(ws, "error"), once(ws, "open")]), `${url} failing`);
  assert.equal(event.type, "error", `${url} opened`);
  return event.message;
}

async function check_a_wrong_url_says_where_to_point_the_client() {
  const httpPort = new URL(context.ws).port;
  // Another transport's URL, or an HTTP path that is not /ws: refused at once, saying what to use.
  const refused = [
    [`runnel://127.0.0.1:${context.linePort}`, [/speaks WebSocket/, /ws:\/\/127\.0\.0\.1:HTTP_PORT\/ws/, /http_listen/]],
    [`runnels://127.0.0.1:${context.linePort}`, [/speaks WebSocket/, /wss:\/\/127\.0\.0\.1:HTTPS_PORT\/ws/, /https_listen/]],
    [`${context.http}/events`, [/speaks WebSocket/, new RegExp(`ws://127\\.0\\.0\\.1:${httpPort}/ws`)]],
    [`https://127.0.0.1:${httpPort}/pub/x`, [new RegExp(`wss://127\\.0\\.0\\.1:${httpPort}/ws`)]],
  ];
  for (const [url, says] of refused) {
    const started = Date.now();
    const error = await within(connect(url, { token: TOKEN }).then(() => null, (thrown) => thrown), url);
    assert.ok(error instanceof TypeError, `${url}: ${error}`);
    assert.ok(Date.now() - started < 500, `${url} took ${Date.now() - started} ms`);
    assert.ok(error.message.startsWith(`runnel: ${url}`), error.message);
    for (const words of says) assert.match(error.message, words, url);
  }
  // runneld's own HTTP URL with no path, or with /ws, is its WebSocket.
  for (const url of [context.http, `${context.http}/ws`]) {
    const client = await connect(url, { token: TOKEN });
    assert.equal(client.url, context.ws);
    await client.close();
  }
  // A WebSocket that does not open: runneld's line port, an HTTP path that is not /ws. The error
  // keeps the WebSocket's own words, and asks whether this is the HTTP port and the /ws path.
  const linePort = `ws://127.0.0.1:${context.linePort}/ws`;
  const wrongPath = `ws://127.0.0.1:${httpPort}/wrong`;
  for (const url of [linePort, wrongPath]) {
    const error = await expectError(connect(url, { token: TOKEN }), "connection_lost");
    const words = await webSocketFailure(url);
    assert.ok(error.message.startsWith(`could not connect to ${url} (${words})`), error.message);
    assert.match(error.message, /is this runneld's HTTP port \(http_listen\) and the \/ws path/);
    assert.match(error.message, /runneld's line port \(listen\) does not speak WebSocket/);
  }
  const error = await expectError(connect(wrongPath, { token: TOKEN }), "connection_lost");
  assert.match(error.message, /the \/ws path \(this URL's path is \/wrong\)\?/);
}

/** The counts an occupancy subscription (`$sys.occupancy.S`) gets until one is `last`. */
async function countsUntil(occupancy, last) {
  const seen = [];
  while (!seen.length || seen[seen.length - 1] !== last) {
    const [event] = await take(occupancy, 1);
    assert.ok(event instanceof Value, `a gap where none was: ${JSON.stringify(event)}`);
    seen.push(event.value.subscribers);
  }
  return seen;
}

/** A record of the `start` and `stop` calls of `whileWatched`, and what they push to it. */
function transitions() {
  const calls = [];
  return { calls, start: () => { calls.push("start"); }, stop: () => { calls.push("stop"); }, now: () => [...calls] };
}

async function check_while_watched_starts_and_stops_a_feed_on_the_first_and_last_subscriber() {
  const feed = await connected();
  const reader = await connected();
  const made = transitions();
  const watch = await feed.whileWatched("ww.feed", made.start, made.stop);
  // The same counts, read alongside: a count seen here reaches the watch too, in the same order.
  const occupancy = await feed.subscribe("$sys.occupancy.ww.feed");
  assert.deepEqual(await countsUntil(occupancy, 0), [0]);
  const named = await reader.subscribe("ww.feed");
  // The first count, 0, came before this 1: a `stop` for it would come first here.
  await poll(made.now, (calls) => calls.length > 0, "start on the first subscriber");
  assert.deepEqual(made.calls, ["start"]);
  // 1 -> 2 -> 1 is no transition: a `start` for either would come before the `stop` below.
  const pattern = await reader.subscribe("ww.>");
  await countsUntil(occupancy, 2);
  await pattern.unsubscribe();
  await countsUntil(occupancy, 1);
  await named.unsubscribe();
  await poll(made.now, (calls) => calls.length > 1, "stop on the last subscriber going");
  assert.deepEqual(made.calls, ["start", "stop"]);
  // Ended: a subscriber then calls nothing (the ping is answered after the count it caused).
  await watch.unsubscribe();
  assert.ok(watch.ended);
  await reader.subscribe("ww.feed");
  await countsUntil(occupancy, 1);
  await feed.request("ping");
  assert.deepEqual(made.calls, ["start", "stop"]);
  for (const subject of ["ww.*", "ww.>", "$sys.occupancy.ww.feed"]) {
    await assert.rejects(feed.whileWatched(subject, made.start, made.stop), TypeError, subject);
  }

  // A `start` that throws and a `stop` whose promise rejects are logged; the watch goes on.
  const logger = recording();
  const broken = await connected({ logger });
  await broken.whileWatched("ww.broken", () => { throw new Error("start's own bug"); },
    async () => { throw new Error("stop's own bug"); });
  const logged = () => logger.records.map(([level, , error]) => `${level}: ${error.message}`);
  let subscriber = await reader.subscribe("ww.broken");
  await poll(logged, (records) => records.length > 0, "start's error");
  await subscriber.unsubscribe();
  await poll(logged, (records) => records.length > 1, "stop's rejection");
  subscriber = await reader.subscribe("ww.broken");
  await poll(logged, (records) => records.length > 2, "start's error again");
  assert.deepEqual(logged(), ["error: start's own bug", "error: stop's own bug", "error: start's own bug"]);

  // Across reconnects (its WebSocket closed here, which the server sees closed too; the reconnect
  // 1 to 2 s later): the first count on the new connection calls only on a transition.
  const sockets = [];
  const Tracked = class extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
    }
  };
  let losses = 0;
  let reconnects = 0;
  const across = await connected({
    WebSocket: Tracked, backoff: [2, 2], onDisconnect: () => { losses += 1; }, onReconnect: () => { reconnects += 1; },
  });
  const resumed = transitions();
  await across.whileWatched("ww.across", resumed.start, resumed.stop);
  subscriber = await reader.subscribe("ww.across");
  await poll(resumed.now, (calls) => calls.length > 0, "start");
  // The last subscriber goes while the watch is disconnected: `stop` once it is back.
  sockets[sockets.length - 1].close();
  await poll(() => losses, (n) => n === 1, "the first loss");
  await subscriber.unsubscribe();
  assert.deepEqual(resumed.calls, ["start"]);
  await poll(() => reconnects, (n) => n === 1, "the first reconnect");
  await poll(resumed.now, (calls) => calls.length > 1, "stop after the reconnect");
  // Watched all through the next loss: no second `start` (it would come before this `stop`).
  subscriber = await reader.subscribe("ww.across");
  await poll(resumed.now, (calls) => calls.length > 2, "start again");
  sockets[sockets.length - 1].close();
  await poll(() => reconnects, (n) => n === 2, "the second reconnect");
  await subscriber.unsubscribe();
  await poll(resumed.now, (calls) => calls.length > 3, "stop");
  assert.deepEqual(resumed.calls, ["start", "stop", "start", "stop"]);
  await across.close();
  await broken.close();
  await reader.close();
  await feed.close();
}

// ---- expiry: JWTs, which expire ------------------------------------------------------------

/** An HS256 JWT (signed here with node:crypto) that expires `seconds` from now (in the past when
 * negative), with the rights to publish and subscribe to `expiry.>`. */
function expiringToken(seconds) {
  const now = Math.floor(Date.now() / 1000);
  const part = (object) => Buffer.from(JSON.stringify(object)).toString("base64url");
  const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part({
    sub: "checklist", iat: now, exp: now + seconds, runnel: { publish: ["expiry.>"], subscribe: ["expiry.>"] },
  })}`;
  return `${unsigned}.${createHmac("sha256", context.jwtSecret).update(unsigned).digest("base64url")}`;
}

async function check_an_expired_token_fails_at_connect_and_an_expiring_one_ends_the_connection() {
  // Expired already: refused at connect, naming the expiry.
  const error = await expectError(connect(context.ws, { token: expiringToken(-60) }), "unauthorized");
  assert.equal(error.message, "JWT expired");
  // Expiring while connected: the server's closing line is the reason, the subscription ends with
  // that error, and the client does not reconnect with the token it has.
  const reasons = [];
  const lost = latch();
  const client = await connect(context.ws, {
    token: expiringToken(2), onDisconnect: (reason) => { reasons.push(reason); lost.set(); },
  });
  const subscription = await client.subscribe("expiry.a");
  assert.equal(await client.publish("expiry.a", 1, { reply: true }), 1);
  assert.equal((await within(subscription.next(), "the value")).value.value, 1);
  await within(lost.promise, "the expiry");
  assert.deepEqual(reasons.map((reason) => [reason.code, reason.message]), [["unauthorized", "token expired"]]);
  await expectError(subscription.next(), "unauthorized");
  await expectError(client.publish("expiry.a", 2, { reply: true }), "unauthorized");
  await client.close();
}

async function check_a_token_function_refreshes_its_jwt_and_authenticate_replaces_a_token() {
  // A function hands out 3-second JWTs (the server allows no leeway here): the client sends a new
  // one as `auth` before each expires, so the connection and its subscription outlive several.
  const minted = [];
  const reasons = [];
  const client = await connect(context.ws, {
    token: async () => { minted.push(expiringToken(3)); return minted.at(-1); },
    onDisconnect: (reason) => reasons.push(reason),
  });
  const subscription = await client.subscribe("expiry.refresh");
  for (let n = 0; n < 8; n++) {
    assert.equal(await client.publish("expiry.refresh", n, { reply: true }), 1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  assert.deepEqual((await take(subscription, 8)).map((event) => event.value), [0, 1, 2, 3, 4, 5, 6, 7]);
  assert.deepEqual(reasons, []);
  assert.ok(minted.length >= 3, `${minted.length} tokens`);
  await client.close();
  // A token given by hand: a refused one leaves the connection as it was; a good one before the
  // old one expires keeps the connection past that expiry.
  const replaced = await connect(context.ws, { token: expiringToken(2), onDisconnect: (reason) => reasons.push(reason) });
  await expectError(replaced.authenticate("not-a-token"), "unauthorized");
  await replaced.authenticate(expiringToken(60));
  await new Promise((resolve) => setTimeout(resolve, 3000));
  assert.equal(await replaced.publish("expiry.b", 1, { reply: true }), 0);
  assert.deepEqual(reasons, []);
  await replaced.close();
}

// ---- restart: runneld killed with SIGKILL and started again on its ports and data -----------

async function check_a_durable_subscription_resumes_across_a_kill_with_nothing_lost_or_repeated() {
  const lost = [latch(), latch()];
  const [publisher, subscriber] = [await connected({ onDisconnect: lost[0].set }), await connected({ onDisconnect: lost[1].set })];
  await publisher.request("create", { subject: "durable.orders", kind: "replay", capacity: 1000, durable: true });
  const subscriptions = [await publisher.subscribe("durable.orders"), await subscriber.subscribe("durable.orders"),
    await subscriber.subscribe("durable.>")];
  for (let n = 1; n <= 50; n++) await publisher.publish("durable.orders", n, { reply: n === 50 });
  for (const subscription of subscriptions) assert.deepEqual(await valuesUntil(subscription, 50), range(1, 51));
  await harness("kill");
  await within(Promise.all(lost.map((each) => each.promise)), "the clients noticing the kill");
  await harness("restart");
  // The publisher's requests wait for its reconnection; with fsync = "always" the epoch holds.
  for (let n = 51; n <= 100; n++) await publisher.publish("durable.orders", n, { reply: n === 100 });
  const [single, other, pattern] = subscriptions;
  assert.deepEqual(await valuesUntil(single, 100), range(51, 101));
  assert.deepEqual(await valuesUntil(other, 100), range(51, 101));
  // A pattern cannot resume: a gap, and the values it had (replayed again) are not repeated.
  const gaps = [];
  assert.deepEqual(await valuesUntil(pattern, 100, gaps), range(51, 101));
  assert.deepEqual(gaps.map(([at, gap]) => [at, gap.reason, gap.cause?.code]), [[0, "not_resumed", "connection_lost"]]);
  assert.match(single.position, /:100$/);
  await publisher.close();
  await subscriber.close();
}

async function check_a_plain_subscription_reports_a_gap_across_a_kill() {
  const lost = latch();
  const reasons = [];
  const client = await connected({ onDisconnect: (reason) => { reasons.push(reason); lost.set(); } });
  const back = latch();
  const reconnects = [];
  const watched = await connected({ onReconnect: () => { reconnects.push(true); back.set(); } });
  const subscription = await client.subscribe("plain.ticks");
  // A client told not to reconnect: its subscription ends with the loss.
  const onceLost = latch();
  const once = await connected({ reconnect: false, onDisconnect: onceLost.set });
  const ended = await once.subscribe("plain.ticks");
  // A client closed while it reconnects: what waits for the connection fails with `closed`.
  const abandonedLost = latch();
  const abandoned = await connected({ onDisconnect: abandonedLost.set });
  for (let n = 1; n <= 3; n++) await client.publish("plain.ticks", n);
  assert.deepEqual(await valuesUntil(subscription, 3), [1, 2, 3]);
  assert.deepEqual(await valuesUntil(ended, 3), [1, 2, 3]);
  const position = subscription.position;
  await harness("kill");
  await within(Promise.all([lost.promise, onceLost.promise, abandonedLost.promise]), "the clients noticing the kill");
  const waiting = abandoned.request("ping");
  await within(abandoned.close(), "the close");
  await expectError(waiting, "closed");
  // A subscribe made while the client reconnects waits for the connection, and is made once.
  const late = client.subscribe("plain.late");
  await harness("restart");
  await expectError(ended.next(), "connection_lost");
  await expectError(once.publish("plain.ticks", 0), "connection_lost");
  // The restarted server has a new epoch for the subject: no resume, a gap before what follows.
  const [gap] = await take(subscription, 1);
  assert.ok(gap instanceof Gap && gap.reason === "not_resumed" && gap.count === null, JSON.stringify(gap));
  assert.equal(gap.cause.code, "connection_lost");
  assert.deepEqual(reasons.map((reason) => reason.code), ["connection_lost"]);
  await client.publish("plain.ticks", 4);
  const [event] = await take(subscription, 1);
  assert.equal(event.value, 4);
  assert.notEqual(event.pos.split(":")[0], position.split(":")[0]);
  assert.ok(!once.connected);
  const lateSubscription = await within(late, "the late subscription");
  await client.publish("plain.late", "late");
  assert.deepEqual(await valuesUntil(lateSubscription, "late"), ["late"]);
  await within(back.promise, "onReconnect");
  assert.deepEqual(reconnects, [true]);
  assert.ok(watched.connected);
  await client.close();
  await once.close();
  await watched.close();
}

async function check_a_call_while_runneld_is_down_times_out_and_the_client_recovers() {
  const lost = latch();
  const back = latch();
  const client = await connected({ callTimeout: 1, backoff: [0.05, 0.2], onDisconnect: lost.set, onReconnect: back.set });
  const subscription = await client.subscribe("deadline.kept");
  const unsubscribed = await client.subscribe("deadline.gone");
  await harness("kill");
  await within(lost.promise, "the disconnect");
  // Every call waits for the connection, for its deadline at most (1 s here), then fails with
  // `timeout`, saying that the client was disconnected and did not send it.
  const calls = [
    ["pub deadline.a", () => client.publish("deadline.a", 1, { reply: true })],
    ["pub deadline.a", () => client.publish("deadline.a", 2)], // quiet: not sent either
    ["stats", () => client.request("stats")],
    ["sub deadline.b", () => client.subscribe("deadline.b")],
    ["auth", () => client.authenticate(TOKEN)],
  ];
  const outcomes = await Promise.all(calls.map(([, call]) => timedOut(call)));
  for (const [[what], [error, took]] of calls.map((call, i) => [call, outcomes[i]])) {
    assert.ok(took >= 950 && took < 5000, `${what} took ${took} ms`);
    assert.ok(error.message.startsWith(`${what}: not sent within 1 s: the client was disconnected, reconnecting to ` +
      `${context.ws} (the connection was lost: connection_lost: `), error.message);
  }
  // A call's own deadline, shorter here.
  const [shorter, tookShorter] = await timedOut(() => client.request("ping", {}, { callTimeout: 0.2 }));
  assert.ok(tookShorter < 900, `0.2 s took ${tookShorter} ms`);
  assert.match(shorter.message, /^ping: not sent within 0\.2 s: the client was disconnected/);
  // Unsubscribing while disconnected does not wait: the lost connection took the server's side.
  await within(unsubscribed.unsubscribe(), "unsubscribe", 500);
  // A call whose deadline the restart beats is sent on the new connection, and answered.
  const waiting = client.publish("deadline.kept", "back", { reply: true, callTimeout: 30 });
  await harness("restart");
  assert.equal(await within(waiting, "the publish made while disconnected", 30_000), 1);
  await within(back.promise, "onReconnect");
  const gaps = [];
  assert.deepEqual(await valuesUntil(subscription, "back", gaps), ["back"]);
  assert.deepEqual(gaps.map(([, gap]) => gap.reason), ["not_resumed"]);
  assert.equal((await client.request("stats")).subscriptions, 1);
  const later = await client.subscribe("deadline.b");
  await client.publish("deadline.b", "later");
  assert.deepEqual(await valuesUntil(later, "later"), ["later"]);
  await client.close();
}

// ---- slow: a consumer the server cuts (`closing` slow_consumer), drops or conflates events for

async function check_a_closing_line_is_the_disconnect_reason_and_the_subscription_resumes() {
  const reasons = [];
  const subscriber = await connected({ onDisconnect: (reason) => reasons.push(reason) });
  const publisher = await connected();
  // 25 MB, past the kernel's buffers and the server's 256 KiB, in large values: once released,
  // the client reads what the kernel holds in few messages, well within the server's 2 s flush
  // of the closing line even on a loaded machine.
  const count = 2_500;
  const pad = 10_000;
  await publisher.request("create", { subject: "slow.r", kind: "replay", capacity: count });
  const seen = [];
  const gaps = [];
  const all = latch();
  await subscriber.subscribe("slow.r", {}, (event) => {
    if (event instanceof Gap) gaps.push(event);
    else seen.push(event.value.n);
    if (event.value?.n === count - 1) all.set();
  });
  const before = await publisher.request("stats");
  await blockedWhile({ subject: "slow.r", count, pad, key: "slow_consumer_disconnects",
    above: before.slow_consumer_disconnects });
  // Reading again, the client meets the closing line, reconnects and resumes: nothing missed.
  await within(all.promise, "the last value", 60_000);
  assert.deepEqual(gaps, []);
  assert.ok(seen.length === count && seen.every((n, i) => n === i), `${seen.length} values: ${seen.slice(0, 3)}...`);
  // The cuts are slow_consumer ones, told by their closing line; its replay after each
  // reconnect may outrun it again. A cut whose closing line does not reach the client within
  // the server's 2 s flush (a loaded machine, the client still catching up) is a lost
  // connection instead: allowed, but not all of them.
  assert.ok(reasons.some((reason) => reason.code === "slow_consumer" && reason.message === ""), String(reasons));
  for (const reason of reasons) {
    assert.ok(["slow_consumer", "connection_lost"].includes(reason.code), `${reason.code}: ${reason.message}`);
  }
  await subscriber.close();
  await publisher.close();
}

async function check_the_servers_dropped_events_are_gaps_with_their_count() {
  const subscriber = await connected();
  const publisher = await connected();
  const before = await publisher.request("stats");
  await publisher.request("create", { subject: "slow.drop", kind: "subject", slow_consumer: "drop" });
  const count = 20_000;
  const events = [];
  const marker = latch();
  await subscriber.subscribe("slow.drop", {}, (event) => {
    events.push(event);
    if (event.value?.n === count) marker.set();
  });
  // The server drops what the blocked client cannot take.
  await blockedWhile({ subject: "slow.drop", count, pad: 1000, key: "dropped", above: before.dropped });
  // Once the subscriber has read up to its ping's reply it reads as fast as the server writes:
  // the marker after it is delivered, with the `dropped` event that waited for it.
  await subscriber.request("ping");
  await publisher.publish("slow.drop", { n: count }, { reply: true });
  await within(marker.promise, "the marker");
  const values = events.filter((event) => event instanceof Value).map((event) => event.value.n);
  const gaps = events.filter((event) => event instanceof Gap);
  assert.ok(gaps.length > 0 && gaps.every((gap) => gap.reason === "dropped"), JSON.stringify(gaps));
  const dropped = gaps.reduce((sum, gap) => sum + gap.count, 0);
  assert.ok(values.every((n, i) => i === 0 || n > values[i - 1]), "values out of order");
  assert.equal(values.length + dropped, count + 1);
  const after = await publisher.request("stats");
  assert.equal(after.dropped - before.dropped, dropped);
  await subscriber.close();
  await publisher.close();
}

async function check_a_conflating_subscription_gets_the_latest_values_and_a_gap_for_the_rest() {
  // The subscriber's WebSockets, and the requests it sends over them.
  const sockets = [];
  const sent = [];
  class Recording extends WebSocket {
    constructor(url) {
      super(url);
      sockets.push(this);
    }

    send(data) {
      sent.push(JSON.parse(data));
      super.send(data);
    }
  }
  const reasons = [];
  const back = latch();
  const subscriber = await connected({ WebSocket: Recording, onDisconnect: (reason) => reasons.push(reason),
    onReconnect: back.set });
  const publisher = await connected();
  const before = await publisher.request("stats");
  // 20 MB, the server's 256 KiB many times over: under `disconnect` a subscriber that is not
  // conflating is cut; this one is kept one value while it reads nothing.
  const count = 20_000;
  const events = [];
  const last = latch();
  await subscriber.subscribe("slow.conflate", { conflate: true }, (event) => {
    events.push(event);
    if (event.value?.n === count - 1) last.set();
  });
  // The client reads again once the server has replaced half of the values for it.
  await blockedWhile({ subject: "slow.conflate", count, pad: 1000, key: "dropped", above: before.dropped + count / 2 });
  await within(last.promise, "the last value", 60_000);
  const values = events.filter((event) => event instanceof Value).map((event) => event.value.n);
  const gaps = events.filter((event) => event instanceof Gap);
  assert.ok(gaps.length > 0 && gaps.every((gap) => gap.reason === "dropped"), JSON.stringify(gaps.slice(0, 5)));
  const replaced = gaps.reduce((sum, gap) => sum + gap.count, 0);
  assert.ok(values.every((n, i) => i === 0 || n > values[i - 1]), "values out of order or repeated");
  assert.equal(values.length + replaced, count);
  const after = await publisher.request("stats");
  assert.equal(after.dropped - before.dropped, replaced);
  assert.equal(after.slow_consumer_disconnects, before.slow_consumer_disconnects, "the subscriber was cut");
  assert.deepEqual(reasons, []);
  // A reconnect subscribes again, conflating again.
  sockets[0].close();
  await within(back.promise, "the reconnect");
  const subs = sent.filter((request) => request.op === "sub");
  assert.deepEqual(subs.map((request) => [request.sid, request.conflate]), [["s1", true], ["s1", true]]);
  await subscriber.close();
  await publisher.close();
}

// ---- the command line ------------------------------------------------------------------------

const SUITES = {
  main: [
    check_connect_with_a_good_token_a_wrong_one_and_none,
    check_every_transport_publishes_and_subscribes,
    check_an_untrusted_certificate_fails_the_connection,
    check_publish_with_and_without_a_reply,
    check_typed_errors_carry_code_message_and_stage,
    check_subscribe_with_stages_as_an_iterator_and_with_callbacks,
    check_positions_and_from,
    check_since_until_and_ts_read_history_by_time,
    check_a_since_subscription_resumes_by_position_after_a_reconnect,
    check_a_map_subscription_keeps_the_servers_table_and_its_changes,
    check_a_map_subscription_resumes_its_table_after_a_reconnect,
    check_a_map_subscription_rebuilds_its_table_when_it_cannot_resume,
    check_a_full_buffer_drops_the_newest_and_reports_a_gap,
    check_clean_close_disposes_the_servers_subscriptions,
    check_a_connection_gone_silent_is_noticed_by_the_keepalive_and_resumed,
    check_a_per_call_timeout_overrides_the_default,
    check_a_subscribe_answered_after_its_deadline_leaves_no_subscription,
    check_a_wrong_url_says_where_to_point_the_client,
    check_while_watched_starts_and_stops_a_feed_on_the_first_and_last_subscriber,
    // Last: it changes the configuration.
    check_a_token_removed_by_a_reload_ends_its_subscriptions_without_reconnecting,
  ],
  restart: [
    check_a_durable_subscription_resumes_across_a_kill_with_nothing_lost_or_repeated,
    check_a_plain_subscription_reports_a_gap_across_a_kill,
    check_a_call_while_runneld_is_down_times_out_and_the_client_recovers,
  ],
  slow: [
    check_a_closing_line_is_the_disconnect_reason_and_the_subscription_resumes,
    check_the_servers_dropped_events_are_gaps_with_their_count,
    check_a_conflating_subscription_gets_the_latest_values_and_a_gap_for_the_rest,
  ],
  expiry: [
    check_an_expired_token_fails_at_connect_and_an_expiring_one_ends_the_connection,
    check_a_token_function_refreshes_its_jwt_and_authenticate_replaces_a_token,
  ],
};
// Checks run with the test certificate trusted (NODE_EXTRA_CA_CERTS).
const TRUSTING = new Set([check_every_transport_publishes_and_subscribes]);

async function main() {
  const name = process.argv[2];
  if (name === "--list") {
    for (const [suite, checks] of Object.entries(SUITES)) {
      for (const check of checks) console.log(`${suite} ${check.name}${TRUSTING.has(check) ? " trusts-ca" : ""}`);
    }
    return 0;
  }
  const check = Object.values(SUITES).flat().find((each) => each.name === name);
  if (!check) {
    console.error(`no such check: ${name} (--list lists them)`);
    return 2;
  }
  try {
    await check();
    return 0;
  } catch (error) {
    console.log(error?.stack ?? String(error));
    return 1;
  }
}

if (isMainThread) {
  process.exit(await main());
} else {
  await publishInWorker(workerData);
}
