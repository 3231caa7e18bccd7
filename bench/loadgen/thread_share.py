#!/usr/bin/env python3
"""How a process's CPU time is spread over its threads, for threads.sh.

    thread_share.py sample PID              one line a thread: tid, name, utime + stime (ticks),
                                            bytes read (rchar)
    thread_share.py diff BEFORE AFTER       the run between two samples, as key=value:
                                            cpu_s, busiest, busiest_share, reader,
                                            share.NAME ...
    thread_share.py combine OUT ...         several load generators' key=value lines (one
                                            run of several publishers) as one: counts
                                            summed, the longest time, the rate over it
    thread_share.py table RESULTS           threads.sh's table, the Amdahl model and, given
                                            one loop's runs with 1 and K subscribers, the
                                            publisher's floor

A thread's figures come from /proc/PID/task/TID/stat: field 2 is its name (comm, in
parentheses; a name may itself hold spaces and parentheses, so the fields are counted from the
last ')'), fields 14 and 15 its user and system time in clock ticks; /proc/PID/task/TID/io's
rchar the bytes its reads took in. The thread that read the most over a run is `reader`: with
one publisher, the loop its connection is on (the subscribers' sockets and the loops' wake-ups
bring next to nothing). The main thread (TID = PID)
is named "main": in runneld it runs the first loop, which owns the protocol; the others are
runnel-loop-1 ... runnel-loop-(N-1). Threads of one name are counted together. A thread that
ends between the samples is not counted (runneld's loops live as long as the process).

RESULTS (threads.sh): one tab-separated line a run: loops, K, B, repetition, then loadgen's
key=value output and diff's, space-separated.
"""
import os
import statistics
import sys
from collections import Counter, defaultdict

TICK = os.sysconf("SC_CLK_TCK")


def sample(pid):
    rows = []
    task = f"/proc/{pid}/task"
    for tid in os.listdir(task):
        try:
            with open(f"{task}/{tid}/stat") as f:
                stat = f.read()
        except OSError:  # ended meanwhile
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()  # fields[0] is field 3 (state)
        ticks = int(fields[14 - 3]) + int(fields[15 - 3])
        read = 0
        try:
            with open(f"{task}/{tid}/io") as f:
                read = next(int(line.split()[1]) for line in f if line.startswith("rchar:"))
        except (OSError, StopIteration):
            pass
        if tid == str(pid):
            name = "main"
        rows.append((tid, name.replace(" ", "_").replace("\t", "_").replace("=", "_"), ticks, read))
    return rows


def read_sample(path):
    with open(path) as f:
        return {tid: (name, int(ticks), int(read))
                for tid, name, ticks, read in (line.split("\t") for line in f if line.strip())}


def diff(before_path, after_path):
    before, after = read_sample(before_path), read_sample(after_path)
    by_name, read_by_name = Counter(), Counter()
    for tid, (name, ticks, read) in after.items():
        _, ticks_before, read_before = before.get(tid, (name, 0, 0))
        by_name[name] += ticks - ticks_before
        read_by_name[name] += read - read_before
    total = sum(by_name.values())
    out = [f"cpu_s={total / TICK:.2f}"]
    if total > 0:
        busiest, ticks = max(by_name.items(), key=lambda item: item[1])
        out += [f"busiest={busiest}", f"busiest_share={ticks / total:.4f}"]
        out += [f"reader={max(read_by_name.items(), key=lambda item: item[1])[0]}"]
        out += [f"share.{name}={t / total:.4f}" for name, t in sorted(by_name.items())]
    return " ".join(out)


# What `combine` sums and what it takes the largest of; any other key is dropped.
SUMMED = ("delivered", "expected", "published", "lost", "disconnects", "stalled", "reader_cpu_s")
LARGEST = ("seconds", "p50_us", "p99_us", "p999_us", "peak_rss_kb", "server_cpu_s")


def number(x):
    return f"{x:.0f}" if x == int(x) else f"{x:.3f}"


