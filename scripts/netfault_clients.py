"""The clients of scripts/netfault-harness.py: a subscriber that records every line it gets (and
can roam to another node, resuming with `from`), and a writer that publishes numbered values with
`ref` at a steady rate and records every answer. What they record is what scripts/netfault_check.py
checks. Not run on its own.
"""

import socket
import threading
import time

from netfault_check import Written

# Pubs a writer has unanswered at most.
WINDOW = 16


class Subscriber(threading.Thread):
    """One subscription on a connection of its own, each line recorded as netfault_check reads
    it. With `epoch` it asks for positions (a retained subject's). `move(at, targets, until)`
    makes it roam: at `at` it closes its connection and subscribes with `from` its last position
    on targets[0], then, while answered `unavailable`, on the next target 0.5 s later."""

    def __init__(self, connect, name, node, subject, epoch=None):
        super().__init__(daemon=True)
        self.connect, self.label, self.node, self.subject, self.epoch = connect, name, node, subject, epoch
        self.events, self.latest = [], {}
        self.highest, self.replies, self.last_pos = 0, 0, None
        self.done, self.moving, self.client = threading.Event(), None, None

    def subscribe(self, node, from_pos=None):
        self.node = node
        self.client = self.connect(node, timeout=0.2)
        request = {"op": "sub", "subject": self.subject, "sid": "s", "ref": "sub"}
        if self.epoch is not None:
            request["positions"] = True
        if from_pos is not None:
            request["from"] = from_pos
        self.client.send(request)

    def move(self, at, targets, until):
        self.moving = (at, targets, until)

    def run(self):
        while not self.done.is_set():
            if not (self.roam(*self.moving) if self.moving is not None else self.read()):
                return

    def read(self):
        """Takes the next line (False when the connection failed)."""
        try:
            self.take(self.client.line())
        except socket.timeout:
            pass
        except ValueError as error:
            self.events.append(("odd", f"a line that is not JSON: {error}"))
        except (OSError, EOFError) as error:
            if not self.done.is_set():
                self.events.append(("closed", f"its connection to node {self.node} failed: {error!r}"))
            return False
        return True

    def roam(self, at, targets, until):
        """Leaves, and subscribes again (see the class); False when a connection failed."""
        self.moving = None
        self.client.close()
        self.events.append(("left", self.node))
        from_pos = self.last_pos or f"{self.epoch}:0"
        for target in targets:
            while time.monotonic() < at and not self.done.is_set():
                time.sleep(0.05)
            replies = self.replies
            try:
                self.subscribe(target, from_pos)
            except OSError as error:
                self.events.append(("closed", f"could not connect to node {target}: {error!r}"))
                return False
            while self.replies == replies and time.monotonic() < until and not self.done.is_set():
                if not self.read():
                    return False
            answer = [e for e in self.events if e[0] == "sub"][-1][2] if self.replies > replies else {}
            if answer.get("code") != "unavailable":
                return True
            self.client.close()
            at = time.monotonic() + 0.5
        return True

    def take(self, line):
        if line.get("ref") == "sub":
            self.replies += 1
            self.events.append(("sub", self.node, line))
            return
        value = line.get("value")
        if line.get("sid") != "s" or line.get("ev") not in ("next", "dropped"):
            self.events.append(("odd", line))
        elif line["ev"] == "dropped":
            count = line.get("count")
            if count is not None and not (isinstance(count, int) and count >= 1):
                self.events.append(("odd", line))
            self.events.append(("dropped", count))
        elif not isinstance(value, dict):
            self.events.append(("odd", line))
        else:
            seq = None
            if self.epoch is not None:
                epoch, _, number = str(line.get("pos")).rpartition(":")
                if epoch != self.epoch or not number.isdigit():
                    self.events.append(("odd", f"a position not in epoch {self.epoch}: {line}"))
                    return
                seq = self.highest = int(number)
                self.last_pos = line["pos"]
            w, n = value.get("w"), value.get("n")
            if isinstance(n, int):
                self.latest[w] = max(n, self.latest.get(w, 0))
            self.events.append(("next", w, n, seq))

    def stop(self):
        self.done.set()
        self.join(5)
        self.client.close()

    def path(self):
        """Where it went and what its `sub`s there were answered, after the first."""
        steps = []
        for event in self.events:
            if event[0] == "left":
                steps.append(f"left {event[1]}")
            elif event[0] == "sub" and steps:
                reply = event[2]
                resumed = "resumed" if reply.get("resumed") else "not resumed"
                steps.append(f"{resumed if reply.get('ok') else reply.get('code')} on {event[1]}")
        return ", ".join(steps) or "stayed"


class Writer(threading.Thread):
    """Publishes `{"w": name, "n": n}` into `subject` with ref n on `client`, n = 1, 2, ..., `rate`
    a second, WINDOW at most unanswered, until `stop` is set; then reads the answers still due
    until `drain_until`, and closes the connection. `answers`: n -> the reply's code (`ok` when
    ok); `refused`: n -> (seconds into the round it was sent and answered, the reply) of each not
    ok; `pending`: n -> when it was sent, of each not answered (yet)."""

    def __init__(self, client, name, node, subject, rate, stop, started):
        super().__init__(daemon=True)
        self.client, self.label, self.node, self.subject = client, name, node, subject
        self.rate, self.stop, self.started = rate, stop, started
        self.sent, self.pending, self.answers, self.refused = 0, {}, {}, {}
        self.problems, self.drain_until = [], 0

    def run(self):
        due = time.monotonic()
        try:
            while not self.stop.is_set():
                now = time.monotonic()
                if len(self.pending) < WINDOW and now >= due:
                    self.sent += 1
                    self.pending[self.sent] = now - self.started
                    value = {"w": self.label, "n": self.sent}
                    self.client.send({"op": "pub", "subject": self.subject, "value": value, "ref": self.sent})
                    due = max(due + 1 / self.rate, now - 0.1)
                    continue
                self.read(min(max(due - now, 0.001), 0.05) if len(self.pending) < WINDOW else 0.05)
            while self.pending and time.monotonic() < self.drain_until:
                self.read(0.05)
        except (OSError, EOFError, ValueError) as error:
            self.problems.append(f"its connection failed: {error!r}")
        finally:
            self.client.close()

    def read(self, seconds):
        self.client.socket.settimeout(seconds)
        try:
            line = self.client.line()
        except socket.timeout:
            return
        ref = line.get("ref")
        if ref not in self.pending:
            self.problems.append(f"a line that answers no pending pub: {line}")
            return
        sent_at = self.pending.pop(ref)
        self.answers[ref] = "ok" if line.get("ok") is True else str(line.get("code"))
        if line.get("ok") is not True:
            self.refused[ref] = (sent_at, time.monotonic() - self.started, line)

    def written(self):
        return Written(self.label, self.node, self.sent, self.answers)

    def evidence(self):
        """Its first pubs refused, and those never answered: which, and when."""
        lines = [f"{self.label} on node {self.node}: pub n={n} sent at {sent:.2f} s, answered at {answered:.2f} s: "
                 f"{reply}" for n, (sent, answered, reply) in sorted(self.refused.items())[:3]]
        if self.pending:
            times = sorted(self.pending.values())
            lines.append(f"{self.label} on node {self.node}: {len(self.pending)} pubs never answered "
                         f"(n={min(self.pending)} to {max(self.pending)}), sent {times[0]:.2f} to {times[-1]:.2f} s "
                         "into the round")
        return lines
