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
    acked.py jetstream HOST:PORT [--count N] [--size B] [--window W]

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


async def jetstream(host, port, count, size, window):
    reader, writer = await asyncio.open_connection(host, port)
    await reader.readline()  # INFO
    name = f"BENCH_ACKED_{time.monotonic_ns()}"
    subject = f"bench.acked.{name}"
    writer.write(b'CONNECT {"verbose":false,"pedantic":false,"headers":true,"no_responders":true}\r\n')
    writer.write(b"SUB _BENCH.> 1\r\n")
    config = json.dumps({"name": name, "subjects": [subject], "storage": "memory", "num_replicas": 1,
                         "max_msgs_per_subject": 1000, "discard": "old"}).encode()
    writer.write(b"PUB $JS.API.STREAM.CREATE.%s _BENCH.create %d\r\n%s\r\n" % (name.encode(), len(config), config))

    async def message():
        """The next MSG's subject and payload (PINGs answered)."""
        while True:
            line = await reader.readline()
            if line.startswith(b"PING"):
                writer.write(b"PONG\r\n")
                continue
            if line.startswith(b"MSG"):
                parts = line.split()
                payload = await reader.readexactly(int(parts[-1]) + 2)
                return parts[1], payload[:-2]
            assert not line.startswith(b"-ERR"), line

    _, created = await message()
    assert b'"error"' not in created, created
    value = b"x" * size
    credit = asyncio.Semaphore(window)

    async def read_acks():
        for _ in range(count):
            _, ack = await message()
            assert b'"seq"' in ack and b'"error"' not in ack, ack
            credit.release()

    started = time.perf_counter()
    acks = asyncio.ensure_future(read_acks())
    for n in range(count):
        await credit.acquire()
        writer.write(b"PUB %s _BENCH.%d %d\r\n%s\r\n" % (subject.encode(), n, len(value), value))
    await acks
    seconds = time.perf_counter() - started
    writer.write(b"PUB $JS.API.STREAM.DELETE.%s _BENCH.delete 0\r\n\r\n" % name.encode())
    await writer.drain()
    writer.close()
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", choices=["runnel", "jetstream"])
    parser.add_argument("address")
    parser.add_argument("--count", type=int, default=20000)
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--window", type=int, default=64)
    args = parser.parse_args()
    host, _, port = args.address.rpartition(":")
    measure = runnel if args.server == "runnel" else jetstream
    seconds = asyncio.run(measure(host, int(port), args.count, args.size, args.window))
    print(json.dumps({"server": args.server, "count": args.count, "seconds": round(seconds, 3),
                      "acked_per_s": round(args.count / seconds)}))


if __name__ == "__main__":
    main()
