#!/usr/bin/env python3
"""Soak: mixed load with connection churn against one runneld, for a given time.

    bench/soak/soak.py --port P --pid PID [--minutes 30] [--loadgen PATH]

Runs, all at once, until the time is up:
  - steady streams: publishers sending sequence-numbered values at a fixed rate to
    soak.steady.N, each read by a plain subscriber, one with a filter + map chain and a
    pattern subscriber (soak.steady.>); every subscriber checks that its sequence has no gap,
    no repeat and no reordering;
  - bursts: the C load generator (bench/loadgen) every 20 s, 10 subscribers, as fast as the
    server sustains, checking every delivery arrives;
  - churn: threads that connect, subscribe (plain, pattern, with stages, time stages among
    them), publish, sometimes send garbage or a line past nothing in particular, then close
    politely, abruptly (RST) or without reading;
  - a sampler: the server's RSS and `stats` every 10 s.
At the end: churn stops, and the server must come back to its baseline connections and
subscriptions. Prints RSS over time, totals and every error seen; exits 1 if any.
"""
import argparse
import json
import os
import random
import socket
import struct
import subprocess
import threading
import time

parser = argparse.ArgumentParser()
parser.add_argument("--port", type=int, required=True)
parser.add_argument("--pid", type=int, required=True)
parser.add_argument("--minutes", type=float, default=30)
parser.add_argument("--loadgen", default=".build/loadgen")
parser.add_argument("--streams", type=int, default=3)
parser.add_argument("--rate", type=float, default=2000, help="values/s per steady stream")
parser.add_argument("--churners", type=int, default=4)
args = parser.parse_args()

deadline = time.monotonic() + args.minutes * 60
stop = threading.Event()
lock = threading.Lock()
errors = []
counts = {"published": 0, "checked": 0, "churn_cycles": 0, "bursts": 0, "burst_deliveries": 0}


def error(text):
    with lock:
        errors.append(f"{time.strftime('%H:%M:%S')} {text}")
        print("ERROR", text, flush=True)


def count(key, n=1):
    with lock:
        counts[key] += n


def connect():
    s = socket.create_connection(("127.0.0.1", args.port), timeout=10)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


class Lines:
    """Reads newline-terminated JSON lines from a socket."""

    def __init__(self, sock):
        self.sock, self.buffer = sock, b""

    def next(self):
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                return None
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def request(sock, lines, body):
    sock.sendall((json.dumps(body) + "\n").encode())
    while True:
        reply = lines.next()
        if reply is None or "ok" in reply:
            return reply


def steady_subscriber(name, subject, ops, expect_stream):
    sock = connect()
    lines = Lines(sock)
    body = {"op": "sub", "subject": subject, "sid": name}
    if ops:
        body["ops"] = ops
    reply = request(sock, lines, body)
    if not reply or not reply.get("ok"):
        error(f"{name}: subscribe failed: {reply}")
        return
    last = {}
    sock.settimeout(1)
    while not stop.is_set():
        try:
            event = lines.next()
        except socket.timeout:
            continue
        if event is None:
            error(f"{name}: the server closed the connection")
            return
        if event.get("ev") != "next":
            error(f"{name}: unexpected event {event}")
            continue
        value = event["value"]
        stream, seq = (value["s"], value["n"]) if isinstance(value, dict) else value
        if expect_stream is not None and stream != expect_stream:
            error(f"{name}: value from stream {stream}")
        if stream in last and seq != last[stream] + 1:
            error(f"{name}: stream {stream} went from {last[stream]} to {seq}")
        last[stream] = seq
        count("checked")
    sock.close()


def steady_publisher(stream):
    sock = connect()
    interval, seq, next_at = 1 / args.rate, 0, time.monotonic()
    while not stop.is_set():
        batch = []
        now = time.monotonic()
        while next_at <= now:
            batch.append(json.dumps({"op": "pub", "subject": f"soak.steady.{stream}",
                                     "value": {"s": stream, "n": seq, "load": 0.95}}))
            seq += 1
            next_at += interval
        if batch:
            sock.sendall(("\n".join(batch) + "\n").encode())
            count("published", len(batch))
        time.sleep(0.005)
    sock.close()


CHURN_OPS = [
    None,
    [{"op": "filter", "expr": ".load > 0.5"}],
    [{"op": "map", "expr": "{\"n\": .n}"}, {"op": "take", "count": 50}],
    [{"op": "throttle", "seconds": 0.05}],
    [{"op": "bufferWithTime", "seconds": 0.1}],
    [{"op": "scan", "start": 0, "expr": "$acc + 1"}, {"op": "skip", "count": 3}],
    [{"op": "distinctUntilChanged"}, {"op": "delay", "seconds": 0.02}],
]


