#!/usr/bin/env python3
"""Server CPU and bytes on the wire per WebSocket delivery, with and without permessage-deflate,
runneld against nats-server in one run.

    bench/websocket/deflate.py --runneld .build/release/runneld [--subs K] [--values N] [--reps R]
                               [--batch B] [--modes MODE,...]

1 publisher -> K WebSocket subscribers on one subject, for runneld (one loop) and nats-server
(Debian's, 2.9.10; installed with apt-get when missing) with `websocket { no_tls: true,
compression: true }`, each started here on free loopback ports and stopped at the end of its
run. The K subscribers are raw WebSockets, each offering its mode's Sec-WebSocket-Extensions,
read by one thread (a selector) as the bytes come, without parsing them; runneld's speak its
JSON lines (`sub`), nats-server's the NATS protocol (CONNECT, SUB, PING, written with the
WebSocket framing here), and each waits for its server's answer before the run starts. One
publisher over the server's own TCP protocol sends N dashboard-like JSON values (a metrics
object of about 250 bytes, its numbers varying) in batches of B (200 by default), each batch
paced by a `ping` / `PING` so the subscribers keep up. With B = 1 each value is sent alone, as
a dashboard's stream trickles: a server that writes what it has queued as one WebSocket frame
(nats-server does) then has one value a frame to compress, where a batch gives it many.
Measured from the first publish until every subscriber has stopped receiving: the server's
CPU time (user + system of all its threads, /proc/PID/stat) and the bytes the subscribers'
sockets received (what `recv` returned: frame heads and payloads, compressed or not, NATS's
`MSG` lines included), each divided by N x K deliveries. Modes:

    runnel-plain     no offer: uncompressed frames
    runnel-takeover  `permessage-deflate`: each connection's deflater, window kept between messages
    runnel-shared    `permessage-deflate; server_no_context_takeover`: each value compressed once
                     for all subscribers
    nats-plain       no offer
    nats-deflate     `permessage-deflate` (nats-server's answer is printed)

Prints one row per mode (medians over R repetitions, modes interleaved) and the ratios of each
runneld mode to NATS: bytes and CPU against nats-deflate, and runnel-plain against nats-plain.
A subscriber that lost its connection, or values not all delivered (each subscriber counts the
values' `"ts"` markers it received in plain modes), fails the run. Not part of CI.
"""

import argparse
import base64
import json
import os
import selectors
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import zlib

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "Tests", "blackbox"))
from runneld_process import Daemon, LineClient  # noqa: E402

DEFLATE = "permessage-deflate"
MODES = {"runnel-plain": None, "runnel-takeover": DEFLATE,
         "runnel-shared": DEFLATE + "; server_no_context_takeover",
         "nats-plain": None, "nats-deflate": DEFLATE}


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def masked_frame(payload):
    """One masked text frame from a client."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + n.to_bytes(2, "big"))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


class Subscriber:
    """A raw WebSocket: the handshake with `offer`, then frames read until an answer holding
    `ready` (inflated when compressed) comes; afterwards its socket is read without parsing."""

    def __init__(self, port, path, offer, requests, ready):
        self.socket = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        head = (f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
        if offer:
            head += f"Sec-WebSocket-Extensions: {offer}\r\n"
        self.socket.sendall((head + "\r\n").encode())
        data = b""
        while b"\r\n\r\n" not in data:
            data += self.socket.recv(4096)
        answer, self.buffer = data.split(b"\r\n\r\n", 1)
        assert answer.startswith(b"HTTP/1.1 101"), answer[:80]
        self.extensions = None
        for line in answer.decode("latin-1").split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name.strip().lower() == "sec-websocket-extensions":
                self.extensions = value.strip()
        assert (self.extensions is not None) == bool(offer), (offer, self.extensions)
        self.inflater = zlib.decompressobj(-15)
        self.socket.sendall(b"".join(masked_frame(request) for request in requests))
        received = b""
        while ready not in received:
            received += self.message()
        self.socket.setblocking(False)

    def _take(self, count):
        while len(self.buffer) < count:
            chunk = self.socket.recv(65536)
            assert chunk, "the server closed a subscriber during its setup"
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def message(self):
        """The next data frame's payload, inflated (with a fresh window when the server keeps none)."""
        first, second = self._take(2)
        length = second & 0x7F
        if length >= 126:
            length = int.from_bytes(self._take(2 if length == 126 else 8), "big")
        payload = self._take(length)
        if first & 0x0F >= 8:
            return b""
        if first & 0x40:
            if "server_no_context_takeover" in (self.extensions or ""):
                self.inflater = zlib.decompressobj(-15)
            payload = self.inflater.decompress(payload + b"\x00\x00\xff\xff")
        return payload


