#!/usr/bin/env python3
"""Kills runneld with SIGKILL while it takes acknowledged writes to durable subjects, over and
over, and checks after every restart that each subject holds exactly what it should.

    scripts/crash-harness.py [--runneld PATH] [--rounds N] [--seed S] [--fsync always]

Each round starts runneld (fsync = always) on the same data directory, and one publisher
thread per subject sends pipelined `pub`s with refs: the values 1, 2, 3, ... of that subject,
continuing across rounds, a window of them in flight. At a random moment the daemon is killed
with SIGKILL. After the restart, for every subject:

- its values, replayed to a new subscription with positions, are consecutive numbers ending
  at some L with (last acknowledged) <= L <= (last sent): nothing acknowledged is lost, nothing
  is duplicated or reordered (a value sent but not acknowledged may or may not be there);
- a replay subject holds exactly its last min(capacity, L) values, a behavior subject its
  last (or its initial 0 before any);
- every value's seq is its number (seqs count publishes, one each), and the epoch is the one
  the subject had before the kill (fsync = always keeps epochs across any stop);
- `PRAGMA integrity_check` on the database file is `ok`.

The next round's publishers go on from L + 1. Exit status 0 when every round passed.
Prints one line per round and `N passed, N failed` at the end.
"""

import argparse
import os
import random
import shutil
import sqlite3
import sys
import tempfile
import threading
import time

# The one way the Python tests start runneld, the black-box suites' (Tests/blackbox).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "Tests", "blackbox"))
from runneld_process import Daemon, LineClient  # noqa: E402

REPLAY_CAPACITY = 5
WINDOW = 16


class Publisher(threading.Thread):
    """Publishes one subject's next numbers, pipelined, until its connection dies."""

    def __init__(self, port, subject, first):
        super().__init__(daemon=True)
        self.port = port
        self.subject = subject
        self.next = first
        self.last_sent = first - 1
        self.last_acked = first - 1
        self.error = None

    def run(self):
        try:
            client = LineClient(self.port, no_delay=True)
        except OSError:
            return
        in_flight = 0
        try:
            while True:
                while in_flight < WINDOW:
                    client.send({"op": "pub", "subject": self.subject, "value": self.next, "ref": self.next})
                    self.last_sent = self.next
                    self.next += 1
                    in_flight += 1
                reply = client.line()
                if reply.get("ok") is not True or reply.get("ref") != self.last_acked + 1:
                    self.error = f"{self.subject}: unexpected reply {reply} after {self.last_acked}"
                    return
                self.last_acked = reply["ref"]
                in_flight -= 1
        except (OSError, EOFError, ValueError):
            return  # the daemon was killed


def check_subject(client, name, kind, epoch, acked, sent):
    """The subject's retained values after a restart; returns (problems, last value, epoch)."""
    listing = client.call({"op": "list", "prefix": name, "ref": "l"})
    entry = next((e for e in listing.get("subjects", []) if e["subject"] == name), None)
    if entry is None:
        return [f"{name}: missing after the restart: {listing}"], None, epoch
    pos_epoch, _, pos_seq = entry["pos"].partition(":")
    last = int(pos_seq)
    expected_count = min(REPLAY_CAPACITY, last) if kind == "replay" else 1
    sid = "check-" + name
    reply = client.call({"op": "sub", "subject": name, "sid": sid, "positions": True, "ref": sid})
    if reply.get("ok") is not True:
        return [f"{name}: sub failed: {reply}"], None, epoch
    values = []
    for _ in range(expected_count):
        event = client.line()
        if event.get("ev") != "next" or event.get("sid") != sid:
            return [f"{name}: expected a value, got {event}"], None, epoch
        values.append(event)
    client.call({"op": "unsub", "sid": sid, "ref": "u"})
    problems = []
    if epoch is not None and pos_epoch != epoch:
        problems.append(f"{name}: epoch changed from {epoch} to {pos_epoch}")
    if not acked <= last <= sent:
        problems.append(f"{name}: latest value {last}, acknowledged {acked}, sent {sent}")
    numbers = [event["value"] for event in values]
    if kind == "behavior" and last == 0:
        wanted = [0]
    else:
        wanted = list(range(last - expected_count + 1, last + 1))
    if numbers != wanted:
        problems.append(f"{name}: values {numbers}, wanted {wanted}")
    for event in values:
        seq = int(event.get("pos", ":-1").partition(":")[2])
        if seq != event["value"]:
            problems.append(f"{name}: value {event['value']} has position {event.get('pos')}")
    return problems, last, pos_epoch


