#!/usr/bin/env python3
"""Throughput through a Python client, 1 publisher to 1 subscriber: one process, one asyncio loop,
two connections (the publisher's and the subscriber's) to one server on loopback. The publisher
sends COUNT values of 64 bytes as fast as its client takes them; the time runs from the first
publish to the subscriber's receipt of the last, and every value must arrive, in order.

    throughput.py runnel runnel://127.0.0.1:PORT iterator|callback [--count N]
    throughput.py nats nats://127.0.0.1:PORT iterator|callback [--count N]

runnel: this checkout's clients/python (the iterator with overflow "wait", so nothing is dropped
in the client); nats: nats-py. Prints one JSON line: client, mode, count, seconds, msgs_per_s.
"""

import argparse
import asyncio
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))

SUBJECT = "bench.clients"


async def measure(mode, count, publish, subscribe, iterate):
    """Publishes `count` values with `publish(last)`, received through `subscribe(callback)` (mode
    callback) or the async iterator `iterate()` returns (mode iterator), each received message
    told to `arrived(last)`; returns how many arrived, and the seconds."""
    done = asyncio.get_running_loop().create_future()
    received = 0

    def arrived(last):
        nonlocal received
        received += 1
        if last and not done.done():
            done.set_result(received)

    if mode == "callback":
        await subscribe(arrived)
    else:
        messages = await iterate()

        async def consume():
            async for last in messages:
                arrived(last)
                if done.done():
                    return

        consumer = asyncio.create_task(consume())
    started = time.perf_counter()
    for n in range(count):
        await publish(n == count - 1)
    got = await done
    seconds = time.perf_counter() - started
    if mode == "iterator":
        await consumer
    return got, seconds


async def runnel_run(url, mode, count):
    import runnel

    # 64 bytes of JSON: a string of 62 characters and its quotes; the last one is all "e"s.
    payload, end = "x" * 62, "e" * 62
    publisher = await runnel.connect(url)
    subscriber = await runnel.connect(url, overflow="wait")

    async def publish(last):
        await publisher.publish(SUBJECT, end if last else payload)

    async def subscribe(arrived):
        await subscriber.subscribe(SUBJECT, None, lambda event: arrived(event.value == end))

    async def iterate():
        subscription = await subscriber.subscribe(SUBJECT)
        return (event.value == end async for event in subscription)

    try:
        return await measure(mode, count, publish, subscribe, iterate)
    finally:
        await publisher.close()
        await subscriber.close()


async def nats_run(url, mode, count):
    import nats

    payload, end = b"x" * 64, b"e" * 64
    publisher = await nats.connect(url)
    subscriber = await nats.connect(url)

    async def publish(last):
        await publisher.publish(SUBJECT, end if last else payload)
        if last:
            await publisher.flush()

    async def subscribe(arrived):
        async def callback(message):
            arrived(message.data == end)

        await subscriber.subscribe(SUBJECT, cb=callback)
        await subscriber.flush()

    async def iterate():
        subscription = await subscriber.subscribe(SUBJECT)
        await subscriber.flush()
        return (message.data == end async for message in subscription.messages)

    try:
        return await measure(mode, count, publish, subscribe, iterate)
    finally:
        await publisher.close()
        await subscriber.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("client", choices=["runnel", "nats"])
    parser.add_argument("url")
    parser.add_argument("mode", choices=["iterator", "callback"])
    parser.add_argument("--count", type=int, default=200_000)
    arguments = parser.parse_args()
    run = runnel_run if arguments.client == "runnel" else nats_run
    got, seconds = asyncio.run(run(arguments.url, arguments.mode, arguments.count))
    if got != arguments.count:
        sys.exit(f"{arguments.client}: {got} of {arguments.count} values arrived")
    print(json.dumps({"client": arguments.client, "mode": arguments.mode, "count": got,
                      "seconds": round(seconds, 3), "msgs_per_s": round(got / seconds)}))


if __name__ == "__main__":
    main()