def value(i):
    return {"host": f"web-{i % 16:02d}", "dc": "eu-west-1", "cpu": {"user": (i * 37) % 100 / 100,
            "system": (i * 11) % 100 / 100}, "mem": {"used": 1_000_000 + i * 17, "free": 3_000_000 - i},
            "net": {"rx": i * 1500, "tx": i * 900}, "disk": {"read": i * 4096, "write": i * 8192},
            "ts": 1_764_000_000 + i, "tags": ["prod", "web", "metrics"]}


class Runnel:
    """A runneld of its own (one loop), its subscribers and its publisher."""

    name = "runneld"

    def __init__(self, binary):
        self.daemon = Daemon(binary, "max_pending_bytes = 1073741824\nsoft_pending_bytes = 1073741824\n"
                             "max_connections = 100000\nlog_level = \"notice\"\n", loops=1)
        self.pid = self.daemon.process.pid
        self.publisher = None

    def subscriber(self, offer):
        request = json.dumps({"op": "sub", "subject": "bench", "sid": "s", "ref": 1}).encode()
        return Subscriber(self.daemon.http_port, "/ws", offer, [request], b'"ref":1')

    def publish(self, values):
        if self.publisher is None:
            self.publisher = LineClient(self.daemon.port)
        lines = [json.dumps({"op": "pub", "subject": "bench", "value": v}) for v in values]
        self.publisher.socket.sendall(("\n".join(lines) + "\n").encode())
        self.publisher.send({"op": "ping", "ref": 7})
        while self.publisher.line().get("ref") != 7:
            pass

    def stop(self):
        if self.publisher is not None:
            self.publisher.close()
        assert self.daemon.stop() == 0


class Nats:
    """A nats-server of its own on loopback: its client port for the publisher, its WebSocket
    listener (compression allowed) for the subscribers."""

    name = "nats-server"

    def __init__(self):
        self.directory = tempfile.mkdtemp(prefix="nats-bench-")
        self.port, self.ws_port = free_port(), free_port()
        config = os.path.join(self.directory, "nats.conf")
        with open(config, "w") as file:
            file.write(f"host: 127.0.0.1\nport: {self.port}\n"
                       f"websocket {{ host: 127.0.0.1, port: {self.ws_port}, no_tls: true, compression: true }}\n")
        self.process = subprocess.Popen(["nats-server", "-c", config], stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        self.pid = self.process.pid
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.ws_port)).close()
                socket.create_connection(("127.0.0.1", self.port)).close()
                break
            except OSError:
                assert time.monotonic() < deadline and self.process.poll() is None, "nats-server did not start"
                time.sleep(0.05)
        self.publisher = None

    def subscriber(self, offer):
        requests = [b'CONNECT {"verbose":false,"pedantic":false,"protocol":1}\r\n', b"SUB bench 1\r\n", b"PING\r\n"]
        return Subscriber(self.ws_port, "/", offer, requests, b"PONG")

    def publish(self, values):
        if self.publisher is None:
            self.publisher = socket.create_connection(("127.0.0.1", self.port))
            self.reader = self.publisher.makefile("rb")
            assert self.reader.readline().startswith(b"INFO"), "no INFO from nats-server"
            self.publisher.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
        lines = []
        for v in values:
            payload = json.dumps(v).encode()
            lines.append(b"PUB bench %d\r\n%s\r\n" % (len(payload), payload))
        self.publisher.sendall(b"".join(lines) + b"PING\r\n")
        while True:
            line = self.reader.readline()
            assert line, "nats-server closed the publisher"
            assert not line.startswith(b"-ERR"), line
            if line.startswith(b"PONG"):
                return

    def stop(self):
        if self.publisher is not None:
            self.reader.close()
            self.publisher.close()
        self.process.terminate()
        self.process.wait(timeout=10)
        shutil.rmtree(self.directory, ignore_errors=True)


