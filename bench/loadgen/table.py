#!/usr/bin/env python3
"""Prints compare.sh's results as one table: medians per server and cell, and Runnel's ratios.

Input: one tab-separated line per loadgen run: server (runnel, stages, backpressure, baseline, loops1,
redis, nats), K, B, mode (max | half | atredis | atrunnel: at half of that server's maximum),
repetition, and loadgen's key=value output. runnel+backpressure gets ratios to Redis as runnel
does. A run that lost deliveries is counted as failed and shown.
"""
import statistics
import sys
from collections import defaultdict

runs = defaultdict(list)  # (server, k, b, mode) -> [dict]
for line in open(sys.argv[1]):
    server, k, b, mode, _rep, fields = (line.rstrip("\n").split("\t") + [""] * 6)[:6]
    values = dict(kv.split("=", 1) for kv in fields.split() if "=" in kv)
    ok = values and values.get("delivered") == values.get("expected")
    runs[(server, int(k), int(b), mode)].append({**values, "ok": ok})


def median(key, server, k, b, mode):
    good = [float(r[key]) for r in runs[(server, k, b, mode)] if r["ok"] and key in r]
    return statistics.median(good) if good else None


def cpu_ns(server, k, b):
    """Server CPU time per delivered message in the as-fast-as-possible runs (median)."""
    per = [float(r["server_cpu_s"]) * 1e9 / float(r["delivered"]) for r in runs[(server, k, b, "max")]
           if r["ok"] and float(r.get("server_cpu_s", 0)) > 0]
    return statistics.median(per) if per else None


def failed(server, k, b, mode):
    return sum(1 for r in runs[(server, k, b, mode)] if not r["ok"])


def peak_mb(server, k, b):
    kb = [int(r.get("peak_rss_kb", 0)) for mode in ("max", "half") for r in runs[(server, k, b, mode)]]
    return max(kb) / 1024 if kb else None


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


servers = [s for s in ("runnel", "stages", "backpressure", "baseline", "loops1", "redis", "nats")
           if any(key[0] == s for key in runs)]
names = {"runnel": "runnel", "stages": "runnel+filter+map", "backpressure": "runnel+backpressure",
         "baseline": "runnel (baseline)", "loops1": "runnel (1 loop)", "redis": "redis", "nats": "nats"}
cells = sorted({(k, b) for (_, k, b, _) in runs}, key=lambda c: (c[1], c[0]))

header = f"{'K':>4} {'B':>5}  {'server':<19} {'msgs/s':>10} {'p50 us':>7} {'p99 us':>7} {'p99.9 us':>8} {'peak RSS':>9} {'CPU ns/msg':>10}  note"
print()
same_rate = sys.argv[2:] == ["--same-rate"]
where = (
    "at half of Redis's maximum, the same rate for every server (filter+map: half of its own)"
    if same_rate
    else "at half of that server's maximum"
)
print(f"delivered msgs/s: as fast as sustained (median); latency: {where};")
print("CPU ns/msg: the server's CPU time (user + system) per delivered message at full speed")
print(header)
print("-" * len(header))
for k, b in cells:
    for server in servers:
        rate = median("msgs_per_s", server, k, b, "max")
        p50, p99, p999 = (median(q, server, k, b, "half") for q in ("p50_us", "p99_us", "p999_us"))
        lost = failed(server, k, b, "max") + failed(server, k, b, "half")
        note = f"{lost} run(s) lost messages" if lost else ""
        rss = peak_mb(server, k, b)
        print(f"{k:>4} {b:>5}  {names[server]:<19} {fmt(rate, '10,.0f')} {fmt(p50, '7.0f')} {fmt(p99, '7.0f')} "
              f"{fmt(p999, '8.0f')} {fmt(rss, '7.1f')} MB {fmt(cpu_ns(server, k, b), '10.0f')}  {note}")
    # Runnel's ratios to each peer, and runnel+backpressure's to Redis.
    for ours_name, peers in (("runnel", ("redis", "nats", "baseline", "loops1")), ("backpressure", ("redis",))):
        ours = median("msgs_per_s", ours_name, k, b, "max")
        our_p99 = median("p99_us", ours_name, k, b, "half")
        for peer in peers:
            theirs = median("msgs_per_s", peer, k, b, "max")
            their_p99 = median("p99_us", peer, k, b, "half")
            if ours and theirs:
                p99_ratio = f", p99 x{our_p99 / their_p99:.2f}" if our_p99 and their_p99 else ""
                ours_cpu, their_cpu = cpu_ns(ours_name, k, b), cpu_ns(peer, k, b)
                cpu_ratio = f", CPU/msg x{ours_cpu / their_cpu:.2f}" if ours_cpu and their_cpu else ""
                print(f"{'':>11} {names[ours_name]} / {names[peer]:<8} throughput x{ours / theirs:.2f}{p99_ratio}{cpu_ratio}")
    # --cross: Runnel (and runnel+backpressure) and Redis compared at each one's half rate (the
    # other runs at it too).
    for ours_name, rate_of, mode in (("runnel", "redis", "atredis"), ("backpressure", "redis", "atredis"),
                                     ("runnel", "runnel", "atrunnel")):
        other = ours_name if mode == "atredis" else "redis"
        # With --same-rate no run of Runnel's was at its own half: that side was not measured.
        at_own = None if same_rate and rate_of == "runnel" else median("p99_us", rate_of, k, b, "half")
        at_other = median("p99_us", other, k, b, mode)
        rate = median("msgs_per_s", other, k, b, mode)  # delivered at that rate: the rate itself
        lost = failed(other, k, b, mode)
        if not runs[(other, k, b, mode)]:
            continue
        ours_p99, theirs_p99 = (at_other, at_own) if other == ours_name else (at_own, at_other)
        ratio = f" -> x{ours_p99 / theirs_p99:.2f}" if ours_p99 and theirs_p99 else ""
        note = f" ({names[other]}: {lost} run(s) lost messages)" if lost else ""
        print(f"{'':>11} p99 at {names[rate_of]}'s half ({fmt(rate, ',.0f')} msgs/s): {names[ours_name]} "
              f"{fmt(ours_p99, '.0f')} us, redis {fmt(theirs_p99, '.0f')} us{ratio}{note}")
    print()