def combine(paths):
    runs = []
    for path in paths:
        with open(path) as f:
            runs.append(dict(kv.split("=", 1) for kv in f.read().split() if "=" in kv))
    if len(runs) == 1:
        return " ".join(f"{key}={value}" for key, value in runs[0].items())
    out = {"publishers": str(len(runs))}
    for key in SUMMED:
        out[key] = number(sum(float(run.get(key, 0)) for run in runs))
    for key in LARGEST:
        out[key] = number(max(float(run.get(key, 0)) for run in runs))
    if float(out["seconds"]) > 0:
        out["msgs_per_s"] = f"{float(out['delivered']) / float(out['seconds']):.0f}"
    # A generator that printed nothing (it failed) leaves the run short of its deliveries.
    if any("delivered" not in run for run in runs):
        out["stalled"] = str(int(float(out["stalled"])) + 1)
    return " ".join(f"{key}={value}" for key, value in out.items())


def label(name):
    return "main (loop 0)" if name == "main" else name


def table(path):
    runs = defaultdict(list)  # (loops, k, b) -> [dict]
    for line in open(path):
        loops, k, b, _rep, fields = (line.rstrip("\n").split("\t") + [""] * 5)[:5]
        runs[(int(loops), int(k), int(b))].append(dict(kv.split("=", 1) for kv in fields.split() if "=" in kv))
    keys = sorted(runs, key=lambda key: (key[2], key[1], key[0]))
    max_loops = max(key[0] for key in keys)
    loop_names = ["main"] + [f"runnel-loop-{i}" for i in range(1, max_loops)]

    def med(values, key):
        xs = [float(v[key]) for v in values if key in v]
        return statistics.median(xs) if xs else None

    def pct(x):
        return "" if x is None else f"{100 * x:.1f}%"

    print()
    print("runneld's CPU by thread, no publish window; medians of the runs. CPU s: utime + stime of every")
    print("thread over the run (/proc/PID/task/*/stat); share: a thread's part of that; main is loop 0")
    loop_heads = "".join(f" {('main' if n == 'main' else 'loop-' + n.rsplit('-', 1)[1]):>7}" for n in loop_names)
    header = (f"{'loops':>5} {'K':>3} {'B':>5} {'deliveries':>11} {'msgs/s':>11} {'CPU s':>6} {'ns/dlv':>6}  "
              f"{'busiest thread':<16} {'share':>6} {loop_heads} {'other':>6}  note")
    print(header)
    print("-" * len(header))
    shares = {}  # (k, b) -> {loops: the busiest thread's share}
    for loops, k, b in keys:
        values = runs[(loops, k, b)]
        delivered = med(values, "delivered")
        cpu = med(values, "cpu_s")
        rate = med(values, "msgs_per_s")
        per = cpu / delivered * 1e9 if cpu and delivered else None
        names = Counter(v["busiest"] for v in values if "busiest" in v)
        busiest = names.most_common(1)[0][0] if names else "?"
        share = med(values, "busiest_share")
        loop_shares = [med(values, f"share.{n}") if i < loops else None for i, n in enumerate(loop_names)]
        others = [sum(float(x) for key, x in v.items() if key.startswith("share.") and key[6:] not in loop_names)
                  for v in values if "cpu_s" in v]
        other = statistics.median(others) if others else None
        note = ["busiest per run " + "/".join(pct(float(v["busiest_share"])) for v in values if "busiest_share" in v)]
        if len(names) > 1:
            note.append("busiest: " + ", ".join(f"{label(n)} x{c}" for n, c in names.most_common()))
        readers = Counter(v["reader"] for v in values if "reader" in v)
        publishers = int(values[0].get("publishers", "1"))
        if publishers > 1:
            note.append(f"{publishers} publishers")
        if loops > 1 and readers:
            note.append(("publisher on " if publishers == 1 else "read most: ")
                        + ", ".join(f"{label(n)} x{c}" for n, c in readers.most_common()))
        bad = [v for v in values if v.get("lost", "0") != "0" or v.get("disconnects", "0") != "0"
               or v.get("stalled", "0") != "0" or "delivered" not in v]
        if bad:
            note.append(f"{len(bad)} of {len(values)} runs lost/disconnected/stalled")
        print(f"{loops:>5} {k:>3} {b:>5} {'-' if delivered is None else f'{delivered:,.0f}':>11} "
              f"{'-' if rate is None else f'{rate:,.0f}':>11} {'-' if cpu is None else f'{cpu:.2f}':>6} "
              f"{'-' if per is None else f'{per:.0f}':>6}  {label(busiest):<16} {pct(share):>6} "
              f"{''.join(f' {pct(x):>7}' for x in loop_shares)} {pct(other):>6}  {'; '.join(note)}")
        if share is not None:
            shares.setdefault((k, b), {})[loops] = share

    print()
    print("Amdahl model: s = the busiest thread's share of runneld's CPU (median). Assumed: that thread's")
    print("work is serial (it does not spread over cores, whatever their number) and everything else spreads")
    print("perfectly with no cost of its own; so n cores speed runneld up at most 1 / (s + (1 - s) / n),")
    print("and no number of cores by more than 1 / s.")
    # s at loops = 4, the setting, or at the most loops measured when 4 was not.
    serial = {}
    for cell, by_loops in shares.items():
        loops = 4 if 4 in by_loops else max(by_loops)
        serial[cell] = (loops, by_loops[loops])
    print(f"{'K':>3} {'B':>5} {'s':>7}  {'4 cores':>8} {'16 cores':>8} {'64 cores':>8} {'any':>8}")
    for (k, b), (loops, s) in sorted(serial.items(), key=lambda item: (item[0][1], item[0][0])):
        bound = [1 / (s + (1 - s) / n) for n in (4, 16, 64)]
        print(f"{k:>3} {b:>5} {pct(s):>7}  " + " ".join(f"{'x' + format(x, '.2f'):>8}" for x in bound)
              + f" {'x' + format(1 / s, '.2f'):>8}" + ("" if loops == 4 else f"   (s at loops = {loops}: none at 4)"))
    publisher_floor(runs, med)


