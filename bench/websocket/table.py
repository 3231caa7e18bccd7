#!/usr/bin/env python3
"""Prints run.sh's results as one table: WebSocket and TCP fan-out medians per cell with
runnel-ws's ratios, then the SSE runs.

Input: one tab-separated line per loadgen run: part (ws | sse), server, K, B, repetition, and
loadgen's key=value output (for sse also idle_rss_kb= and rate=); or `note` lines. A run that
lost deliveries is counted as failed and shown.
"""
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)  # (part, server, k, b) -> [dict]
notes = []
for line in open(sys.argv[1]):
    cols = line.rstrip("\n").split("\t")
    if cols[0] == "note":
        notes.append(cols[2])
        continue
    part, server, k, b, _rep, fields = (cols + [""] * 6)[:6]
    values = dict(kv.split("=", 1) for kv in fields.split() if "=" in kv)
    ok = "delivered" in values and values.get("delivered") == values.get("expected")
    runs[(part, server, int(k), int(b))].append({**values, "ok": ok})


def median(key, *run):
    good = [float(r[key]) for r in runs[run] if r["ok"] and key in r]
    return statistics.median(good) if good else None


def cpu_ns(*run):
    """Server CPU time per delivered message (median)."""
    per = [float(r["server_cpu_s"]) * 1e9 / float(r["delivered"]) for r in runs[run]
           if r["ok"] and float(r.get("server_cpu_s", 0)) > 0]
    return statistics.median(per) if per else None


def failed(*run):
    return sum(1 for r in runs[run] if not r["ok"])


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


servers = [s for s in ("runnel-ws", "nats-ws", "runnel-tcp", "nats-tcp") if any(key[1] == s for key in runs)]
cells = sorted({(k, b) for (part, _, k, b) in runs if part == "ws"}, key=lambda c: (c[1], c[0]))
print()
for note in notes:
    print(f"note: {note}")
if cells:
    print("1 publisher -> K subscribers, as fast as sustained: delivered msgs/s (median), server CPU ns per delivery")
    header = f"{'K':>4} {'B':>5}  " + "  ".join(f"{s:>17}" for s in servers) + \
        f"  {'ws/nats-ws':>10} {'ws/rn-tcp':>9}  note"
    print(header)
    print("-" * len(header))
    for k, b in cells:
        row = []
        lost = []
        for s in servers:
            rate, cpu = median("msgs_per_s", "ws", s, k, b), cpu_ns("ws", s, k, b)
            row.append(f"{fmt(rate, ',.0f'):>11} {fmt(cpu, '4.0f'):>4}ns")
            if failed("ws", s, k, b):
                lost.append(f"{s}: {failed('ws', s, k, b)} run(s) lost messages")
        ours = median("msgs_per_s", "ws", "runnel-ws", k, b)
        nats = median("msgs_per_s", "ws", "nats-ws", k, b)
        tcp = median("msgs_per_s", "ws", "runnel-tcp", k, b)
        r1 = f"x{ours / nats:.2f}" if ours and nats else "-"
        r2 = f"x{ours / tcp:.2f}" if ours and tcp else "-"
        print(f"{k:>4} {b:>5}  " + "  ".join(row) + f"  {r1:>10} {r2:>9}  {'; '.join(lost)}")
    print()

for (part, server, k, b), rs in sorted(runs.items()):
    if part != "sse":
        continue
    rate = rs[0].get("rate", "?")
    good = [r for r in rs if r["ok"]]
    loops = f" on {server[4:]} loop(s)" if server.startswith("sse-") else ""
    print(f"SSE{loops}: {k:,} subscribers on one subject, {rate} values/s of {b} B over TCP "
          f"({k * int(rate):,} deliveries/s offered), {len(rs)} run(s), medians"
          + (f"; {len(rs) - len(good)} run(s) lost messages" if len(good) < len(rs) else ""))
    header = f"{'delivered/s':>12} {'p50 us':>8} {'p99 us':>8} {'p99.9 us':>9} {'idle RSS':>9} {'peak RSS':>9} " \
             f"{'server CPU':>10} {'client CPU':>10}"
    print(header)
    print("-" * len(header))
    m = {key: median(key, part, server, k, b) for key in
         ("msgs_per_s", "p50_us", "p99_us", "p999_us", "idle_rss_kb", "peak_rss_kb", "server_cpu_s", "reader_cpu_s",
          "seconds")}
    secs = m["seconds"]
    share = (lambda v: f"{v / secs * 100:.0f}%" if v is not None and secs else "-")
    print(f"{fmt(m['msgs_per_s'], '12,.0f')} {fmt(m['p50_us'], '8.0f')} {fmt(m['p99_us'], '8.0f')} "
          f"{fmt(m['p999_us'], '9.0f')} {fmt(m['idle_rss_kb'] and m['idle_rss_kb'] / 1024, '6.1f')} MB "
          f"{fmt(m['peak_rss_kb'] and m['peak_rss_kb'] / 1024, '6.1f')} MB {share(m['server_cpu_s']):>10} "
          f"{share(m['reader_cpu_s']):>10}")
    print("(CPU: share of one core over the run, server = runneld, client = loadgen's receive thread)")
    print()
