#!/usr/bin/env python3
"""A conflating map reader that lags (#47): a map of --keys keys written at --rate writes a
second for --seconds, one subscriber with `conflate: true` reading 1% of what the writer
sends (a small receive buffer, drained a little every tenth of a second), and runneld's
resident memory sampled the whole time. The same run without the slow reader gives the
baseline: what the reader costs is the difference of the two runs' peaks. At the end the
reader drains everything and its table is compared with the map's: every key's last value
must be there.

    bench/map/conflate.py --runneld .build/release/runneld [--keys 1000] [--rate 20000]
                          [--seconds 60]

Prints both peaks, their difference against the issue's 1 MB, the values the reader got of
those written, the `dropped` counts it was told, and whether its table matched. Peers give
conflation per channel (Ably) or none (../shared/research/dashboards.md); the bound is the
comparison. Starts runneld on loopback and stops it. Not part of CI.
"""

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "history"))
from chart import free_port, started  # noqa: E402
from snapshot import pub, request_all, rss_bytes  # noqa: E402

BOUND_BYTES = 1 << 20


def write(port, keys, rate, seconds, last):
    """Writes `rate` values a second, key after key, for `seconds`; `last` gets each key's."""
    with socket.create_connection(("127.0.0.1", port)) as client:
        reader = client.makefile("rb")
        start = time.monotonic()
        sent = 0
        batch = max(1, rate // 10)
        while time.monotonic() - start < seconds:
            lines = []
            for _ in range(batch):
                key = sent % keys
                last[key] = sent
                lines.append(b'{"op":"pub","subject":"m","key":"k%d","value":%d}\n' % (key, sent))
                sent += 1
            client.sendall(b"".join(lines) + b'{"op":"ping","ref":1}\n')
            while b'"ref":1' not in reader.readline():
                pass
            ahead = sent / rate - (time.monotonic() - start)
            if ahead > 0:
                time.sleep(ahead)
        return sent


def run(binary, keys, rate, seconds, slow):
    """One run: the peak RSS, and with `slow`, what the reader got and whether it matched."""
    port = free_port()
    with tempfile.TemporaryDirectory() as work:
        config = os.path.join(work, "runneld.toml")
        with open(config, "w") as file:
            # The default grace (10 s): a reader of 1% leaves runneld's socket buffer full for
            # long stretches, but what it acknowledges tells it reads.
            file.write("soft_pending_bytes = 65536\n")
        server = started(subprocess.Popen([binary, "--config", config, "--listen", f"127.0.0.1:{port}",
                                           "--http-listen", "", "--log-level", "warning"]), port)
        try:
            request_all(port, [b'{"op":"create","subject":"m","kind":"map"}\n'])
            request_all(port, [pub(key) for key in range(keys)])
            reader = None
            if slow:
                reader = socket.socket()
                reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
                reader.connect(("127.0.0.1", port))
                reader.sendall(b'{"op":"sub","subject":"m","sid":"s","conflate":true}\n')
            last = {}
            peak = [rss_bytes(server.pid)]
            done = threading.Event()

            def sample():
                while not done.is_set():
                    peak[0] = max(peak[0], rss_bytes(server.pid))
                    time.sleep(0.05)

            threading.Thread(target=sample, daemon=True).start()
            got = bytearray()
            writer = threading.Thread(target=lambda: last.update(sent=write(port, keys, rate, seconds, last)))
            writer.start()
            # About 1% of the writer's bytes a second: ~40-byte lines.
            share = max(64, rate * 40 // 100 // 10)
            while writer.is_alive():
                if reader:
                    reader.setblocking(False)
                    try:
                        got += reader.recv(share)
                    except BlockingIOError:
                        pass
                time.sleep(0.1)
            done.set()
            result = {"peak": peak[0], "sent": last.pop("sent")}
            if reader:
                reader.setblocking(True)
                reader.settimeout(2)
                closed = False
                while True:
                    try:
                        chunk = reader.recv(1 << 20)
                    except socket.timeout:
                        break
                    if not chunk:
                        closed = True
                        break
                    got += chunk
                table, nexts, dropped = {}, 0, 0
                for line in got.splitlines():
                    try:
                        event = json.loads(line)
                    except ValueError:
                        raise SystemExit(f"the reader's stream was cut (closed: {closed}): {bytes(line[:80])}")
                    if event.get("ev") == "next":
                        table[event["key"]] = event["value"]
                        nexts += 1
                    elif event.get("ev") == "dropped":
                        dropped += event["count"]
                expected = {"k%d" % key: value for key, value in last.items()}
                result.update(nexts=nexts, dropped=dropped, matched=all(table.get(k) == v for k, v in expected.items()))
                reader.close()
            return result
        finally:
            server.terminate()
            server.wait()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runneld", required=True)
    parser.add_argument("--keys", type=int, default=1000)
    parser.add_argument("--rate", type=int, default=20_000)
    parser.add_argument("--seconds", type=int, default=60)
    args = parser.parse_args()
    base = run(args.runneld, args.keys, args.rate, args.seconds, slow=False)
    slow = run(args.runneld, args.keys, args.rate, args.seconds, slow=True)
    cost = slow["peak"] - base["peak"]
    print(f"{args.keys} keys, {args.rate:,} writes/s for {args.seconds} s ({slow['sent']:,} written)")
    print(f"peak RSS without the reader {base['peak'] / 2**20:.1f} MiB, with it {slow['peak'] / 2**20:.1f} MiB: "
          f"the reader costs {cost / 2**10:.0f} KiB (bound {BOUND_BYTES / 2**10:.0f} KiB)")
    print(f"the reader got {slow['nexts']:,} values and dropped events counting {slow['dropped']:,}; "
          f"every key's last value: {'yes' if slow['matched'] else 'NO'}")


if __name__ == "__main__":
    main()
