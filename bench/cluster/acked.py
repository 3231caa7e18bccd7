#!/usr/bin/env python3
"""Acknowledged retained publishes per second: a runneld cluster node against JetStream alone,
measured by the same tool in the same way.

One TCP connection speaks each server's own protocol with no client library: COUNT values of
SIZE bytes, at most WINDOW unanswered at a time, each answered before it counts.

- runneld: `{"op":"pub","subject":S,"value":"...","ref":N}` into a replay subject of the cluster
  (created first with `create`); a reply `{"ok":true,...}` comes once JetStream stored it.
- JetStream: `PUB S INBOX.N` into a stream made for it the way runneld makes a subject's (memory
  storage, the same number of values kept per subject, one replica); the answer is JetStream's
  publish acknowledgement on the inbox.

    acked.py runnel HOST:PORT [--count N] [--size B] [--window W]
    acked.py jetstream HOST:PORT [--count N] [--size B] [--window W] [--msg-id] [--consumer] [--apart]

For JetStream alone, two options add what a runneld node asks of nats-server besides the store,
to tell their costs apart: `--msg-id` sends each value with a `Nats-Msg-Id` header (HPUB), which
JetStream checks against its duplicate window, as a node's publishes have; `--consumer` reads the
stream back through a push consumer on the same connection (no acks, flow control answered), as a
node's ordered consumer does, and a value counts once both its acknowledgement and its copy came;
`--apart` puts that consumer on a second connection, as a node's is.

Prints one JSON line: server, count, seconds, acked_per_s.
"""

import argparse
import asyncio
import json
import time


async def runnel(host, port, count, size, window):
    reader, writer = await asyncio.open_connection(host, port)
    subject = f"bench.acked.{time.monotonic_ns()}"
    writer.write((json.dumps({"op": "create", "subject": subject, "kind": "replay", "capacity": 1000,
                              "ref": "c"}) + "\n").encode())
    reply = json.loads(await reader.readline())
    assert reply.get("ok"), reply
    value = "x" * size
    lines = [(json.dumps({"op": "pub", "subject": subject, "value": value, "ref": n}) + "\n").encode()
             for n in range(count)]

    async def read_replies():
        for _ in range(count):
            line = await reader.readline()
            assert line.startswith(b'{"ok":true'), line
            credit.release()

    credit = asyncio.Semaphore(window)
    started = time.perf_counter()
    replies = asyncio.ensure_future(read_replies())
    for line in lines:
        await credit.acquire()
        writer.write(line)
    await replies
    seconds = time.perf_counter() - started
    writer.close()
    return seconds


class NATSConnection:
    """One client connection speaking NATS's text protocol, subscribed to its inbox, `INBOX.>`
    (sid 1)."""

    async def open(self, host, port, inbox=b"_BENCH"):
        self.reader, self.writer = await asyncio.open_connection(host, port)
        await self.reader.readline()  # INFO
        self.writer.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n')
        self.writer.write(b"SUB %s.> 1\r\n" % inbox)
        return self

    async def message(self):
        """The next MSG's or HMSG's subscription id, reply subject (or None), headers and payload
        (PINGs answered). The consumer's copies come with the stream's subject, under sid 2."""
        while True:
            line = await self.reader.readline()
            if line.startswith(b"PING"):
                self.writer.write(b"PONG\r\n")
                continue
            if line.startswith(b"MSG") or line.startswith(b"HMSG"):
                parts = line.split()
                headers = int(parts[-2]) if parts[0] == b"HMSG" else 0
                reply = parts[3] if len(parts) == (6 if headers else 5) else None
                body = (await self.reader.readexactly(int(parts[-1]) + 2))[:-2]
                return parts[2], reply, body[:headers], body[headers:]
            assert line, "the server closed the connection"
            assert not line.startswith(b"-ERR"), line


