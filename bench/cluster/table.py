#!/usr/bin/env python3
"""Prints bench/cluster/run.sh's results as one table: medians per setup, and the ratios.

Input: one tab-separated line per loadgen run: setup (cluster, nats, redis, standalone,
clustered), mode (max: as fast as sustained; rate: at the fixed rate; pair: the own fan-out's
alternated pairs, full speed), repetition (for pair: the pair's number), and
loadgen's key=value output followed by cpu_NAME=S, the CPU seconds of each server process that
took part. A run that lost deliveries is left out of the medians and counted in a note.

    table.py RESULTS RATE   (RATE: the fixed rate's publishes per second)
"""
import statistics
import sys
from collections import defaultdict

K = 10
runs = defaultdict(list)  # (setup, mode) -> [dict]
for line in open(sys.argv[1]):
    setup, mode, rep, fields = (line.rstrip("\n").split("\t") + [""] * 4)[:4]
    values = dict(kv.split("=", 1) for kv in fields.split() if "=" in kv)
    ok = "delivered" in values and values.get("delivered") == values.get("expected")
    runs[(setup, mode)].append({**values, "ok": ok, "rep": rep})
rate = int(sys.argv[2])


def median(values):
    return statistics.median(values) if values else None


def stat(setup, mode, key):
    return median([float(r[key]) for r in runs[(setup, mode)] if r["ok"] and key in r])


def cpu_ns(setup, mode, processes=None):
    """CPU time per delivery (ns, median over runs) of the given server processes (all by default)."""
    per = []
    for r in runs[(setup, mode)]:
        if not r["ok"]:
            continue
        names = [k for k in r if k.startswith("cpu_") and (processes is None or k[4:] in processes)]
        per.append(sum(float(r[k]) for k in names) * 1e9 / float(r["delivered"]))
    return median(per)


def failed(setup):
    return sum(1 for mode in ("max", "rate") for r in runs[(setup, mode)] if not r["ok"])


def fmt(value, spec):
    return "-" if value is None else format(value, spec)


def ratio(a, b):
    return f"x{a / b:.2f}" if a and b else "-"


def row(name, setup, processes=None):
    note = f"  {failed(setup)} run(s) lost messages" if failed(setup) else ""
    print(f"{name:<26} {fmt(stat(setup, 'max', 'msgs_per_s'), '12,.0f')} {fmt(cpu_ns(setup, 'max', processes), '10.0f')}"
          f"   {fmt(stat(setup, 'rate', 'p50_us'), '7.0f')} {fmt(stat(setup, 'rate', 'p99_us'), '7.0f')}"
          f" {fmt(stat(setup, 'rate', 'p999_us'), '8.0f')} {fmt(cpu_ns(setup, 'rate', processes), '10.0f')}{note}")


header = (f"{'setup':<26} {'msgs/s':>12} {'CPU ns/msg':>10}   {'p50 us':>7} {'p99 us':>7} {'p99.9 us':>8} {'CPU ns/msg':>10}")
print()
print(f"K = {K} subscribers, 64 B values. msgs/s and the first CPU column: as fast as each sustains;")
print(f"latency and the second CPU column: at {rate:,} publishes/s ({rate * K:,} deliveries/s) for every setup.")
print("CPU ns/msg: CPU time (user + system) of the server processes named, per delivery; medians")
print()
print("Fan-out across nodes: CPU of every server process in the setup")
print(f"{'':<26} {'full speed':^23}   {'at the fixed rate':^35}")
print(header)
print("-" * len(header))
row("cluster: a -> b, c", "cluster")
row("nats alone", "nats")
row("redis", "redis")
for peer in ("nats", "redis"):
    print(f"  cluster / {peer:<6} throughput {ratio(stat('cluster', 'max', 'msgs_per_s'), stat(peer, 'max', 'msgs_per_s'))}, "
          f"p50 {ratio(stat('cluster', 'rate', 'p50_us'), stat(peer, 'rate', 'p50_us'))}, "
          f"p99 {ratio(stat('cluster', 'rate', 'p99_us'), stat(peer, 'rate', 'p99_us'))}, "
          f"CPU/msg {ratio(cpu_ns('cluster', 'max'), cpu_ns(peer, 'max'))} (full speed), "
          f"{ratio(cpu_ns('cluster', 'rate'), cpu_ns(peer, 'rate'))} (at the rate)")
for mode, what in (("max", "full speed"), ("rate", "at the rate")):
    parts = [f"{name} {fmt(cpu_ns('cluster', mode, processes), '.0f')}" for name, processes in
             (("node-a", {"node-a"}), ("node-b + node-c", {"node-b", "node-c"}), ("nats-server", {"cluster-nats"}))]
    print(f"  the cluster's CPU ns/msg by process, {what}: " + ", ".join(parts))
print()
print("One node's own fan-out, all subscribers on the publishing node: CPU of that runneld")
print(header)
print("-" * len(header))
row("standalone", "standalone", {"standalone"})
row("in the cluster (node-a)", "clustered", {"node-a"})
for mode, what in (("max", "full speed"), ("rate", "at the rate")):
    print(f"  nats-server meanwhile, {what}: {fmt(cpu_ns('clustered', mode, {'cluster-nats'}), '.0f')} ns/msg")
ours, theirs = cpu_ns("clustered", "max", {"node-a"}), cpu_ns("standalone", "max", {"standalone"})
extra = f" ({(ours / theirs - 1) * 100:+.0f}%; the target: at most +10%)" if ours and theirs else ""
print(f"  in the cluster / standalone: throughput "
      f"{ratio(stat('clustered', 'max', 'msgs_per_s'), stat('standalone', 'max', 'msgs_per_s'))}, "
      f"node CPU/msg {ratio(ours, theirs)}{extra} at full speed, "
      f"{ratio(cpu_ns('clustered', 'rate', {'node-a'}), cpu_ns('standalone', 'rate', {'standalone'}))} at the rate; "
      f"p99 {ratio(stat('clustered', 'rate', 'p99_us'), stat('standalone', 'rate', 'p99_us'))}")


def pair_ratios():
    """node-a's CPU per delivery over the standalone runneld's, one ratio per complete pair."""
    per = defaultdict(dict)  # pair number -> setup -> CPU per delivery
    for setup, name in (("standalone", "standalone"), ("clustered", "node-a")):
        for r in runs[(setup, "pair")]:
            if r["ok"] and float(r.get(f"cpu_{name}", 0)) > 0:
                per[r["rep"]][setup] = float(r[f"cpu_{name}"]) / float(r["delivered"])
    return sorted(p["clustered"] / p["standalone"] for p in per.values() if len(p) == 2)


paired = pair_ratios()
if paired:
    quartiles = statistics.quantiles(paired, n=4) if len(paired) > 1 else [paired[0]] * 3
    print(f"  in pairs ({len(paired)} alternated pairs of full-speed runs, the same two processes): node CPU/msg "
          f"median x{statistics.median(paired):.3f} ({(statistics.median(paired) - 1) * 100:+.1f}%; the target: at most +10%), "
          f"quartiles x{quartiles[0]:.3f}-x{quartiles[2]:.3f}, range x{paired[0]:.3f}-x{paired[-1]:.3f}")
print()
