#!/usr/bin/env python3
"""Server CPU and bytes on the wire per WebSocket delivery, with and without permessage-deflate.

    bench/websocket/deflate.py --runneld .build/release/runneld [--subs K] [--values N] [--reps R]

One runneld (one loop); K raw WebSocket subscribers on one subject, each offering MODE's
Sec-WebSocket-Extensions and reading everything as it comes without parsing it (one thread,
a selector); one TCP publisher sending N dashboard-like JSON values (~300 bytes, a metrics
object) in batches, paced by a `ping` after each batch so the subscribers keep up. Measures
runneld's CPU time (user + system, /proc/PID/stat) from the first publish until every
subscriber has received its share, and the bytes the subscribers received. Modes:

    plain     no offer: uncompressed frames
    takeover  `permessage-deflate`: each connection's deflater, window kept between messages
    shared    `permessage-deflate; server_no_context_takeover`: each value compressed once for
              all subscribers

Prints one row per mode: medians over R repetitions of CPU ns per delivery and bytes per
delivery. Not part of CI.
"""

import argparse
import base64
import json
import os
import selectors
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "scripts"))
from runneld_process import Daemon, LineClient  # noqa: E402

MODES = {"plain": None, "takeover": "permessage-deflate",
         "shared": "permessage-deflate; server_no_context_takeover"}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def subscriber(port, offer):
    sock = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    head = (f"GET /ws HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if offer:
        head += f"Sec-WebSocket-Extensions: {offer}\r\n"
    sock.sendall((head + "\r\n").encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(4096)
    assert data.startswith(b"HTTP/1.1 101"), data[:80]
    assert (b"permessage-deflate" in data) == bool(offer), data
    payload = json.dumps({"op": "sub", "subject": "bench", "sid": "s", "ref": 1}).encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    sock.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + masked)
    sock.setblocking(False)
    return sock


def value(i):
    return {"host": f"web-{i % 16:02d}", "dc": "eu-west-1", "cpu": {"user": (i * 37) % 100 / 100,
            "system": (i * 11) % 100 / 100}, "mem": {"used": 1_000_000 + i * 17, "free": 3_000_000 - i},
            "net": {"rx": i * 1500, "tx": i * 900}, "disk": {"read": i * 4096, "write": i * 8192},
            "ts": 1_764_000_000 + i, "tags": ["prod", "web", "metrics"]}


def run(binary, mode, subs, values, batch=200):
    daemon = Daemon(binary, "max_pending_bytes = 1073741824\nsoft_pending_bytes = 1073741824\n"
                    "max_connections = 100000\nlog_level = \"notice\"\n", loops=1)
    try:
        sockets = [subscriber(daemon.http_port, MODES[mode]) for _ in range(subs)]
        time.sleep(0.5)
        received = [0]
        stop = threading.Event()
        selector = selectors.DefaultSelector()
        for sock in sockets:
            selector.register(sock, selectors.EVENT_READ)

        def drain():
            while not stop.is_set():
                for key, _ in selector.select(0.05):
                    try:
                        chunk = key.fileobj.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    received[0] += len(chunk)

        thread = threading.Thread(target=drain)
        thread.start()
        time.sleep(0.3)
        baseline = received[0]
        publisher = LineClient(daemon.port)
        lines = [json.dumps({"op": "pub", "subject": "bench", "value": value(i)}) for i in range(values)]
        start = cpu_seconds(daemon.process.pid)
        for index in range(0, values, batch):
            publisher.socket.sendall(("\n".join(lines[index:index + batch]) + "\n").encode())
            publisher.send({"op": "ping", "ref": index})
            while True:
                reply = publisher.line()
                if reply.get("ref") == index:
                    break
        delivered = values * subs
        # Every delivery's bytes have reached the subscribers when the count stops growing.
        last = -1
        while received[0] != last:
            last = received[0]
            time.sleep(0.3)
        cpu = cpu_seconds(daemon.process.pid) - start
        stop.set()
        thread.join()
        for sock in sockets:
            sock.close()
        publisher.close()
        return cpu * 1e9 / delivered, (received[0] - baseline) / delivered
    finally:
        daemon.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runneld", default=".build/release/runneld")
    parser.add_argument("--subs", type=int, default=100)
    parser.add_argument("--values", type=int, default=20000)
    parser.add_argument("--reps", type=int, default=3)
    arguments = parser.parse_args()
    results = {mode: [] for mode in MODES}
    for _ in range(arguments.reps):
        for mode in MODES:
            results[mode].append(run(arguments.runneld, mode, arguments.subs, arguments.values))
    print(f"{arguments.subs} subscribers x {arguments.values} values, medians of {arguments.reps}")
    print("| mode | server CPU ns / delivery | bytes / delivery |")
    print("|---|---|---|")
    for mode, rows in results.items():
        print(f"| {mode} | {statistics.median(r[0] for r in rows):.0f} | {statistics.median(r[1] for r in rows):.1f} |")


if __name__ == "__main__":
    main()