async def jetstream(host, port, count, size, window, msg_id=False, consumer=False, apart=False):
    main = await NATSConnection().open(host, port)
    name = f"BENCH_ACKED_{time.monotonic_ns()}"
    subject = f"bench.acked.{name}"
    config = json.dumps({"name": name, "subjects": [subject], "storage": "memory", "num_replicas": 1,
                         "max_msgs_per_subject": 1000, "discard": "old"}).encode()
    main.writer.write(b"PUB $JS.API.STREAM.CREATE.%s _BENCH.create %d\r\n%s\r\n" % (name.encode(), len(config), config))
    _, _, _, created = await main.message()
    assert b'"error"' not in created, created
    push = await NATSConnection().open(host, port, b"_BENCH_APART") if apart else main
    if consumer:
        push.writer.write(b"SUB _BENCH_PUSH 2\r\n")
        config = json.dumps({"stream_name": name, "config": {
            "deliver_subject": "_BENCH_PUSH", "deliver_policy": "new", "ack_policy": "none",
            "flow_control": True, "idle_heartbeat": 5_000_000_000, "mem_storage": True}}).encode()
        push.writer.write(b"PUB $JS.API.CONSUMER.CREATE.%s %s.consumer %d\r\n%s\r\n" % (
            name.encode(), b"_BENCH_APART" if apart else b"_BENCH", len(config), config))
        _, _, _, made = await push.message()
        assert b'"error"' not in made, made
    value = b"x" * size
    credit = asyncio.Semaphore(window)
    seen = {"acked": 0, "pushed": 0}
    finished = asyncio.Event()

    def done():
        return min(seen["acked"], seen["pushed"] if consumer else count) >= count

    def saw(what):
        """One more acknowledgement or copy: a value is answered once it has both."""
        before = min(seen["acked"], seen["pushed"]) if consumer else seen["acked"]
        seen[what] += 1
        if (min(seen["acked"], seen["pushed"]) if consumer else seen["acked"]) > before:
            credit.release()
        if done():
            finished.set()

    async def read(connection):
        while not done():
            sid, reply, headers, body = await connection.message()
            if sid == b"2":
                if headers.startswith(b"NATS/1.0 100"):  # flow control (answered) or a heartbeat
                    if reply:
                        connection.writer.write(b"PUB %s 0\r\n\r\n" % reply)
                else:
                    saw("pushed")
                continue
            assert b'"seq"' in body and b'"error"' not in body, body
            saw("acked")

    started = time.perf_counter()
    readers = [asyncio.ensure_future(read(main))] + ([asyncio.ensure_future(read(push))] if apart and consumer else [])
    for n in range(count):
        await credit.acquire()
        if msg_id:
            header = b"NATS/1.0\r\nNats-Msg-Id: bench-%d\r\n\r\n" % n
            main.writer.write(b"HPUB %s _BENCH.%d %d %d\r\n%s%s\r\n" % (
                subject.encode(), n, len(header), len(header) + len(value), header, value))
        else:
            main.writer.write(b"PUB %s _BENCH.%d %d\r\n%s\r\n" % (subject.encode(), n, len(value), value))
    waiter = asyncio.ensure_future(finished.wait())
    for task in (await asyncio.wait([waiter, *readers], return_when=asyncio.FIRST_COMPLETED))[0]:
        task.result()  # a reader's failure, raised here
    seconds = time.perf_counter() - started
    for reader in readers:
        reader.cancel()
    main.writer.write(b"PUB $JS.API.STREAM.DELETE.%s _BENCH.delete 0\r\n\r\n" % name.encode())
    await main.writer.drain()
    for connection in {id(main): main, id(push): push}.values():
        connection.writer.close()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", choices=["runnel", "jetstream"])
    parser.add_argument("address")
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--window", type=int, default=64)
    parser.add_argument("--msg-id", action="store_true", help="JetStream: a Nats-Msg-Id header on each value")
    parser.add_argument("--consumer", action="store_true", help="JetStream: read the stream back through a push consumer")
    parser.add_argument("--apart", action="store_true", help="JetStream: the consumer on a second connection")
    args = parser.parse_args()
    host, _, port = args.address.rpartition(":")
    if args.server == "runnel":
        seconds = asyncio.run(runnel(host, int(port), args.count, args.size, args.window))
    else:
        seconds = asyncio.run(jetstream(host, int(port), args.count, args.size, args.window, args.msg_id, args.consumer, args.apart))
    print(json.dumps({"server": args.server, "count": args.count, "seconds": round(seconds, 3),
                      "acked_per_s": round(args.count / seconds)}))


if __name__ == "__main__":
    main()
