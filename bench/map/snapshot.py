#!/usr/bin/env python3
"""A map's snapshot under load (#47): a map of --keys keys (64-byte values), --subs
subscribers holding it (`--holders filter`, the default: each a dashboard panel of one key,
`filter $key == "kN"`, so the server evaluates every write for each; `--holders all`: each
reads every change; both drained by a thread of this process), a
writer setting random keys at --rate writes a second, and every second a new subscriber that
times its snapshot: from its `sub` written to its `synced` read (the events between read as
bytes, not parsed), while the writes go on. Also runneld's resident memory before the map and
with it full, divided by the keys: the memory a key costs.

    bench/map/snapshot.py --runneld .build/release/runneld [--keys 100000] [--subs 1000]
                          [--rate 100000] [--seconds 10] [--loops 1] [--holders filter|all]

Prints the snapshot times' median and maximum against the issue's 200 ms, the writes a
second the server took (the writer is paced by the replies to a `ping` after every batch, so
a server that falls behind shows as a lower rate), and the bytes a key costs. No peer gives a
keyed snapshot with positions (../shared/research/dashboards.md): the bound is the
comparison. Starts runneld on loopback and stops it. Not part of CI.
"""

import argparse
import json
import os
import random
import selectors
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "history"))
from chart import free_port, started  # noqa: E402

BOUND_MS = 200.0
VALUE = json.dumps({"load": 0.5, "host": "x" * 40}, separators=(",", ":"))  # 64 bytes


def rss_bytes(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def request_all(port, lines):
    """Sends `lines`, then a ping, and waits for its reply (every reply before it is read)."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        reader = client.makefile("rb")
        client.sendall(b"".join(lines) + b'{"op":"ping","ref":"done"}\n')
        while True:
            reply = json.loads(reader.readline())
            if reply.get("ref") == "done":
                return
            assert reply.get("ok", True), reply


def pub(key):
    return b'{"op":"pub","subject":"m","key":"k%d","value":%s}\n' % (key, VALUE.encode())


def drain(sockets, stop):
    """Reads and throws away what the holding subscribers get, until `stop` is set."""
    selector = selectors.DefaultSelector()
    for client in sockets:
        client.setblocking(False)
        selector.register(client, selectors.EVENT_READ)
    while not stop.is_set():
        for key, _ in selector.select(timeout=0.1):
            try:
                if not key.fileobj.recv(1 << 20):
                    selector.unregister(key.fileobj)
            except BlockingIOError:
                pass


def write(port, keys, rate, stop, counted):
    """Sets random keys at `rate` a second, in batches of a tenth of a second, each followed by
    a ping whose reply is awaited: what the server took is counted."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        reader = client.makefile("rb")
        batch = max(1, rate // 10)
        start = time.monotonic()
        sent = 0
        while not stop.is_set():
            client.sendall(b"".join(pub(random.randrange(keys)) for _ in range(batch)) + b'{"op":"ping","ref":1}\n')
            while b'"ref":1' not in reader.readline():
                pass
            sent += batch
            counted[0] = sent
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)


def time_snapshot(port):
    """Milliseconds from a new subscriber's `sub` to its `synced`."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        tail = b""
        start = time.monotonic()
        client.sendall(b'{"op":"sub","subject":"m","sid":"snap"}\n')
        while b'"ev":"synced"' not in tail:
            chunk = client.recv(1 << 20)
            assert chunk, "the server closed the snapshot's connection"
            # The marker may straddle two reads: the last bytes of one go before the next.
            tail = tail[-32:] + chunk
        return (time.monotonic() - start) * 1000


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runneld", required=True)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--subs", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=100_000)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--loops", type=int, default=1)
    parser.add_argument("--holders", choices=["filter", "all"], default="filter")
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "runneld.toml")
        with open(config, "w") as file:
            file.write(f"max_connections = {args.subs + 100}\nmax_map_keys = {args.keys}\n")
        server = started(subprocess.Popen([args.runneld, "--config", config, "--listen", f"127.0.0.1:{port}",
                                           "--http-listen", "", "--loops", str(args.loops),
                                           "--log-level", "warning"]), port)
        try:
            request_all(port, [b'{"op":"create","subject":"m","kind":"map"}\n'])
            before = rss_bytes(server.pid)
            for start in range(0, args.keys, 10_000):
                request_all(port, [pub(key) for key in range(start, min(args.keys, start + 10_000))])
            per_key = (rss_bytes(server.pid) - before) / args.keys
            holders = []
            for n in range(args.subs):
                client = socket.create_connection(("127.0.0.1", port))
                stages = (',"ops":[{"op":"filter","expr":"$key == \\"k%d\\""}]' % n) if args.holders == "filter" else ""
                client.sendall(b'{"op":"sub","subject":"m"%s}\n{"op":"ping","ref":"held"}\n' % stages.encode())
                holders.append(client)
            # Each holder's snapshot is out (its ping's reply comes after it) before anything is timed.
            for client in holders:
                tail = b""
                while b'"ref":"held"' not in tail:
                    tail = tail[-32:] + client.recv(1 << 20)
            stop = threading.Event()
            threading.Thread(target=drain, args=(holders, stop), daemon=True).start()
            idle = time_snapshot(port)
            counted = [0]
            writer = threading.Thread(target=write, args=(port, args.keys, args.rate, stop, counted))
            began = time.monotonic()
            writer.start()
            times = []
            while time.monotonic() - began < args.seconds:
                time.sleep(1)
                times.append(time_snapshot(port))
            stop.set()
            writer.join()
            rate = counted[0] / (time.monotonic() - began)
            for client in holders:
                client.close()
        finally:
            server.terminate()
            server.wait()
    print(f"map of {args.keys} keys, {args.subs} subscribers ({args.holders}), loops {args.loops}: "
          f"{per_key:.0f} bytes a key")
    print(f"snapshot with no writes: {idle:.1f} ms")
    print(f"snapshot while writing ({rate:,.0f} writes/s taken of {args.rate:,} asked): "
          f"median {statistics.median(times):.1f} ms, max {max(times):.1f} ms (bound {BOUND_MS:.0f} ms)")


if __name__ == "__main__":
    main()