def run(binary, mode, subs, values, batch):
    """One run of `mode`: (CPU ns per delivery, bytes per delivery, the server's extension answer)."""
    server = Nats() if mode.startswith("nats") else Runnel(binary)
    try:
        subscribers = [server.subscriber(MODES[mode]) for _ in range(subs)]
        received = [0] * subs
        markers = [0] * subs
        closed = []
        stop = threading.Event()
        selector = selectors.DefaultSelector()
        for index, subscriber in enumerate(subscribers):
            selector.register(subscriber.socket, selectors.EVENT_READ, index)
        counts_markers = MODES[mode] is None

        def drain():
            # The text before a chunk's end is kept so a marker cut by it is counted once.
            carry = [b""] * subs
            while not stop.is_set():
                for key, _ in selector.select(0.05):
                    try:
                        chunk = key.fileobj.recv(1 << 20)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        closed.append(key.data)
                        selector.unregister(key.fileobj)
                        continue
                    received[key.data] += len(chunk)
                    if counts_markers:
                        text = carry[key.data] + chunk
                        markers[key.data] += text.count(b'"ts": ')
                        carry[key.data] = text[-6:]
                        markers[key.data] -= carry[key.data].count(b'"ts": ')

        thread = threading.Thread(target=drain)
        thread.start()
        time.sleep(0.3)
        baseline = list(received)
        start = cpu_seconds(server.pid)
        for index in range(0, values, batch):
            server.publish([value(i) for i in range(index, min(values, index + batch))])
        # Every delivery's bytes have reached the subscribers when the count stops growing.
        last = -1
        while sum(received) != last:
            last = sum(received)
            time.sleep(0.3)
        cpu = cpu_seconds(server.pid) - start
        stop.set()
        thread.join()
        assert not closed, f"{mode}: {len(closed)} subscribers lost their connection"
        if counts_markers:
            short = [count for count in markers if count != values]
            assert not short, f"{mode}: subscribers got {short[:5]} of {values} values"
        for subscriber in subscribers:
            subscriber.socket.close()
        delivered = values * subs
        return cpu * 1e9 / delivered, (sum(received) - sum(baseline)) / delivered, subscribers[0].extensions
    finally:
        server.stop()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runneld", default=".build/release/runneld")
    parser.add_argument("--subs", type=int, default=100)
    parser.add_argument("--values", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--batch", type=int, default=200, help="values published between two pings")
    parser.add_argument("--modes", default=",".join(MODES), help="a comma-separated subset of " + ", ".join(MODES))
    arguments = parser.parse_args()
    modes = arguments.modes.split(",")
    assert all(mode in MODES for mode in modes), modes
    if any(mode.startswith("nats") for mode in modes) and not shutil.which("nats-server"):
        subprocess.run(["apt-get", "install", "-y", "-qq", "nats-server"], check=True,
                       env=dict(os.environ, DEBIAN_FRONTEND="noninteractive"))
    results = {mode: [] for mode in modes}
    answers = {}
    for _ in range(arguments.reps):
        for mode in modes:
            cpu, size, answers[mode] = run(arguments.runneld, mode, arguments.subs, arguments.values, arguments.batch)
            results[mode].append((cpu, size))
            print(f"  {mode:16} {cpu:8.0f} ns  {size:7.1f} B", file=sys.stderr, flush=True)
    version = subprocess.run(["nats-server", "--version"], capture_output=True, text=True).stdout.strip()
    print(f"1 publisher -> {arguments.subs} WebSocket subscribers x {arguments.values} values "
          f"(~{len(json.dumps(value(4321)))} B of JSON) in batches of {arguments.batch}, medians of {arguments.reps}; "
          f"{version}")
    print("| mode | Sec-WebSocket-Extensions answered | server CPU ns / delivery | bytes / delivery |")
    print("|---|---|---|---|")
    median = {}
    for mode, rows in results.items():
        median[mode] = (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows))
        print(f"| {mode} | {answers[mode] or '(none)'} | {median[mode][0]:,.0f} | {median[mode][1]:.1f} |")
    for mode, peer in [("runnel-plain", "nats-plain"), ("runnel-takeover", "nats-deflate"),
                       ("runnel-shared", "nats-deflate")]:
        if mode in median and peer in median:
            print(f"{mode} / {peer}: bytes x{median[mode][1] / median[peer][1]:.2f}, "
                  f"CPU x{median[mode][0] / median[peer][0]:.2f}")


if __name__ == "__main__":
    main()
