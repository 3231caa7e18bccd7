#!/usr/bin/env python3
"""Puts real network faults between a three-node cluster and its nats-server while clients publish
and subscribe on every node, and checks the cluster's contract (docs/protocol.md, "Clusters")
after each fault: every value answered `ok` into a retained subject delivered once, in one order,
to every subscription; every gap told (`dropped`, `resumed: false`); nothing answered `ok` lost.

    scripts/netfault-harness.py [--runneld PATH] [--rounds N] [--seed S] [--round-seconds T]
                                [--scenarios partition,nats-partition,pause,delay,loss] [--rate R]

As root (network namespaces; `ip` and `nft` are installed with apt-get when missing). nats-server
(JetStream, Tests/blackbox/nats_process.py) and three runneld nodes (a, b, c; Tests/blackbox/
runneld_process.py) each run in a network namespace of their own, every node's joined to NATS's by
a veth link (scripts/netfault_net.py); node c reaches NATS through a user-space proxy in its
namespace (scripts/netfault_proxy.py), which adds delay on demand. Each round makes a retained
subject (`replay`, capacity 100000) and a plain one, and on every node a subscriber of each (the
retained one with `positions`), plus a roaming subscriber of the retained subject that leaves its
node when the fault starts and subscribes again, on a node chosen at random, with `from` its last
position (again 0.5 s later, on another, while it is answered `unavailable`). Then on every node
one writer per subject publishes `{"w": WRITER, "n": 1, 2, ...}` with `ref` n, `--rate` a second,
16 at most unanswered, through one fault, the scenarios in turn:

- partition: one node's link to NATS set down at the node's end, until `stats` says the link is
  down (bounded: two unanswered pings 2 s apart), then 0.5 to 3 s more; a retained `pub` on it
  meanwhile must answer `unavailable`; then set up again;
- nats-partition: NATS's end of two nodes' links set down, the same way;
- pause: one node stopped with SIGSTOP until another node counts it out and 11 s have gone (past
  the alive time, 10 s), then SIGCONT;
- delay: 200 ms each way on node c's path to NATS (the proxy) for 4 s; the proxy must have held data;
- loss: 5% of one node's packets to and from NATS dropped (nft) for 5 s; the rule must have
  dropped some.

Then every link is up and every node counts three; the writers go on 1.5 s, stop and get their
answers. The check (scripts/netfault_check.py): every pub answered, `ok`, or `unavailable` on a
node cut off in the round (counted; such a value must not be stored); every subscriber of the retained
subject delivers the stream's values (nats-server's /jsz) up to its last seq, each seq one value
the same on every node, growing, each writer's in its order, none twice; a skipped seq is a
told gap only after `dropped` or `resumed: false`, else lost; the plain subscribers get each
writer's values in its order, none twice, and a value skipped only after a `dropped` event since
that writer's previous value (never one of their own node's). Prints a line per round and the
totals (rounds, values answered, delivered, told as gaps, duplicates, lost). A round that fails
(a problem above, a fault that did nothing, or past `--round-seconds`) ends the run, since a
cluster left broken would fail the next rounds alike: the evidence is printed with the last log
lines of the nodes, nats-server and the proxy, and the exit status is 1 (0 when every round
passed). Before anything, the checker is run over made-up rounds with faults planted, each of
which it must name (netfault_check.self_test). Every namespace, link, rule and process it made
is removed on the way out (also on SIGTERM or SIGINT), and at its start what a harness that is
gone left.
"""

import argparse
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
# The Python tests' way of starting runneld and nats-server (Tests/blackbox).
sys.path.insert(0, os.path.join(HERE, "..", "Tests", "blackbox"))
import nats_process  # noqa: E402
from nats_process import NatsServer  # noqa: E402
from netfault_check import Figures, Written, check_plain, check_retained, self_test  # noqa: E402
from netfault_clients import Subscriber, Writer  # noqa: E402
from netfault_net import Network, ensure_tools, in_namespace, remove_stale  # noqa: E402
from runneld_process import TEST_LOOPS, Daemon, LineClient  # noqa: E402

