#!/usr/bin/env python3
"""A TCP proxy that adds delay on demand: scripts/netfault-harness.py puts it on one node's path to
NATS, inside that node's network namespace, since the kernel here has no netem.

    scripts/netfault_proxy.py LISTEN_HOST:PORT UPSTREAM_HOST:PORT [--delay-ms 200]

Forwards every connection made to LISTEN to UPSTREAM (a connection of its own each, made within
3 s or the client's is closed), both ways, in order. Prints `listening HOST:PORT` once it
listens. On SIGUSR1 each chunk read from then on, either way, is written `--delay-ms` after it
was read (so a round trip takes twice that more), in its order; on SIGUSR2 chunks go on at once
again (those already held still wait their time, so order is kept), and it prints what it
delayed: `delay off: N chunks, B bytes delayed`. Either end closing closes the other once what
was read from it is written. Runs until SIGTERM or its stdin closes. Python's asyncio, stdlib only.
"""

import argparse
import asyncio
import signal
import sys
import time


class Proxy:
    def __init__(self, upstream, delay_ms):
        self.upstream = upstream
        self.delay = delay_ms / 1000
        self.delaying = False
        self.chunks = 0
        self.bytes = 0

    def set_delay(self, on):
        self.delaying = on
        if on:
            self.chunks = self.bytes = 0
            print("delay on", flush=True)
        else:
            print(f"delay off: {self.chunks} chunks, {self.bytes} bytes delayed", flush=True)

    async def serve(self, client_reader, client_writer):
        host, port = self.upstream
        try:
            upstream_reader, upstream_writer = await asyncio.wait_for(asyncio.open_connection(host, port), 3)
        except (OSError, asyncio.TimeoutError):
            client_writer.close()
            return
        ends = (client_writer, upstream_writer)
        await asyncio.gather(self.pipe(client_reader, upstream_writer, ends),
                             self.pipe(upstream_reader, client_writer, ends))

    async def pipe(self, reader, writer, ends):
        """Copies reader to writer, each chunk held until its time; closes both ends at the end."""
        held = asyncio.Queue()

        async def send():
            while True:
                due, chunk = await held.get()
                if chunk is None:
                    return
                wait = due - time.monotonic()
                if wait > 0:
                    await asyncio.sleep(wait)
                writer.write(chunk)
                await writer.drain()

        sender = asyncio.create_task(send())
        try:
            while not sender.done():
                chunk = await reader.read(65536)
                if not chunk:
                    break
                due = time.monotonic()
                if self.delaying and self.delay > 0:
                    due += self.delay
                    self.chunks += 1
                    self.bytes += len(chunk)
                held.put_nowait((due, chunk))
            held.put_nowait((0, None))
            await sender
        except (OSError, asyncio.CancelledError):
            pass
        finally:
            sender.cancel()
            for end in ends:
                end.close()


async def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("listen")
    parser.add_argument("upstream")
    parser.add_argument("--delay-ms", type=int, default=200)
    args = parser.parse_args()
    listen_host, _, listen_port = args.listen.rpartition(":")
    upstream_host, _, upstream_port = args.upstream.rpartition(":")
    proxy = Proxy((upstream_host, int(upstream_port)), args.delay_ms)
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    loop.add_signal_handler(signal.SIGUSR1, proxy.set_delay, True)
    loop.add_signal_handler(signal.SIGUSR2, proxy.set_delay, False)
    loop.add_signal_handler(signal.SIGTERM, done.set)
    # The harness ending us by closing our stdin is as good as SIGTERM.
    loop.add_reader(sys.stdin.fileno(), lambda: sys.stdin.buffer.read1(4096) or done.set())
    server = await asyncio.start_server(proxy.serve, listen_host, int(listen_port))
    print(f"listening {args.listen}", flush=True)
    async with server:
        await done.wait()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGUSR1, signal.SIGUSR2, signal.SIGTERM})
    asyncio.run(main())