def integrity(path):
    database = sqlite3.connect(path)
    try:
        return database.execute("PRAGMA integrity_check").fetchone()[0]
    finally:
        database.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runneld", default=".build/debug/runneld")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--subjects", type=int, default=6, help="half replay, half behavior")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument(
        "--fsync", default="always", choices=["always", "everysec"],
        help="everysec is a control: its epochs change after a kill, which the harness must report")
    parser.add_argument("--max-kill-ms", type=int, default=400)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"crash-harness: {args.rounds} rounds, {args.subjects} subjects, seed {seed}", flush=True)

    work = tempfile.mkdtemp(prefix="runnel-crash-")
    data = os.path.join(work, "data")
    # The harness writes it to work/runneld.toml, DATA_DIR being work/data.
    config = f'data_dir = "DATA_DIR"\nfsync = "{args.fsync}"\nlog_level = "notice"\n'
    subjects = []
    for index in range(args.subjects):
        kind = "replay" if index % 2 == 0 else "behavior"
        subjects.append({"name": f"crash.{kind}.{index}", "kind": kind, "next": 1, "epoch": None})

    passed = failed = 0
    daemon = None
    try:
        daemon = Daemon(args.runneld, config, directory=work, http=False)
        setup = LineClient(daemon.port, no_delay=True)
        for subject in subjects:
            request = {"op": "create", "subject": subject["name"], "kind": subject["kind"], "durable": True,
                       "ref": subject["name"]}
            if subject["kind"] == "replay":
                request["capacity"] = REPLAY_CAPACITY
            else:
                request["value"] = 0
            reply = setup.call(request)
            if reply.get("ok") is not True:
                raise RuntimeError(f"create failed: {reply}")
        setup.close()
        for round_number in range(1, args.rounds + 1):
            publishers = [Publisher(daemon.port, s["name"], s["next"]) for s in subjects]
            for publisher in publishers:
                publisher.start()
            time.sleep(rng.uniform(0.02, args.max_kill_ms / 1000))
            daemon.kill()
            for publisher in publishers:
                publisher.join(timeout=10)
            problems = [p.error for p in publishers if p.error]
            check = integrity(os.path.join(data, "runnel.db"))
            if check != "ok":
                problems.append(f"integrity_check after the kill: {check}")
            daemon = Daemon(args.runneld, config, directory=work, http=False)
            client = LineClient(daemon.port, no_delay=True)
            acked_total = 0
            for subject, publisher in zip(subjects, publishers):
                found, last, epoch = check_subject(
                    client, subject["name"], subject["kind"], subject["epoch"], publisher.last_acked,
                    publisher.last_sent)
                problems += found
                acked_total += publisher.last_acked - subject["next"] + 1
                if last is not None:
                    subject["next"] = last + 1
                subject["epoch"] = epoch
            client.close()
            status = "ok" if not problems else "FAILED"
            print(f"round {round_number}: {status}, {acked_total} values acknowledged", flush=True)
            for problem in problems:
                print("  " + problem, flush=True)
            if problems:
                failed += 1
            else:
                passed += 1
        status = daemon.stop(keep_directory=True)
        daemon = None
        if status != 0:
            print("runneld did not stop cleanly", flush=True)
            failed += 1
        check = integrity(os.path.join(data, "runnel.db"))
        if check != "ok":
            print(f"integrity_check after the clean stop: {check}", flush=True)
            failed += 1
    finally:
        if daemon is not None and daemon.process.poll() is None:
            daemon.kill()
        shutil.rmtree(work, ignore_errors=True)
    print(f"{passed} passed, {failed} failed", flush=True)
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