def churner(index):
    rng = random.Random(index)
    while not stop.is_set():
        try:
            sock = connect()
            lines = Lines(sock)
            subject = rng.choice([f"soak.steady.{rng.randrange(args.streams)}", "soak.steady.>",
                                  f"soak.temp.{index}.{rng.randrange(50)}"])
            body = {"op": "sub", "subject": subject}
            ops = rng.choice(CHURN_OPS)
            if ops:
                body["ops"] = ops
            reply = request(sock, lines, body)
            if not reply or not reply.get("ok"):
                error(f"churn {index}: sub {body} failed: {reply}")
            if subject.startswith("soak.temp"):
                for n in range(rng.randrange(1, 20)):
                    sock.sendall((json.dumps({"op": "pub", "subject": subject, "value": {"n": n, "load": 1}})
                                  + "\n").encode())
            ending = rng.randrange(5)
            if ending == 0:  # garbage: a bad_json error reply, and the connection goes on
                sock.sendall(b"{not json\n")
                reply = lines.next()
                while reply is not None and "ok" not in reply:
                    reply = lines.next()
                if not reply or reply.get("code") != "bad_json":
                    error(f"churn {index}: garbage answered with {reply}")
                reply = request(sock, lines, {"op": "ping", "ref": 1})
                if not reply or reply.get("ok") is not True:
                    error(f"churn {index}: ping after garbage: {reply}")
            elif ending == 1:  # abrupt: reset the connection
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            elif ending == 2:  # read a little first
                sock.settimeout(0.05)
                try:
                    sock.recv(4096)
                except socket.timeout:
                    pass
            sock.close()
            count("churn_cycles")
        except (OSError, ValueError) as failure:
            error(f"churn {index}: {failure!r}")
            time.sleep(0.1)


def bursts():
    n = 0
    while not stop.wait(20):
        n += 1
        run = subprocess.run([args.loadgen, "--proto", "runnel", "--port", str(args.port), "--subs", "10",
                              "--msgs", "100000", "--size", "64", "--subject", f"soak.burst.{n}"],
                             capture_output=True, text=True)
        fields = dict(kv.split("=", 1) for kv in run.stdout.split() if "=" in kv)
        if run.returncode != 0:
            error(f"burst {n}: loadgen exit {run.returncode}: {run.stdout.strip()} {run.stderr.strip()}")
        else:
            count("bursts")
            count("burst_deliveries", int(fields.get("delivered", 0)))


def rss_kb():
    with open(f"/proc/{args.pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def stats():
    sock = connect()
    reply = request(sock, Lines(sock), {"op": "stats"})
    sock.close()
    return reply


samples = []


def sampler():
    started = time.monotonic()
    while not stop.wait(10):
        try:
            s = stats()
            samples.append((time.monotonic() - started, rss_kb(), s))
        except OSError as failure:
            error(f"stats: {failure!r}")


baseline = stats()
threads = [threading.Thread(target=steady_publisher, args=(i,)) for i in range(args.streams)]
for i in range(args.streams):
    threads.append(threading.Thread(target=steady_subscriber, args=(f"plain{i}", f"soak.steady.{i}", None, i)))
    threads.append(threading.Thread(target=steady_subscriber, args=(
        f"chain{i}", f"soak.steady.{i}", [{"op": "filter", "expr": ".load > 0.9"},
                                          {"op": "map", "expr": "{\"s\": .s, \"n\": .n}"}], i)))
threads.append(threading.Thread(target=steady_subscriber, args=("pattern", "soak.steady.>", None, None)))
threads += [threading.Thread(target=churner, args=(i,)) for i in range(args.churners)]
threads += [threading.Thread(target=bursts), threading.Thread(target=sampler)]
time.sleep(0)
for t in threads:
    t.start()
while time.monotonic() < deadline:
    time.sleep(1)
stop.set()
for t in threads:
    t.join()

# Everything closed: the server must return to its baseline.
time.sleep(1)
final = stats()
for key in ("connections", "subscriptions", "timers"):
    # `final` is asked on a connection of its own, as `baseline` was.
    if final.get(key) != baseline.get(key):
        error(f"after the soak {key} = {final.get(key)}, before it {baseline.get(key)}")

print(f"\nRSS and server state over time (every minute; {len(samples)} samples taken every 10 s):")
print(f"{'min':>5} {'RSS MB':>8} {'conns':>6} {'subs':>6} {'subjects':>8} {'timers':>6} {'published':>11} {'delivered':>12}")
for at, kb, s in samples:
    if int(at) % 60 < 10:
        print(f"{at / 60:5.1f} {kb / 1024:8.1f} {s['connections']:>6} {s['subscriptions']:>6} {s['subjects']:>8} "
              f"{s['timers']:>6} {s['published']:>11} {s['delivered']:>12}")
print(f"\nfinal: RSS {rss_kb() / 1024:.1f} MB; stats {json.dumps(final)}")
print("totals:", json.dumps(counts))
print(f"errors: {len(errors)}")
for line in errors[:50]:
    print("  ", line)
raise SystemExit(1 if errors else 0)
