#!/usr/bin/env python3
"""Kills a random node of a three-node cluster with SIGKILL while clients publish with refs into
retained subjects through every node, over and over, and checks after every restart that every
node delivers each subject's values to a late subscriber: every answered value, once, in one
order on every node.

    scripts/cluster-crash-harness.py [--runneld PATH] [--rounds N] [--seed S] [--full-every K]

One nats-server with JetStream (Tests/blackbox/nats_process.py, its store in a temporary
directory) and three runneld nodes (a, b, c) in one cluster, each with `--loops` as the tests give
them (RUNNEL_TEST_LOOPS, else 1). The harness creates replay subjects in the cluster (capacity
100000, so nothing falls out in a run of this length; one of them `durable`, kept in files by
JetStream). Each round, one writer connection per node and subject publishes
`{"w": WRITER, "n": 1, 2, 3...}` with `ref` n, pipelined, a window in flight, and keeps each
value whose reply is `ok`. At a random moment a random node is killed with SIGKILL (its writers'
connections drop: what they sent without an answer may or may not be kept); the others go on
publishing for a moment, then stop, and every value they sent must have been answered `ok`. The
killed node is started again on the same port and config; once its link is up:

- a subscriber on it at once (one subject a round, in turn), while it may still be filling its
  retained subjects from JetStream, must get the subject's values like a late one (below);
- every node must list each subject at the stream's last sequence number (read from
  nats-server's /jsz) within 20 s;
- then on every node, for every subject, a subscriber with `positions`: a late one (no `from`,
  every value) every K rounds (`--full-every`, 10) and in the last round, in the others a `sub`
  with `from` the last position checked (which must answer `resumed: true`). It must receive
  the values up to the stream's last seq, as many as the stream holds, and nothing more within
  0.3 s: every value answered so far (in any round, through any node) exactly once, no value
  nobody sent, seqs growing, each writer's values in the order it published them, every
  position in the epoch the subject has had since it was created;
- every node delivers the same values with the same positions in the same order.

Prints one line per round (what failed names the round, node, subject and values), and a
summary; exit status 0 when every round passed, 1 otherwise.
"""

import argparse
import json
import os
import random
import shutil
import signal
import socket
import sys
import tempfile
import threading
import time

# The one way the Python tests start runneld and nats-server, the black-box suites' (Tests/blackbox).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "blackbox"))
from nats_process import NatsServer  # noqa: E402
from runneld_process import TEST_LOOPS, Daemon, poll_until  # noqa: E402

NODES = ["a", "b", "c"]
CLUSTER = "crash"
# Replay subjects; the last one durable (JetStream keeps it in files).
SUBJECTS = ["crash.r1", "crash.r2", "crash.d1"]
DURABLE = {"crash.d1"}
CAPACITY = 100000
WINDOW = 4
LINK_SECONDS = 15       # a restarted node's link up
DELIVERY_SECONDS = 20   # a late subscriber's replay complete
DRAIN_SECONDS = 10      # a surviving writer's last replies
SILENCE_SECONDS = 0.3   # nothing more after the last value


def node_config(nats_url, node):
    return (f'cluster_nats = "{nats_url}"\ncluster_name = "{CLUSTER}"\nnode_name = "node-{node}"\n'
            'log_level = "notice"\n')