NODES = ["a", "b", "c"]
PROXIED = "c"          # the node whose path to NATS goes through the proxy
PROXY_PORT = 4223      # the proxy's, on node c's loopback
CLUSTER = "netfault"
CAPACITY = 100000
SCENARIOS = ["partition", "nats-partition", "pause", "delay", "loss"]
DETECT_SECONDS = 12    # a cut link reported down: two unanswered pings, 2 s apart
ALIVE_SECONDS = 10     # a node silent this long is counted out by the others
RECOVER_SECONDS = 30   # every link up and every node counting three, after the fault
CATCH_UP_SECONDS = 15  # every subscriber has the last values
DRAIN_SECONDS = 10     # the last answers after the writers stop; a delete's answer
SILENCE_SECONDS = 0.3  # nothing more after them


class NamespacedNats(NatsServer):
    """nats-server in NATS's namespace, on every address there (`-a 0.0.0.0` after the class's
    `-a 127.0.0.1`: the last wins), its monitoring port read from inside the namespace."""

    def __init__(self, network, directory):
        self.network = network
        super().__init__(arguments=["-a", "0.0.0.0"], directory=directory, port=Network.NATS_PORT,
                         monitor_port=Network.MONITOR_PORT)

    def _get(self, path, timeout=5):
        return in_namespace(self.network.nats, lambda: NatsServer._get(self, path, timeout))


