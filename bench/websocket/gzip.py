#!/usr/bin/env python3
"""Server CPU and bytes on the wire per Server-Sent-Events delivery, with and without gzip.

    bench/websocket/gzip.py --runneld .build/release/runneld [--streams K] [--values N] [--reps R]

One runneld (one loop); K `GET /events` streams on one subject, each asking for gzip
(`Accept-Encoding: gzip`) or not, read as they come by one thread (a selector); one TCP publisher
sending N dashboard-like JSON values (deflate.py's metrics objects, about 255 bytes) in batches,
paced by a `ping` after each batch. Measures runneld's CPU time (user + system) from the first
publish until every stream has stopped receiving, and the bytes the streams received (HTTP heads
left out); a gzip'd stream is inflated by the reader afterwards and its events counted, so a
figure is never one of a stream that lost anything. Prints one row per mode: medians over R
repetitions. Not part of CI.
"""

import argparse
import json
import os
import selectors
import socket
import statistics
import sys
import threading
import time
import zlib

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "blackbox"))
from deflate import cpu_seconds, value  # noqa: E402
from runneld_process import Daemon, LineClient  # noqa: E402

MODES = {"plain": "identity", "gzip": "gzip"}


def stream(port, accept_encoding):
    sock = socket.create_connection(("127.0.0.1", port))
    sock.sendall(f"GET /events?subject=bench HTTP/1.1\r\nHost: x\r\nAccept-Encoding: {accept_encoding}\r\n\r\n"
                 .encode())
    head = b""
    while b"\r\n\r\n" not in head:
        head += sock.recv(4096)
    head, _, rest = head.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and (b"Content-Encoding: gzip" in head) == (accept_encoding == "gzip")
    sock.setblocking(False)
    return sock, bytearray(rest)


def run(binary, mode, streams, values, batch=200):
    daemon = Daemon(binary, "max_pending_bytes = 1073741824\nsoft_pending_bytes = 1073741824\n"
                    "max_connections = 100000\nlog_level = \"notice\"\n", loops=1)
    try:
        opened = [stream(daemon.http_port, MODES[mode]) for _ in range(streams)]
        time.sleep(0.5)
        stop = threading.Event()
        selector = selectors.DefaultSelector()
        for sock, data in opened:
            selector.register(sock, selectors.EVENT_READ, data)

        def drain():
            while not stop.is_set():
                for key, _ in selector.select(0.05):
                    try:
                        key.data.extend(key.fileobj.recv(1 << 20))
                    except BlockingIOError:
                        continue

        thread = threading.Thread(target=drain)
        thread.start()
        publisher = LineClient(daemon.port)
        lines = [json.dumps({"op": "pub", "subject": "bench", "value": value(i)}) for i in range(values)]
        start = cpu_seconds(daemon.process.pid)
        for index in range(0, values, batch):
            publisher.socket.sendall(("\n".join(lines[index:index + batch]) + "\n").encode())
            publisher.send({"op": "ping", "ref": index})
            while publisher.line().get("ref") != index:
                pass
        last = -1
        while sum(len(data) for _, data in opened) != last:
            last = sum(len(data) for _, data in opened)
            time.sleep(0.3)
        cpu = cpu_seconds(daemon.process.pid) - start
        stop.set()
        thread.join()
        for sock, data in opened:
            text = zlib.decompressobj(31).decompress(bytes(data)) if mode == "gzip" else bytes(data)
            assert text.count(b"\n\n") == values, (mode, text.count(b"\n\n"))
            sock.close()
        publisher.close()
        delivered = values * streams
        return cpu * 1e9 / delivered, last / delivered
    finally:
        daemon.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runneld", default=".build/release/runneld")
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--values", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3)
    arguments = parser.parse_args()
    results = {mode: [] for mode in MODES}
    for _ in range(arguments.reps):
        for mode in MODES:
            results[mode].append(run(arguments.runneld, mode, arguments.streams, arguments.values))
    print(f"{arguments.streams} streams x {arguments.values} values, medians of {arguments.reps}")
    print("| mode | server CPU ns / delivery | bytes / delivery |")
    print("|---|---|---|")
    for mode, rows in results.items():
        print(f"| {mode} | {statistics.median(r[0] for r in rows):.0f} | {statistics.median(r[1] for r in rows):.1f} |")


if __name__ == "__main__":
    main()
