#!/usr/bin/env python3
"""A chart opening on 24 hours of history (#48): 86,400 values, one a second, kept by a durable
replay subject, downsampled to one point a minute on the server (`since` 24 h ago, then
`bufferWithTime 60` and a `map`, run in the values' own time), against what a client of
JetStream does for the same chart: replay the stream from the start (Debian's nats-server,
nats-py's ordered push consumer) and downsample the 86,400 messages itself.

    bench/history/chart.py --runneld .build/release/runneld [--runs 5] [--loops 1]

runneld's 24 hours are made by runneld itself (86,400 publishes to a durable subject), then its
journal's publish times set one second apart ending now, since no server lets a client backdate
a publish; JetStream's stream holds the same 86,400 values, stored now. Each run opens a new
connection and times from sending the request to the last history point (runneld: the 1,440th
`next`; JetStream: the last message, bucketed into 1,440 points as it comes). Prints each
side's median and the ratio. Installs nats-py from PyPI when missing; starts both servers on
loopback and stops them. Not part of CI.
"""

import argparse
import asyncio
import json
import os
import shutil
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

POINTS = 86_400
WINDOW = 60


def fill(port):
    """Subject `chart` made durable and given 86,400 values through runneld itself."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        reader = client.makefile("rb")
        client.sendall(json.dumps({"op": "create", "subject": "chart", "kind": "replay", "capacity": POINTS,
                                   "durable": True, "retain_s": POINTS + 60}).encode() + b"\n")
        assert json.loads(reader.readline())["ok"]
        for start in range(1, POINTS + 1, 1000):
            client.sendall(b"".join(json.dumps({"op": "pub", "subject": "chart", "value": {"v": seq % 100}}).encode()
                                    + b"\n" for seq in range(start, min(start + 1000, POINTS + 1))))
        client.sendall(b'{"op":"ping"}\n')
        assert json.loads(reader.readline())["ok"]


def backdate(directory, now_ms):
    """Gives the journal's values publish times one second apart, the last one now (no server
    lets a client backdate a publish): the `ts` column docs/protocol.md's journal keeps."""
    db = sqlite3.connect(os.path.join(directory, "runnel.db"))
    db.execute("UPDATE vals SET ts = ? - (? - seq) * 1000", (now_ms, POINTS))
    db.commit()
    db.close()


def started(server, port):
    """`server` once it accepts connections on `port`."""
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port)).close()
            return server
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def start_runneld(binary, work, port, loops):
    return started(subprocess.Popen([binary, "--config", f"{work}/runneld.toml", "--listen", f"127.0.0.1:{port}",
                                     "--http-listen", "", "--loops", str(loops), "--log-level", "warning"]), port)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def runneld_run(port, since):
    """Seconds from the `sub` to its 1,440th point, on a new connection."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        reader = client.makefile("rb")
        request = {"op": "sub", "subject": "chart", "sid": "c", "since": since,
                   "ops": [{"op": "bufferWithTime", "seconds": WINDOW}, {"op": "map", "expr": ".[len(.) - 1].v"}]}
        start = time.perf_counter()
        client.sendall(json.dumps(request).encode() + b"\n")
        points = 0
        while points < POINTS // WINDOW:
            line = json.loads(reader.readline())
            if line.get("ev") == "next":
                points += 1
            elif "ok" in line and not line["ok"]:
                raise RuntimeError(line)
        return time.perf_counter() - start


async def jetstream_run(nats):
    """Seconds from subscribing to the stream's last message, bucketed into points on arrival."""
    connection = await nats.connect("nats://127.0.0.1:" + os.environ["BENCH_NATS_PORT"])
    stream = connection.jetstream()
    done = asyncio.Event()
    points = []

    async def handle(message):
        seq = message.metadata.sequence.stream
        value = json.loads(message.data)["v"]
        if seq % WINDOW == 0:
            points.append(value)
        if seq == POINTS:
            done.set()

    start = time.perf_counter()
    subscription = await stream.subscribe("chart", ordered_consumer=True, cb=handle)
    await done.wait()
    elapsed = time.perf_counter() - start
    await subscription.unsubscribe()
    await connection.close()
    assert len(points) == POINTS // WINDOW, len(points)
    return elapsed


async def jetstream_fill(nats):
    connection = await nats.connect("nats://127.0.0.1:" + os.environ["BENCH_NATS_PORT"])
    stream = connection.jetstream()
    await stream.add_stream(name="CHART", subjects=["chart"])
    pending = []
    for seq in range(1, POINTS + 1):
        pending.append(await stream.publish_async("chart", json.dumps({"v": seq % 100}).encode()))
        if len(pending) >= 1000:
            await asyncio.gather(*pending)
            pending = []
    await asyncio.gather(*pending)
    await connection.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runneld", required=True)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--loops", type=int, default=1)
    options = parser.parse_args()
    try:
        import nats
    except ImportError:
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "nats-py"], check=True)
        import nats
    work = tempfile.mkdtemp(prefix="chart-bench-")
    servers = []
    try:
        with open(os.path.join(work, "runneld.toml"), "w") as config:
            config.write(f'data_dir = "{work}/data"\nmax_retained_bytes = 1073741824\n'
                         f"max_replay_bytes = 1073741824\nmax_buffer_values = {POINTS}\n")
        port = free_port()
        filling = start_runneld(options.runneld, work, port, options.loops)
        fill(port)
        filling.terminate()
        assert filling.wait() == 0
        now_ms = int(time.time() * 1000)
        backdate(os.path.join(work, "data"), now_ms)
        servers.append(start_runneld(options.runneld, work, port, options.loops))
        nats_port = free_port()
        os.environ["BENCH_NATS_PORT"] = str(nats_port)
        servers.append(started(subprocess.Popen(["nats-server", "-js", "-sd", f"{work}/js", "-a", "127.0.0.1", "-p",
                                                 str(nats_port)], stderr=subprocess.DEVNULL), nats_port))
        asyncio.run(jetstream_fill(nats))
        since = now_ms - POINTS * 1000 + 1
        runneld_times = [runneld_run(port, since) for _ in range(options.runs)]
        jetstream_times = [asyncio.run(jetstream_run(nats)) for _ in range(options.runs)]
        ours, theirs = statistics.median(runneld_times), statistics.median(jetstream_times)
        print(f"runneld --loops {options.loops}: 1,440 points from 86,400 values, median {ours * 1000:.1f} ms "
              f"(runs: {', '.join(f'{t * 1000:.1f}' for t in runneld_times)})")
        print(f"JetStream: 86,400 messages bucketed by the client, median {theirs * 1000:.1f} ms "
              f"(runs: {', '.join(f'{t * 1000:.1f}' for t in jetstream_times)})")
        print(f"ratio (JetStream / runneld): {theirs / ours:.2f}x")
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