class Harness:
    """The namespaces, nats-server, the proxy and the nodes, and the rounds run on them."""

    def __init__(self, binary, args):
        self.binary = os.path.abspath(binary)
        self.args = args
        self.rng = random.Random(args.seed)
        self.network = Network(NODES)
        self.work = self.nats = self.proxy = None
        self.proxy_lines, self.nodes, self.paused = [], {}, set()

    # --- processes -------------------------------------------------------------------------

    def start(self):
        ensure_tools()
        for name in remove_stale():
            print(f"removed what a harness that is gone left: {name}", flush=True)
        self.work = tempfile.mkdtemp(prefix=f"{self.network.tag}-")
        self.network.make()
        # nats_process starts BINARY: here, nats-server in NATS's namespace.
        nats_process.BINARY = self.wrapper("nats-server", self.network.nats, nats_process.BINARY)
        os.makedirs(os.path.join(self.work, "nats"))
        self.nats = NamespacedNats(self.network, os.path.join(self.work, "nats"))
        proxy = self.network.exec_prefix(self.network.namespace(PROXIED)) + [
            sys.executable, os.path.join(HERE, "netfault_proxy.py"), f"127.0.0.1:{PROXY_PORT}",
            f"{self.network.nats_address(PROXIED)}:{Network.NATS_PORT}", "--delay-ms", str(self.args.delay_ms)]
        self.proxy = subprocess.Popen(proxy, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True)
        threading.Thread(target=lambda: [self.proxy_lines.append(line.rstrip()) for line in self.proxy.stdout],
                         daemon=True).start()
        deadline = time.monotonic() + 10
        while not self.proxy_lines[:1] == [f"listening 127.0.0.1:{PROXY_PORT}"]:
            if time.monotonic() > deadline or self.proxy.poll() is not None:
                raise RuntimeError(f"the proxy did not start: {self.proxy_lines}")
            time.sleep(0.05)
        for node in NODES:
            url = (f"nats://127.0.0.1:{PROXY_PORT}" if node == PROXIED
                   else f"nats://{self.network.nats_address(node)}:{Network.NATS_PORT}")
            config = (f'cluster_nats = "{url}"\ncluster_name = "{CLUSTER}"\nnode_name = "node-{node}"\n'
                      'log_level = "info"\n')
            directory = os.path.join(self.work, node)
            os.makedirs(directory)
            binary = self.wrapper(f"runneld-{node}", self.network.namespace(node), self.binary)
            self.nodes[node] = Daemon(binary, config, http=False, directory=directory)
        problems = self.wait_recovered(time.monotonic() + RECOVER_SECONDS)
        if problems:
            raise RuntimeError("; ".join(problems))

    def wrapper(self, name, namespace, program):
        """A script running `program` inside `namespace` (exec'd: the process is the program's)."""
        path = os.path.join(self.work, name)
        with open(path, "w") as script:
            script.write(f'#!/bin/sh\nexec ip netns exec {namespace} {program} "$@"\n')
        os.chmod(path, 0o755)
        return path

    def cleanup(self):
        """Stops everything (nodes with SIGTERM, each expected to exit 0) and removes the
        namespaces and the work directory whatever fails on the way; returns the problems."""
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut this short
        problems = []
        try:
            for node in self.paused:
                os.kill(self.nodes[node].process.pid, signal.SIGCONT)
            if self.network.made:
                self.network.heal_all()
            for node, daemon in self.nodes.items():
                try:
                    status = daemon.stop(keep_directory=True)
                except subprocess.TimeoutExpired:  # killed by `stop`
                    status = "none: it had not exited 30 s after SIGTERM"
                if status != 0:
                    problems.append(f"node {node}'s exit status {status}; its last lines:\n"
                                    + "\n".join(daemon.log[-10:]))
            if self.proxy is not None:
                self.proxy.stdin.close()
                self.proxy.wait(10)
            if self.nats is not None:
                try:
                    self.nats.stop()
                finally:
                    self.nats.kill()
        except Exception as error:  # noqa: BLE001 - said, and what is left is removed below
            problems.append(f"stopping the processes: {error!r}")
        finally:
            self.network.remove()  # kills whatever still runs in the namespaces
            if self.work is not None:
                shutil.rmtree(self.work, ignore_errors=True)
        return problems

    def nats_log_size(self):
        return os.path.getsize(self.nats.log_path) if os.path.exists(self.nats.log_path) else 0

    def slow_consumers(self, since):
        """nats-server's "Slow Consumer Detected" lines logged after byte `since` of its log: a
        client it stopped writing to (and closed), dropping what it had not written yet."""
        with open(self.nats.log_path, errors="replace") as log:
            log.seek(since)
            return [line.strip() for line in log if "Slow Consumer" in line]

    def logs(self):
        parts = [f"--- node {name} (last lines):\n" + "\n".join(d.log[-15:]) for name, d in self.nodes.items()]
        parts.append("--- nats-server (last lines):\n" + (self.nats.log_tail(10) if self.nats else ""))
        parts.append("--- the proxy on node c's path (last lines):\n" + "\n".join(self.proxy_lines[-5:]))
        return "\n".join(parts)

    # --- clients ---------------------------------------------------------------------------

    def connect(self, node, timeout=10):
        """A LineClient connected to `node` on its namespace's loopback."""
        port = self.nodes[node].port
        return in_namespace(self.network.namespace(node), lambda: LineClient(port, timeout=timeout, no_delay=True))

    def request(self, node, request, timeout=10):
        client = self.connect(node, timeout)
        try:
            return client.request(request)
        finally:
            client.close()

    def cluster(self, node):
        """`stats.cluster` of `node`, or None when it does not answer within 2 s."""
        try:
            return self.request(node, {"op": "stats"}, timeout=2).get("cluster")
        except (OSError, EOFError, ValueError):
            return None

    def wait_recovered(self, deadline):
        """Waits until every node says its link is up and counts three nodes."""
        while True:
            states = {node: self.cluster(node) for node in NODES}
            if all(s and s.get("link") == "up" and s.get("nodes") == len(NODES) for s in states.values()):
                return []
            if time.monotonic() > deadline:
                return [f"not every node's link up with {len(NODES)} nodes counted: {states}"]
            time.sleep(0.1)

    def wait_until(self, condition, seconds):
        deadline = min(time.monotonic() + seconds, self.deadline)
        while not condition():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    # --- one round -------------------------------------------------------------------------

    def round(self, number, scenario):
        """One round; returns (its figures, what the fault did, problems)."""
        self.started = time.monotonic()
        self.deadline = self.started + self.args.round_seconds
        retained, plain = f"nf.{number}.r", f"nf.{number}.p"
        epoch, problems = self.create(retained, plain)
        if problems:
            return Figures(), "", problems
        subscribers, stop, writers = {}, threading.Event(), []
        try:
            for node in NODES:
                subscribers[("r", node)] = Subscriber(self.connect, node, node, retained, epoch)
                subscribers[("p", node)] = Subscriber(self.connect, node, node, plain)
            roamer = Subscriber(self.connect, "roaming", self.rng.choice(NODES), retained, epoch)
            subscribers[("r", "roaming")] = roamer
            for subscriber in subscribers.values():
                subscriber.subscribe(subscriber.node)
                subscriber.start()
            if not self.wait_until(lambda: all(s.replies for s in subscribers.values()), 10):
                return Figures(), "", ["not every subscriber was answered its sub within 10 s"]
            writers = [Writer(self.connect(node), f"{number}{node}{kind}", node, subject, self.args.rate, stop,
                              self.started) for node in NODES for kind, subject in (("r", retained), ("p", plain))]
            for writer in writers:
                writer.start()
            time.sleep(1.0)
            roamer.move(time.monotonic() + self.rng.uniform(0, 1.5), [self.rng.choice(NODES) for _ in range(60)],
                        self.deadline)
            fault_at = time.monotonic() - self.started
            cut, what, probes, problems = self.fault(scenario, retained, number)
            what = f"{fault_at:.1f} s into the round, {what}"
            problems += self.wait_recovered(min(time.monotonic() + RECOVER_SECONDS, self.deadline))
            time.sleep(1.5)
            for writer in writers:
                writer.drain_until = min(time.monotonic() + DRAIN_SECONDS, self.deadline)
            stop.set()
            for writer in writers:
                writer.join(max(self.deadline - time.monotonic(), 0) + 1)
                problems += [f"writer {writer.label} on node {writer.node}: {p}" for p in writer.problems]
            state = self.stream_state(epoch)
            last = {w.label: max((n for n, code in w.answers.items() if code == "ok"), default=0)
                    for w in writers if w.subject == plain}
            self.wait_until(lambda: all(s.highest >= state["last_seq"] if s.epoch else
                                        all(s.latest.get(w, 0) >= n for w, n in last.items())
                                        for s in subscribers.values()), CATCH_UP_SECONDS)
            time.sleep(SILENCE_SECONDS)
        finally:
            stop.set()
            for subscriber in subscribers.values():
                subscriber.stop()
        figures, found = check_retained(
            retained, [w.written() for w in writers if w.subject == retained] + probes,
            {s.label: s.events for key, s in subscribers.items() if key[0] == "r"}, state, cut)
        plain_figures, plain_found = check_plain(
            plain, [w.written() for w in writers if w.subject == plain],
            {s.label: (s.node, s.events) for key, s in subscribers.items() if key[0] == "p"}, set())
        figures.add(plain_figures)
        problems += found + plain_found
        what += "; the roaming subscriber " + roamer.path()
        if problems:  # the evidence: which pubs were refused or never answered, when
            problems += [line for writer in writers for line in writer.evidence()]
        problems += [f"delete {subject} on node {node} answered {reply} after {seconds:.1f} s"
                     for subject, node, reply, seconds in self.delete(retained, plain)]
        if time.monotonic() > self.deadline:
            problems.append(f"the round took {time.monotonic() - self.started:.0f} s, past --round-seconds")
        return figures, what, problems

    def create(self, retained, plain):
        """Creates the round's subjects on a node; returns (the retained one's epoch, problems)
        once every node lists both."""
        creator = self.rng.choice(NODES)
        for subject, kind in ((retained, "replay"), (plain, "subject")):
            request = {"op": "create", "subject": subject, "kind": kind}
            reply = self.request(creator, dict(request, capacity=CAPACITY) if kind == "replay" else request)
            if reply.get("ok") is not True:
                return None, [f"create {subject} on node {creator} answered {reply}"]
        epochs = {}
        if not self.wait_until(lambda: all(self.listed(n, retained, plain, epochs) for n in NODES), 5):
            return None, [f"{retained} and {plain} not listed by every node within 5 s: {epochs}"]
        if len(set(epochs.values())) != 1:
            return None, [f"{retained}: the nodes list different epochs: {epochs}"]
        return epochs[NODES[0]], []

    def delete(self, *subjects):
        """Deletes `subjects` on a node each; returns the failures (subject, node, reply, seconds)."""
        failures = []
        for subject in subjects:
            node, at = self.rng.choice(NODES), time.monotonic()
            try:
                reply = self.request(node, {"op": "delete", "subject": subject}, timeout=DRAIN_SECONDS)
            except (OSError, EOFError) as error:
                reply = repr(error)
            if not isinstance(reply, dict) or reply.get("ok") is not True:
                failures.append((subject, node, reply, time.monotonic() - at))
        return failures

    def listed(self, node, retained, plain, epochs):
        reply = self.request(node, {"op": "list", "prefix": retained.rpartition(".")[0]})
        names = {entry["subject"]: entry for entry in reply.get("subjects", [])}
        if retained in names and plain in names:
            epochs[node] = names[retained]["pos"].rpartition(":")[0]
            return True
        return False

    def stream_state(self, epoch):
        """messages, first_seq, last_seq of the retained subject's stream (nats-server's /jsz)."""
        name = f"RUNNEL_{CLUSTER}_{epoch}"
        for account in self.nats.monitor("/jsz?streams=1&limit=1024").get("account_details", []):
            for stream in account.get("stream_detail", []):
                if stream["name"] == name:
                    return stream["state"]
        raise RuntimeError(f"no JetStream stream {name}")

    # --- the faults ------------------------------------------------------------------------

    def fault(self, scenario, retained, number):
        """Puts `scenario`'s fault on, holds it, takes it off. Returns (the nodes cut off, what it
        did, the retained pubs sent to cut nodes once their link was reported down (Written),
        problems)."""
        problems, probes, rng = [], [], self.rng
        if scenario in ("partition", "nats-partition"):
            side = "node" if scenario == "partition" else "nats"
            cut = set(rng.sample(NODES, 1 if scenario == "partition" else 2))
            for node in cut:
                self.network.set_link(node, False, side=side)
            at = time.monotonic()
            detected = self.wait_until(lambda: all((self.cluster(n) or {}).get("link") == "down" for n in cut),
                                       DETECT_SECONDS)
            took = time.monotonic() - at
            if not detected:
                problems.append(f"node(s) {sorted(cut)} cut off, link not reported down within {DETECT_SECONDS} s")
            for node in sorted(cut) if detected else []:
                name = f"{number}probe{node}"
                reply = self.request(node, {"op": "pub", "subject": retained, "value": {"w": name, "n": 1}})
                probes.append(Written(name, node, 1, {1: "ok" if reply.get("ok") is True else str(reply.get("code"))}))
                if reply.get("code") != "unavailable":
                    problems.append(f"a retained pub on node {node}, its link reported down, answered {reply}")
            time.sleep(rng.uniform(0.5, 3.0))
            for node in cut:
                self.network.set_link(node, True, side=side)
            what = (f"node(s) {', '.join(sorted(cut))} cut off at {side}'s end for {time.monotonic() - at:.1f} s "
                    f"(link down after {took:.1f} s)")
            return cut, what, probes, problems
        if scenario == "pause":
            node = rng.choice(NODES)
            other = rng.choice([n for n in NODES if n != node])
            pid = self.nodes[node].process.pid
            os.kill(pid, signal.SIGSTOP)
            self.paused.add(node)
            at = time.monotonic()
            if not self.wait_until(lambda: (self.cluster(other) or {}).get("nodes") == len(NODES) - 1,
                                   ALIVE_SECONDS + 6):
                problems.append(f"node {node} paused, node {other} still counting it after {ALIVE_SECONDS + 6} s")
            counted_out = time.monotonic() - at
            time.sleep(max(at + ALIVE_SECONDS + 1 - time.monotonic(), 0.5))
            os.kill(pid, signal.SIGCONT)
            self.paused.discard(node)
            what = (f"node {node} paused {time.monotonic() - at:.1f} s (counted out by node {other} after "
                    f"{counted_out:.1f} s)")
            return {node}, what, probes, problems
        if scenario == "delay":
            lines = len(self.proxy_lines)
            self.proxy.send_signal(signal.SIGUSR1)
            time.sleep(4)
            self.proxy.send_signal(signal.SIGUSR2)
            self.wait_until(lambda: any(line.startswith("delay off") for line in self.proxy_lines[lines:]), 2)
            said = next((line for line in self.proxy_lines[lines:] if line.startswith("delay off")), "nothing")
            if said == "nothing" or said.startswith("delay off: 0 chunks"):
                problems.append(f"the proxy held nothing back: it said {said}")
            what = f"node {PROXIED}'s path to NATS {self.args.delay_ms} ms slower each way for 4 s ({said})"
            return set(), what, probes, problems
        node = rng.choice(NODES)
        self.network.start_loss(node, self.args.loss_percent)
        time.sleep(5)
        counts = self.network.loss_counts(node)
        self.network.stop_loss(node)
        if sum(counts) == 0:
            problems.append(f"the loss rule on node {node}'s link dropped no packet")
        what = (f"{self.args.loss_percent}% of node {node}'s packets to and from NATS dropped for 5 s "
                f"({counts[0]} in, {counts[1]} out)")
        return set(), what, probes, problems


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runneld", default=".build/debug/runneld", help="the daemon to run (not built here)")
    parser.add_argument("--rounds", type=int, default=20, help="the scenarios in turn, a round each")
    parser.add_argument("--seed", type=int, default=None, help="the victims, hold times, roaming (else random)")
    parser.add_argument("--round-seconds", type=float, default=45, help="a round's time bound")
    parser.add_argument("--rate", type=float, default=50, help="values a second from each writer")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS), help="the scenarios, in turn")
    parser.add_argument("--delay-ms", type=int, default=200)
    parser.add_argument("--loss-percent", type=int, default=5)
    args = parser.parse_args()
    if args.seed is None:
        args.seed = random.randrange(1 << 30)
    scenarios = args.scenarios.split(",")
    if not set(scenarios) <= set(SCENARIOS):
        parser.error(f"--scenarios: one or more of {', '.join(SCENARIOS)}")
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    unnoticed = self_test()
    if unnoticed:
        print("netfault-harness: the checker misses what it must find:\n  " + "\n  ".join(unnoticed), flush=True)
        return 1
    print(f"netfault-harness: {args.rounds} rounds ({', '.join(scenarios)} in turn), 3 nodes in network namespaces, "
          f"loops {TEST_LOOPS}, {args.rate:g} values/s per writer, seed {args.seed}", flush=True)
    began = time.monotonic()
    harness = Harness(args.runneld, args)
    totals, passed, failed = Figures(), 0, 0
    try:
        harness.start()
        for number in range(1, args.rounds + 1):
            scenario = scenarios[(number - 1) % len(scenarios)]
            log_before = harness.nats_log_size()
            figures, what, problems = harness.round(number, scenario)
            totals.add(figures)
            slow = harness.slow_consumers(log_before)
            print(f"round {number} ({scenario}): {'ok' if not problems else 'FAILED'}, {what}; {figures.line()}; "
                  f"{time.monotonic() - harness.started:.1f} s", flush=True)
            # What nats-server itself gave up writing is a loss the nodes must tell as a gap.
            for line in slow:
                print("  nats-server: " + line, flush=True)
            for problem in problems:
                print("  " + problem, flush=True)
            if problems:
                # The first failure stops the run: a cluster left broken fails the next rounds alike.
                failed += 1
                print(harness.logs(), flush=True)
                break
            passed += 1
    except (KeyboardInterrupt, SystemExit) as error:  # SIGINT, SIGTERM: stopped from outside
        print(f"stopped: {error!r}", flush=True)
        failed += 1
    except Exception as error:  # noqa: BLE001 - the harness itself failed: say so, and fail
        print(f"FAILED: {error!r}\n{traceback.format_exc()}{harness.logs()}", flush=True)
        failed += 1
    finally:
        for problem in harness.cleanup():
            print(problem, flush=True)
            failed += 1
    print(f"{passed} rounds passed, {failed} failed in {time.monotonic() - began:.0f} s (seed {args.seed}); "
          f"totals: {totals.line()}", flush=True)
    return 0 if failed == 0 and passed == args.rounds else 1


if __name__ == "__main__":
    sys.exit(main())