def publisher_floor(runs, med):
    """The least share of runneld's CPU the one publisher's loop can take, from one loop's runs.

    A value costs I on the loop its publisher is on (reading, parsing, publishing it), which no
    other loop can take, and D per subscriber: at one loop a value costs I + K D, so two cells of
    one size, K = 1 and K > 1, give D and I. With every loop's crossings free and the
    publisher's loop serving no subscriber, its share is I / (I + K D); within #44's bound on
    CPU a delivery (1.1 times one loop), at least I / (1.1 (I + K D)).
    """
    one = {(k, b): med(values, "cpu_s") / med(values, "delivered") * 1e9 * k
           for (loops, k, b), values in runs.items()
           if loops == 1 and med(values, "cpu_s") and med(values, "delivered")}
    cells = sorted((k, b) for k, b in one if k > 1 and (1, b) in one)
    if not cells:
        return
    print()
    print("The publisher's floor, from loops = 1 (ns of runneld's CPU a value): I, the publisher's loop's")
    print("part (read, parse, publish), and D, a subscriber's, from the cells with 1 and K subscribers.")
    print("share = I / (I + K D): the publisher's loop's least share were crossings free and no subscriber")
    print("on its loop; at 1.1x: the least within a CPU a delivery 1.1 times one loop's.")
    print(f"{'K':>3} {'B':>5} {'I':>7} {'D':>7} {'share':>7} {'at 1.1x':>8}")
    for k, b in cells:
        d = (one[(k, b)] - one[(1, b)]) / (k - 1)
        i = one[(1, b)] - d
        whole = i + k * d
        print(f"{k:>3} {b:>5} {i:>7.0f} {d:>7.0f} {100 * i / whole:>6.1f}% {100 * i / (1.1 * whole):>7.1f}%")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "sample":
        for row in sample(int(sys.argv[2])):
            print("\t".join(map(str, row)))
    elif len(sys.argv) == 4 and sys.argv[1] == "diff":
        print(diff(sys.argv[2], sys.argv[3]))
    elif len(sys.argv) >= 3 and sys.argv[1] == "combine":
        print(combine(sys.argv[2:]))
    elif len(sys.argv) == 3 and sys.argv[1] == "table":
        table(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
