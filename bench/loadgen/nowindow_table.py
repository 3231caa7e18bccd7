#!/usr/bin/env python3
"""Prints nowindow.sh's results as one table: per cell and server, the median delivered msgs/s,
deliveries against those expected over all runs, and per run what was lost and how many
subscribers the server disconnected; then runnel+backpressure's msgs/s against Redis's.

Input: one tab-separated line per loadgen run: server (runnel, baseline, backpressure, redis,
nats), K, B, repetition, and loadgen's key=value output (empty when loadgen failed outright).
"""
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)  # (server, k, b) -> [dict], in repetition order
for line in open(sys.argv[1]):
    server, k, b, _rep, fields = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
    runs[(server, int(k), int(b))].append(dict(kv.split("=", 1) for kv in fields.split() if "=" in kv))

names = {
    "runnel": "runnel",
    "baseline": "runnel (baseline)",
    "backpressure": "runnel+backpressure",
    "redis": "redis",
    "nats": "nats",
}
servers = [s for s in names if any(key[0] == s for key in runs)]
cells = sorted({(k, b) for (_, k, b) in runs}, key=lambda c: (c[1], c[0]))


def per_run(values, key):
    """One figure per run, "a/b/c"; "?" for a run loadgen reported nothing for."""
    return "/".join(v.get(key, "?") for v in values)


def median_rate(server, k, b):
    rates = [float(v["msgs_per_s"]) for v in runs[(server, k, b)] if "msgs_per_s" in v]
    return statistics.median(rates) if rates else None


print()
print("no publish window: delivered msgs/s (median); delivered of expected (all runs); per run: lost,")
print("subscribers disconnected, runs that stalled (no progress for 5 s)")
header = f"{'K':>4} {'B':>5}  {'server':<19} {'msgs/s':>11} {'delivered':>25}  {'lost per run':<26} {'disconnects':<11} stalled"
print(header)
print("-" * len(header))
for k, b in cells:
    for server in servers:
        values = runs[(server, k, b)]
        if not values:
            continue
        delivered = sum(int(v.get("delivered", 0)) for v in values)
        expected = sum(int(v.get("expected", 0)) for v in values)
        rate = median_rate(server, k, b)
        rate_text = "-" if rate is None else f"{rate:,.0f}"
        print(f"{k:>4} {b:>5}  {names[server]:<19} {rate_text:>11} {delivered:>12,} of {expected:>10,}  "
              f"{per_run(values, 'lost'):<26} {per_run(values, 'disconnects'):<11} {per_run(values, 'stalled')}")
    theirs = median_rate("redis", k, b)
    for ours_name in ("runnel", "backpressure"):
        ours, values = median_rate(ours_name, k, b), runs[(ours_name, k, b)]
        if not (ours and theirs):
            continue
        if any("lost" not in v for v in values):
            verdict = "a run reported nothing"
        else:
            lost = sum(int(v["lost"]) for v in values)
            verdict = "lost nothing" if lost == 0 else f"lost {lost:,} in all"
        print(f"{'':>11} {names[ours_name]} / redis: msgs/s x{ours / theirs:.2f} ({ours:,.0f} vs {theirs:,.0f}); "
              f"{names[ours_name]} {verdict}")
    print()
