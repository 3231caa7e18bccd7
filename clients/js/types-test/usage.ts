// A TypeScript program using the client, compiled against ../runnel.d.ts by `make check-js`
// (`tsc -p clients/js/types-test`, with conformance.ts): the types a user sees, and that they
// narrow as documented.
import { Client, connect, Gap, MapSubscription, RunnelError, Subscription, Value, type MapEvent, type RunnelEvent } from "../runnel.js";

export async function example(url: string): Promise<number> {
  const client: Client = await connect(url, {
    token: "s3cret",
    backoff: [0.25, 5],
    onDisconnect: (reason: RunnelError) => console.log(reason.code, reason.message),
    onReconnect: () => console.log("back"),
  });
  const receivers: number = await client.publish("cpu", { host: "a", load: 0.97 }, { reply: true });
  const quiet: undefined = await client.publish("cpu", 1);
  const stats = await client.request("stats");
  const hot: Subscription = await client.subscribe("cpu", { filter: ".load > 0.9", map: ".host", throttle: 0.2 });
  for await (const event of hot) {
    if (event.type === "gap") {
      const count: number | null = event.count;
      console.log(event.reason, count, event.cause?.code);
    } else {
      const pos: string | null = event.pos;
      console.log(event.value, event.subject, pos);
      break;
    }
  }
  const position: string | null = hot.position;
  const later = await client.subscribe("cpu", { from: position ?? undefined, ops: [{ op: "take", count: 1 }] },
    (event: RunnelEvent) => console.log(event instanceof Value ? event.value : (event as Gap).reason),
    (error: RunnelError | null) => console.log(error?.stage));
  await later.unsubscribe();
  // History by time (version 1.3): from a Date, until an RFC 3339 time, each value with its `ts`.
  const history = await client.subscribe("cpu", { since: new Date(Date.now() - 60_000), until: "2026-12-02T14:00:00Z",
    ts: true });
  for await (const event of history) {
    if (event instanceof Value) {
      const ts: number | null = event.ts;
      console.log(ts === null ? "no time" : new Date(ts).toISOString());
    }
  }
  await client.subscribe("cpu", { since: Date.now() - 60_000, ts: false }, (event: RunnelEvent) => console.log(event));
  let feed: ReturnType<typeof setInterval> | undefined;
  const watch: Subscription = await client.whileWatched("cpu.feed",
    () => { feed = setInterval(() => client.publish("cpu.feed", Date.now()), 1000); },
    async () => { clearInterval(feed); },
    { callTimeout: 5 });
  await watch.unsubscribe();
  try {
    await client.subscribe("cpu", { map: ".a +" });
  } catch (error) {
    if (error instanceof RunnelError && error.code === "bad_expr") console.log(error.stage);
  }
  await client.close();
  return receivers + (quiet ?? 0) + Number(stats.subscriptions);
}

// A map subject's table (version 1.3): keys written and removed, a live table and its changes.
export async function withAMap(url: string): Promise<number> {
  const client = await connect(url);
  await client.request("create", { subject: "hosts", kind: "map", ttl_s: 60 });
  const receivers: number = await client.publish("hosts", { load: 0.5 }, { key: "a", reply: true });
  await client.publish("hosts", { load: 0.7 }, { key: "b" });
  const removed: number = await client.deleteKey("hosts", "b", { reply: true });
  const quiet: undefined = await client.deleteKey("hosts", "c");
  const hosts: MapSubscription = await client.subscribeMap("hosts", { map: ".load", conflate: true },
    (event: MapEvent) => console.log(event.type));
  await hosts.waitSynced({ callTimeout: 5 });
  const table: ReadonlyMap<string, unknown> = hosts.table;
  const iterated = await client.subscribeMap("hosts");
  for await (const change of iterated) {
    if (change.type === "value") console.log(change.key, change.value, change.pos);
    else if (change.type === "removed") console.log(change.key, change.reason);
    else if (change.type === "synced") break;
    else console.log(change.reason, change.count);
  }
  await hosts.unsubscribe();
  await client.close();
  return receivers + removed + table.size + (quiet ?? 0) + (hosts.synced ? 1 : 0);
}

export async function withDeadlines(url: string): Promise<void> {
  const client = await connect(url, { callTimeout: 5 });
  try {
    const receivers: number = await client.publish("cpu", 1, { reply: true, callTimeout: 0.5 });
    const quiet: undefined = await client.publish("cpu", 2, { callTimeout: 1 });
    await client.request("stats", {}, { callTimeout: 2 });
    await client.authenticate("s3cret", { callTimeout: 2 });
    const subscription = await client.subscribe("cpu", { map: ".host", callTimeout: 2 });
    await subscription.unsubscribe({ callTimeout: 1 });
    console.log(receivers, quiet);
  } catch (error) {
    if (error instanceof RunnelError && error.code === "timeout") console.log(error.message);
  }
  await client.close();
}

export async function withTokensAnAppMints(url: string): Promise<void> {
  const client = await connect(url, { token: async () => (await fetch("/api/runnel-token")).text() });
  const again: Client = await connect(url, { token: () => "header.payload.signature" });
  await client.authenticate("another.jwt.token");
  await Promise.all([client.close(), again.close()]);
}
