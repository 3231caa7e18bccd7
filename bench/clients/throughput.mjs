// Throughput through the JavaScript client (clients/js/runnel.js), 1 publisher to 1 subscriber,
// as bench/clients/throughput.py measures the Python one: one Node process, two clients (the
// publisher's and the subscriber's) over WebSocket to one runneld on loopback. The publisher
// sends COUNT values of 64 bytes without replies; the time runs from the first publish to the
// subscriber's receipt of the last, and every value must arrive (a gap fails the run).
//
//   node [--experimental-websocket] bench/clients/throughput.mjs ws://127.0.0.1:PORT/ws iterator|callback [COUNT]
//
// Prints one JSON line: client, mode, count, seconds, msgs_per_s.
import { connect, Gap } from "../../clients/js/runnel.js";

const [url, mode, countText] = process.argv.slice(2);
const count = Number(countText ?? 200_000);
if (!url || !["iterator", "callback"].includes(mode) || !(count > 0)) {
  console.error("usage: throughput.mjs WS-URL iterator|callback [COUNT]");
  process.exit(2);
}
const subject = "bench.clients.js";
// 64 bytes of JSON: a string of 62 characters and its quotes; the last one is all "e"s.
const payload = "x".repeat(62);
const end = "e".repeat(62);

// The subscriber's buffer holds a whole run: this measures the client, not its overflow policy.
const subscriber = await connect(url, { buffer: count + 16 });
const publisher = await connect(url);
let received = 0;
let gaps = 0;
let resolveDone;
const done = new Promise((resolve) => (resolveDone = resolve));
const arrived = (event) => {
  if (event instanceof Gap) gaps += 1;
  else received += 1;
  if (event.value === end) resolveDone();
};
let subscription;
if (mode === "callback") {
  subscription = await subscriber.subscribe(subject, {}, arrived);
} else {
  subscription = await subscriber.subscribe(subject);
  (async () => {
    for await (const event of subscription) {
      arrived(event);
      if (event.value === end) return;
    }
  })();
}
const started = performance.now();
for (let n = 0; n < count; n++) {
  // Yield now and then, as a program publishing from its own events would, so the subscriber's
  // messages are read while the publisher sends.
  if (n % 1000 === 0) await new Promise((resolve) => setImmediate(resolve));
  await publisher.publish(subject, n === count - 1 ? end : payload);
}
await done;
const seconds = (performance.now() - started) / 1000;
if (received !== count || gaps > 0) {
  console.error(`received ${received} of ${count}, ${gaps} gap(s)`);
  process.exit(1);
}
console.log(JSON.stringify({ client: "runnel.js", mode, count, seconds, msgs_per_s: count / seconds }));
await publisher.close();
await subscriber.close();