class Lines:
    """The line protocol over TCP, read in chunks (a replay of tens of thousands of lines is
    parsed in one pass per chunk, not a copy of the buffer per line)."""

    def __init__(self, port, timeout=10):
        self.socket = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rest = b""
        self.ready = []

    def send_all(self, requests):
        self.socket.sendall(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n" for r in requests))

    def lines(self):
        """The lines already received, or (blocking, up to the socket's timeout) the next chunk's;
        EOFError when the server closed the connection."""
        if self.ready:
            ready, self.ready = self.ready, []
            return ready
        while True:
            chunk = self.socket.recv(1 << 20)
            if not chunk:
                raise EOFError("the server closed the connection")
            *complete, self.rest = (self.rest + chunk).split(b"\n")
            if complete:
                return [json.loads(line) for line in complete]

    def request(self, request):
        """Sends `request` with a ref of its own and returns its reply (other lines dropped)."""
        self.send_all([dict(request, ref="req")])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            for line in self.lines():
                if line.get("ref") == "req":
                    return line
        raise TimeoutError(f"no reply to {request}")

    def close(self):
        try:
            self.socket.close()
        except OSError:
            pass


class Writer(threading.Thread):
    """One connection publishing `{"w": name, "n": n}` into one subject, n = 1, 2, 3..., with
    ref n, WINDOW in flight, until `stop` is set; then it waits (up to DRAIN_SECONDS) for the
    replies still due. `answered`: the n answered `ok`; `sent`: how many were sent;
    `dropped`: the connection was closed under it; `problems`: replies not `ok`, unknown refs,
    replies that never came."""

    def __init__(self, name, node, port, subject, stop):
        super().__init__(daemon=True)
        self.name_ = name
        self.node = node
        self.port = port
        self.subject = subject
        self.stop = stop
        self.sent = 0
        self.answered = []
        self.pending = set()
        self.dropped = None
        self.problems = []

    def request(self, n):
        return {"op": "pub", "subject": self.subject, "value": {"w": self.name_, "n": n}, "ref": n}

    def run(self):
        try:
            client = Lines(self.port)
        except OSError as error:
            self.dropped = f"could not connect: {error}"
            return
        try:
            while not self.stop.is_set():
                batch = []
                while len(self.pending) < WINDOW:
                    self.sent += 1
                    self.pending.add(self.sent)
                    batch.append(self.request(self.sent))
                if batch:
                    client.send_all(batch)
                self.take(client.lines())
            client.socket.settimeout(DRAIN_SECONDS)
            while self.pending:
                self.take(client.lines())
        except socket.timeout:
            self.problems.append(f"no reply within {DRAIN_SECONDS} s to the pubs with refs "
                                 f"{sorted(self.pending)[:10]} (of {len(self.pending)})")
        except (OSError, EOFError) as error:
            self.dropped = repr(error)
        except ValueError as error:
            self.problems.append(f"a reply that is not JSON: {error}")
        finally:
            client.close()

    def take(self, lines):
        for line in lines:
            ref = line.get("ref")
            if ref not in self.pending:
                self.problems.append(f"a line that answers no pending pub: {line}")
                continue
            self.pending.discard(ref)
            if line.get("ok") is True:
                self.answered.append(ref)
            else:
                self.problems.append(f"request {json.dumps(self.request(ref))} answered {json.dumps(line)}")


class Harness:
    def __init__(self, binary, seed):
        self.binary = binary
        self.rng = random.Random(seed)
        self.work = None
        self.nats = None
        self.nodes = {}
        self.epochs = {}
        # Per subject: the values every node delivered alike at the last check that passed.
        self.verified = {}
        self.verified_base = {}
        # Per subject: writer name -> the n answered `ok`, and -> how many it sent.
        self.answered = {s: {} for s in SUBJECTS}
        self.sent = {s: {} for s in SUBJECTS}
        self.answered_total = 0
        self.stored = 0  # values in the subjects' streams at the last check
        self.unknown_total = 0
        # Per node: subscribers checked (resumed, late, early), values they read.
        self.checks = {node: {"resumed": 0, "late": 0, "early": 0, "values": 0} for node in NODES}

    # --- processes -------------------------------------------------------------------------

    def start(self):
        self.work = tempfile.mkdtemp(prefix="runnel-cluster-crash-")
        os.makedirs(os.path.join(self.work, "nats"))
        self.nats = NatsServer(directory=os.path.join(self.work, "nats"))
        for node in NODES:
            directory = os.path.join(self.work, node)
            os.makedirs(directory)
            self.daemon(node, directory=directory)
        for node in NODES:
            self.wait_for_link(node)

    def daemon(self, node, **options):
        """Starts a node's runneld as `self.nodes[node]`; a SIGTERM meanwhile takes effect once it is
        there (and so is stopped on the way out)."""
        global STARTING
        STARTING = True
        try:
            self.nodes[node] = Daemon(self.binary, node_config(self.nats.url, node), http=False, **options)
        finally:
            STARTING = False
            if TERMINATED:
                sys.exit(128 + signal.SIGTERM)

    def restart(self, node):
        old = self.nodes[node]
        deadline = time.monotonic() + 30
        while True:
            try:
                self.daemon(node, port=old.port, directory=old.directory)
                break
            except (RuntimeError, OSError) as error:
                # The binary being rebuilt, or the port not free yet: again, for a while.
                if time.monotonic() > deadline:
                    raise RuntimeError(f"node {node} did not start again: {error}") from error
                time.sleep(0.5)
        return self.wait_for_link(node)

    def wait_for_link(self, node):
        started = time.monotonic()
        deadline = started + LINK_SECONDS
        last = None
        while time.monotonic() < deadline:
            try:
                client = Lines(self.nodes[node].port, timeout=5)
                try:
                    last = client.request({"op": "stats"})
                finally:
                    client.close()
                if last.get("cluster", {}).get("link") == "up":
                    return time.monotonic() - started
            except (OSError, EOFError, TimeoutError, ValueError) as error:
                last = repr(error)
            time.sleep(0.05)
        raise RuntimeError(f"node {node}'s link not up within {LINK_SECONDS} s: stats {last}\n" + self.logs())

    def stop(self):
        """SIGTERM to the nodes (each must exit with status 0), then nats-server; returns the
        problems."""
        problems = []
        for node, daemon in self.nodes.items():
            if daemon.process.poll() is not None:
                problems.append(f"node {node} had exited with status {daemon.process.returncode}")
                continue
            try:
                status = daemon.stop(keep_directory=True)
            except Exception as error:  # noqa: BLE001 - a hung node is killed by stop
                status = repr(error)
            if status != 0:
                problems.append(f"node {node} stopped with status {status}:\n" + "\n".join(daemon.log[-15:]))
        return problems

    def cleanup(self):
        for daemon in self.nodes.values():
            if daemon.process.poll() is None:
                daemon.process.kill()
                daemon.process.wait()
        if self.nats is not None:
            try:
                self.nats.stop()
            finally:
                self.nats.kill()
        if self.work is not None:
            shutil.rmtree(self.work, ignore_errors=True)

    def logs(self):
        parts = [f"--- node {name} (last lines):\n" + "\n".join(d.log[-15:]) for name, d in self.nodes.items()]
        tail = self.nats.log_tail(10) if self.nats else ""
        return "\n".join(parts) + "\n--- nats-server (last lines):\n" + tail

    # --- the subjects ----------------------------------------------------------------------

    def create_subjects(self):
        for index, subject in enumerate(SUBJECTS):
            node = NODES[index % len(NODES)]
            client = Lines(self.nodes[node].port)
            try:
                request = {"op": "create", "subject": subject, "kind": "replay", "capacity": CAPACITY}
                if subject in DURABLE:
                    request["durable"] = True
                reply = client.request(request)
            finally:
                client.close()
            if reply.get("ok") is not True:
                raise RuntimeError(f"{json.dumps(request)} on node {node} answered {json.dumps(reply)}")
        # Every node lists every subject (definitions reach the others within a second).
        for node in NODES:
            poll_until(lambda: self.listed(node), lambda listed: all(s in listed for s in SUBJECTS),
                       f"node {node} listing {SUBJECTS}", 5)

    def listed(self, node):
        client = Lines(self.nodes[node].port)
        try:
            reply = client.request({"op": "list", "prefix": "crash."})
        finally:
            client.close()
        return {entry["subject"]: entry for entry in reply.get("subjects", [])}

    def stream_states(self):
        """Stream name -> JetStream's state of it (messages, first_seq, last_seq)."""
        jsz = self.nats.monitor("/jsz?streams=1&limit=1024")
        states = {}
        for account in jsz.get("account_details", []):
            for stream in account.get("stream_detail", []):
                states[stream["name"]] = stream["state"]
        return states

    # --- one round -------------------------------------------------------------------------

    def round(self, number, max_kill_ms, after_kill_ms, full, early_from=False):
        """One round; returns (victim, values answered, values unknown, timings, problems)."""
        victim = self.rng.choice(NODES)
        stop = threading.Event()
        writers = []
        for node in NODES:
            for subject in SUBJECTS:
                name = f"{number}{node}{subject.rsplit('.', 1)[1]}"
                writers.append(Writer(name, node, self.nodes[node].port, subject, stop))
        for writer in writers:
            writer.start()
        time.sleep(self.rng.uniform(0.15, max_kill_ms / 1000))
        self.nodes[victim].kill()
        killed_at = time.monotonic()
        time.sleep(after_kill_ms / 1000)
        stop.set()
        for writer in writers:
            writer.join(timeout=DRAIN_SECONDS + 5)
        problems = []
        for writer in writers:
            where = f"round {number}, writer {writer.name_} on node {writer.node} ({writer.subject})"
            if writer.is_alive():
                problems.append(f"{where}: still running {DRAIN_SECONDS + 5} s after the stop")
            problems += [f"{where}: {p}" for p in writer.problems]
            if writer.dropped and writer.node != victim:
                problems.append(f"{where}: its connection to a surviving node dropped: {writer.dropped}")
            self.answered[writer.subject][writer.name_] = set(writer.answered)
            self.sent[writer.subject][writer.name_] = writer.sent
            self.answered_total += len(writer.answered)
            self.unknown_total += writer.sent - len(writer.answered)
        answered = sum(len(w.answered) for w in writers)
        unknown = sum(w.sent - len(w.answered) for w in writers)
        restarted_at = time.monotonic()
        self.restart(victim)
        timings = {"restart": time.monotonic() - restarted_at}
        # A subscriber on the restarted node at once, while it may still be filling its retained
        # subjects from JetStream (a subject a round, in turn): it must get them all the same.
        early_subject = SUBJECTS[number % len(SUBJECTS)]
        targets = self.targets(number, problems)
        self.stored = sum(state["messages"] for state in targets.values())
        early = {}
        early_reader = None
        if early_subject in targets:
            last = self.verified.get(early_subject, [None])[-1] if early_from else None
            from_pos = None if last is None else f"{last[3]}:{last[2]}"
            early_reader = threading.Thread(target=self.late_subscriber, daemon=True,
                                            args=(victim, early_subject, targets[early_subject], early, from_pos))
            early_reader.start()
        caught_up_at = time.monotonic()
        problems += self.wait_until_caught_up(number, targets)
        timings["catch-up"] = time.monotonic() - caught_up_at
        if early_reader is not None:
            early_reader.join(DELIVERY_SECONDS + 10)
        checked_at = time.monotonic()
        if not problems:
            problems += self.check_all(number, full, targets, (victim, early_subject, early))
        timings["check"] = time.monotonic() - checked_at
        timings["round"] = time.monotonic() - killed_at
        return victim, answered, unknown, timings, problems

    # --- the check -------------------------------------------------------------------------

    def targets(self, number, problems):
        """Subject -> its stream's state in JetStream (where every node must get to), the
        epoch every node lists for the subject checked on the way."""
        listings = {node: self.listed(node) for node in NODES}
        states = self.stream_states()
        targets = {}
        for subject in SUBJECTS:
            epochs = {node: listings[node].get(subject, {}).get("pos", "?:").partition(":")[0] for node in NODES}
            if subject not in self.epochs:
                self.epochs[subject] = epochs["a"]
            for node, epoch in epochs.items():
                if epoch != self.epochs[subject]:
                    problems.append(f"round {number}, node {node}, {subject}: epoch {epoch!r} (listed "
                                    f"{listings[node].get(subject)}), the subject's is {self.epochs[subject]!r}")
            stream = f"RUNNEL_{CLUSTER}_{self.epochs[subject]}"
            if stream not in states:
                problems.append(f"round {number}, {subject}: no JetStream stream {stream} (streams: {sorted(states)})")
                continue
            if states[stream]["messages"] >= CAPACITY:
                problems.append(f"round {number}, {subject}: {states[stream]['messages']} values, the subjects' "
                                f"capacity: the harness cannot check more rounds")
            targets[subject] = states[stream]
        return targets

    def wait_until_caught_up(self, number, targets):
        """Polls `list` until every node's latest position of every subject is its stream's last
        seq (a restarted node fills its retained subjects from JetStream after it starts)."""
        deadline = time.monotonic() + DELIVERY_SECONDS
        behind = {}
        while True:
            behind = {}
            for node in NODES:
                listed = self.listed(node)
                for subject, state in targets.items():
                    seq = int(listed.get(subject, {}).get("pos", "?:-1").partition(":")[2])
                    if seq != state["last_seq"]:
                        behind[(node, subject)] = seq
            if not behind:
                return []
            if time.monotonic() > deadline:
                return [f"round {number}, node {node}, {subject}: lists seq {seq} as its latest after "
                        f"{DELIVERY_SECONDS} s, the stream's last seq is {targets[subject]['last_seq']}"
                        for (node, subject), seq in sorted(behind.items())]
            time.sleep(0.05)

    def check_all(self, number, full, targets, early):
        """Every node's values of every subject: those after the position checked last time
        (a `sub` with `from` it, on every node), or all of them (a late subscriber) when `full`
        or when the last check of the subject failed; and the early subscriber's (`early`: the
        restarted node, its subject, and its result)."""
        problems = []
        # Every node and subject at once: a late subscriber each, read until the stream's last seq.
        results = {}
        readers = []
        resume = {s: (None if full or s not in self.verified else self.verified[s][-1]) for s in SUBJECTS}
        for node in NODES:
            for subject in SUBJECTS:
                start = resume[subject]
                from_pos = None if start is None else f"{start[3]}:{start[2]}"
                reader = threading.Thread(target=self.late_subscriber, daemon=True,
                                          args=(node, subject, targets[subject], results, from_pos))
                reader.start()
                readers.append(reader)
        for reader in readers:
            reader.join(DELIVERY_SECONDS + 10)
        early_node, early_subject, early_result = early
        for subject in SUBJECTS:
            state = targets[subject]
            sequences = {}
            bases = {}
            found = []
            runs = [(node, f"round {number}, node {node}, {subject}", results.get((node, subject)))
                    for node in NODES]
            if subject == early_subject:
                runs.append((f"{early_node} (early)", f"round {number}, node {early_node}, {subject}, subscribed "
                             "as soon as its link was up", early_result.get((early_node, subject))))
            for node, where, result in runs:
                if result is None:
                    found.append(f"{where}: the subscriber did not finish")
                    continue
                events, trouble, resumed = result
                counts = self.checks[node[0]]
                counts["early" if "(early)" in node else "resumed" if resumed else "late"] += 1
                counts["values"] += len(events)
                base = None
                if resumed:
                    where += f" (sub from {self.verified[subject][-1][3]}:{self.verified[subject][-1][2]})"
                    events = self.verified[subject] + events
                    base = self.verified_base[subject]
                found += [f"{where}: {t}" for t in trouble]
                checked, bases[node] = self.check_values(where, subject, events, state, base)
                found += checked
                sequences[node] = events
            found += self.compare_nodes(number, subject, sequences)
            problems += found
            if found or not sequences.get("a"):
                self.verified.pop(subject, None)
            else:
                self.verified[subject] = sequences["a"]
                self.verified_base[subject] = bases["a"]
        return problems

    def late_subscriber(self, node, subject, state, results, from_pos):
        """`sub` with positions on `node` (`from` from_pos, when given: then it must be resumed):
        the (w, n, seq, epoch) of each value up to the stream's last seq, then nothing for
        SILENCE_SECONDS. Sets results[(node, subject)] to (those, problems, whether resumed)."""
        events, trouble = [], []
        last_seq = state["last_seq"]
        resumed = False
        try:
            client = Lines(self.nodes[node].port, timeout=1)
        except OSError as error:
            results[(node, subject)] = ([], [f"could not connect: {error}"], False)
            return
        try:
            request = {"op": "sub", "subject": subject, "sid": "late", "positions": True}
            if from_pos is not None:
                request["from"] = from_pos
            client.send_all([dict(request, ref="late")])
            deadline = time.monotonic() + DELIVERY_SECONDS
            replied = False
            highest = 0
            while highest < last_seq or not replied:
                if time.monotonic() > deadline:
                    trouble.append(f"the subscriber got {len(events)} values, up to seq {highest}, in "
                                   f"{DELIVERY_SECONDS} s; the stream's last seq is {last_seq} "
                                   f"({state['messages']} values)")
                    break
                try:
                    lines = client.lines()
                except socket.timeout:
                    continue
                for line in lines:
                    if line.get("ref") == "late":
                        replied = True
                        if line.get("ok") is not True:
                            trouble.append(f"{json.dumps(request)} answered {json.dumps(line)}")
                            results[(node, subject)] = (events, trouble, False)
                            return
                        if from_pos is not None:
                            # Not resumed: the subscription starts as one without `from`.
                            resumed = line.get("resumed") is True
                            if resumed:
                                highest = int(from_pos.partition(":")[2])
                            else:
                                trouble.append(f"{json.dumps(request)} answered {json.dumps(line)}")
                        continue
                    if line.get("ev") != "next" or line.get("sid") != "late":
                        trouble.append(f"unexpected line {json.dumps(line)} after {len(events)} values")
                        continue
                    epoch, _, seq = line.get("pos", "?:-1").partition(":")
                    value = line.get("value")
                    if not isinstance(value, dict):
                        trouble.append(f"a value nobody sent: {json.dumps(line)}")
                        continue
                    events.append((value.get("w"), value.get("n"), int(seq), epoch))
                    highest = max(highest, int(seq))
            # Nothing more: no duplicate after the last value, nothing beyond the stream.
            if highest >= last_seq:
                client.socket.settimeout(SILENCE_SECONDS)
                try:
                    extra = client.lines()
                    trouble.append(f"more after seq {last_seq}, the stream's last: {json.dumps(extra[:3])}")
                except socket.timeout:
                    pass
        except (OSError, EOFError, ValueError) as error:
            trouble.append(f"the subscriber's connection failed after {len(events)} values: {error!r}")
        finally:
            client.close()
        results[(node, subject)] = (events, trouble, resumed)

    def check_values(self, where, subject, events, state, base=None):
        """The problems of one subscriber's values (`events`, (w, n, seq, epoch) each) of
        `subject`, whose stream holds `state`; `base`, when given, is what an earlier call
        returned for a prefix of `events` (checked then: only the rest is read). Returns the
        problems and what the next call's `base` can be."""
        problems = []

        def report(what, items):
            if items:
                shown = ", ".join(items[:8]) + (f", ... ({len(items)} in all)" if len(items) > 8 else "")
                problems.append(f"{where}: {what}: {shown}")

        start, seen, last_n = base or (0, {}, {})
        seen, last_n = dict(seen), dict(last_n)
        duplicates, unknown, bad_epoch, bad_seq, order = [], [], [], [], []
        previous_seq = events[start - 1][2] if start else 0
        for w, n, seq, epoch in events[start:]:
            if epoch != self.epochs[subject]:
                bad_epoch.append(f"{w}/{n} at {epoch}:{seq}")
            if seq <= previous_seq:
                bad_seq.append(f"{w}/{n} at seq {seq} after seq {previous_seq}")
            previous_seq = seq
            if (w, n) in seen:
                duplicates.append(f"{w}/{n} at seqs {seen[(w, n)]} and {seq}")
                continue
            seen[(w, n)] = seq
            if w not in self.sent[subject] or not isinstance(n, int) or not 1 <= n <= self.sent[subject][w]:
                unknown.append(f"{w}/{n} at seq {seq}")
                continue
            if n <= last_n.get(w, 0):
                order.append(f"{w}/{n} (seq {seq}) after {w}/{last_n[w]} (seq {seen[(w, last_n[w])]})")
            last_n[w] = max(n, last_n.get(w, 0))
        missing = [f"{w}/{n}" for w, answered in sorted(self.answered[subject].items())
                   for n in sorted(answered) if (w, n) not in seen]
        report("answered values missing", missing)
        report("values delivered twice", duplicates)
        report("values nobody sent", unknown)
        report("a writer's values out of its order", order)
        report("seqs not growing", bad_seq)
        report(f"positions not in the subject's epoch {self.epochs[subject]}", bad_epoch)
        if len(events) != state["messages"] and not duplicates:
            problems.append(f"{where}: {len(events)} values delivered, the stream holds {state['messages']} "
                            f"(seqs {state['first_seq']} to {state['last_seq']})")
        return problems, (len(events), seen, last_n)

    @staticmethod
    def compare_nodes(number, subject, sequences):
        problems = []
        if len(sequences) < 2:
            return problems
        first_node = next(iter(sequences))
        reference = sequences[first_node]
        for node, events in sequences.items():
            if events == reference:
                continue
            index = next((i for i, (x, y) in enumerate(zip(reference, events)) if x != y),
                         min(len(reference), len(events)))
            problems.append(
                f"round {number}, node {node}, {subject}: differs from node {first_node} at index {index}: node "
                f"{first_node} has {reference[index:index + 3]} ({len(reference)} values), node {node} has "
                f"{events[index:index + 3]} ({len(events)} values)")
        return problems


# Stopped from outside (SIGTERM): unwind, so the nodes and nats-server are stopped too; while a
# node starts, once its process is known.
STARTING = False
TERMINATED = False


def terminate(number, frame):
    global TERMINATED
    TERMINATED = True
    if not STARTING:
        sys.exit(128 + number)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runneld", default=".build/debug/runneld")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--max-kill-ms", type=int, default=700, help="the kill comes 150 ms to this after the start")
    parser.add_argument("--full-every", type=int, default=10,
                        help="a late subscriber reads every value every this many rounds and in the last "
                             "(the others resume from the position checked last)")
    parser.add_argument("--early-from", action="store_true",
                        help="the subscriber on a restarted node at once subscribes with `from` the last position "
                             "checked, as a client of the killed node reconnecting there would (and must be resumed)")
    parser.add_argument("--after-kill-ms", type=int, default=300, help="the survivors publish this long after it")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, terminate)
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"cluster-crash-harness: {args.rounds} rounds, 3 nodes, subjects {', '.join(SUBJECTS)} "
          f"({', '.join(sorted(DURABLE))} durable), loops {TEST_LOOPS}, seed {seed}", flush=True)
    started = time.monotonic()
    harness = Harness(args.runneld, seed)
    passed = failed = 0
    try:
        harness.start()
        harness.create_subjects()
        for number in range(1, args.rounds + 1):
            victim, answered, unknown, timings, problems = harness.round(
                number, args.max_kill_ms, args.after_kill_ms,
                full=number % args.full_every == 0 or number == args.rounds, early_from=args.early_from)
            status = "ok" if not problems else "FAILED"
            print(f"round {number}: {status}, node {victim} killed, {answered} values answered, {unknown} unknown; "
                  + ", ".join(f"{what} {seconds:.1f} s" for what, seconds in timings.items()), flush=True)
            for problem in problems:
                print("  " + problem, flush=True)
            if problems:
                failed += 1
                print(harness.logs(), flush=True)
            else:
                passed += 1
        for problem in harness.stop():
            print(problem, flush=True)
            failed += 1
    except Exception as error:  # noqa: BLE001 - the harness itself failed: say so, and fail
        print(f"FAILED: {error}", flush=True)
        failed += 1
    finally:
        harness.cleanup()
    print(f"{passed} rounds passed, {failed} failed in {time.monotonic() - started:.0f} s; {harness.answered_total} "
          f"values answered, {harness.unknown_total} unknown (sent to a killed node, unanswered), of which "
          f"{harness.stored - harness.answered_total} were kept", flush=True)
    for node, counts in harness.checks.items():
        print(f"node {node}: {counts['late']} late subscribers (every value), {counts['resumed']} resumed from the "
              f"last check, {counts['early']} subscribed right after its restart; {counts['values']} values read",
              flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
