"""Clusters (docs/protocol.md, "Clusters (version 1.2)"): runneld nodes sharing subjects through a real nats-server.

Each suite starts its own nats-server (nats_process.py) and the nodes it needs, on one machine.
The checks: `stats.cluster` naming the cluster and node and counting the nodes heard from, a
killed node dropping out; values of plain subjects published on any node reaching subscriptions
(named, patterns, with stages) on every node exactly once and in each publisher's order, `pub`'s
`receivers` counting only the node's own; a node holding one NATS subscription per subject or
pattern, and only while its clients subscribe (read from nats-server's /connz); two clusters of
different names on one nats-server sharing nothing; the surviving nodes going on when one is
killed; a lost link (nats-server stopped) reported by `stats` and /healthz, refusing with
`unavailable` what needs the cluster while local plain subjects go on, and announcing possibly
missed values with `dropped` once it is back; a node that cannot reach NATS or has a bad
`cluster_name` stopping at start; and a standalone node having no `cluster` in `stats`.

The cluster's one set of subjects: a `create` listed by every node within a second in its shape
and epoch, `kind_mismatch` against the cluster's definition on another node at once (and one
winner when two nodes create a name in two shapes at once); subjects made by `pub` or `sub`
(auto_create) listed everywhere as plain subjects; `complete`, `error` and `delete` on one node
ending or removing the subject on every node (terminal events, `terminated`, late subscribers,
`list`; made again after `delete`, a new epoch and stream). Retained subjects (JetStream, read
through nats-server's /jsz): values from publishers on two nodes kept in one order, late
subscribers on every node replayed the same values with the same positions; live subscribers
getting every value of a burst; a `pub` with `ref` answered only once the stream holds the value
(none while nats-server is frozen with SIGSTOP); positions resuming on any node exactly at the
edge of what is kept, and not from a dropped, future or foreign position; a behavior subject's
initial and current value on every node; retained subscribers told nothing while the link is
down and going on without duplicates once it is back, a memory stream lost by nats-server's
restart taking values again; durable subjects keeping values, positions and epoch across
restarts of nats-server and of every node; and a node killed and started again getting the
subjects and retained values the cluster made, changed, ended and deleted meanwhile.

Stages that read other subjects (`zipWith`, `merge`, `flattenMap`) see other nodes' values, and
the NATS subscriptions they needed end with them; a nats-server that stops reading (frozen)
does not hold a node's loop, and the values its send queue (`cluster_send_buffer_bytes`)
cannot hold are told to the other node's subscriber as `dropped`."""

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

import pytest

from nats_process import NatsServer, subject_matches
from runneld_process import Daemon, LineClient, freeze, poll_until, run_until_exit, stats

# Heartbeats every 2 s, a node counted while heard from in the last 10 s (docs/protocol.md).
COUNT_SECONDS = 6
DROP_OUT_SECONDS = 13
LINK_DOWN_SECONDS = 6
LINK_UP_SECONDS = 12


def node_config(nats_url, cluster_name, node_name, extra=""):
    """A node's config: `nats_url` a URL or a list of them (JSON's strings and arrays are TOML's)."""
    return f'cluster_nats = {json.dumps(nats_url)}\ncluster_name = "{cluster_name}"\nnode_name = "{node_name}"\n{extra}'


class Cluster:
    """One nats-server and the runneld nodes on it (`cluster["a"]` is node a's `Daemon`), with a
    line client per node for plain requests (`client("a")`) and room for what one check leaves
    to the next (`state`)."""

    def __init__(self, binary, nats):
        self.binary = binary
        self.nats = nats
        self.nodes = {}
        self.configs = {}
        self.cluster_of = {}
        self.killed = set()
        self.state = {}
        self._clients = {}

    def add(self, node, cluster_name, nats_url=None, extra=""):
        self.configs[node] = node_config(nats_url or self.nats.url, cluster_name, node, extra)
        self.nodes[node] = Daemon(self.binary, self.configs[node])
        self.cluster_of[node] = cluster_name
        return self.nodes[node]

    def __getitem__(self, node):
        return self.nodes[node]

    def client(self, node):
        if node not in self._clients:
            self._clients[node] = LineClient(self.nodes[node].port)
        return self._clients[node]

    def earlier(self, key):
        """What an earlier check of the suite left in `state`; AssertionError when it did not get
        that far."""
        assert key in self.state, f"an earlier check of this suite failed before making {key!r}"
        return self.state[key]

    def kill(self, node):
        """SIGKILL, as a machine dies; its directory goes too (no stop will remove it)."""
        self.nodes[node].kill()
        shutil.rmtree(self.nodes[node].directory, ignore_errors=True)
        self.killed.add(node)
        self._clients.pop(node, None)

    def restart(self, node, kill=False):
        """Stops the node (SIGTERM, or SIGKILL with `kill`, as a machine dies) and starts it again
        with the same config in the same directory (new ports), its link up."""
        old = self.nodes[node]
        client = self._clients.pop(node, None)
        if client:
            client.close()
        self.killed.add(node)  # until it runs again (a failed start leaves nothing to stop)
        if kill:
            old.kill()
        else:
            status = old.stop(keep_directory=True)
            assert status == 0, f"node {node} stopped with status {status}:\n" + "\n".join(old.log[-15:])
        try:
            self.nodes[node] = Daemon(self.binary, self.configs[node], directory=old.directory)
        except BaseException:
            shutil.rmtree(old.directory, ignore_errors=True)
            raise
        self.killed.discard(node)
        wait_for_link(self.nodes[node], "up", 10, f"node {node}'s link after its restart")
        return self.nodes[node]

    def value_subject(self, node, subject):
        """The NATS subject that node's values of `subject` travel on."""
        return f"runnel.{self.cluster_of[node]}.v.{subject}"

    def nats_subscriptions(self, node):
        return self.nats.subscriptions(f"runneld {node}")

    def logs(self):
        """The last lines of every node and of nats-server (a failed check's report shows them)."""
        parts = [f"--- node {name} (last lines):\n" + "\n".join(d.log[-15:]) for name, d in self.nodes.items()]
        return "\n".join(parts) + "\n--- nats-server (last lines):\n" + self.nats.log_tail(10)


@pytest.fixture(scope="class")
def c(request, binary, nats):
    """The suite's cluster: a nats-server (conftest.py's `nats`) and the nodes its class's
    `@pytest.mark.cluster(...)` names ((node name, cluster name) pairs, or with a third item of
    extra config), each node's link up. The suite's last check, `test_clean_stop`, stops every
    node not killed by a check; a node still running when the class ends (that check not run, or
    cut short) is stopped then, before nats-server."""
    cluster = Cluster(binary, nats)
    try:
        for node, cluster_name, *extra in request.node.get_closest_marker("cluster").args:
            cluster.add(node, cluster_name, extra=extra[0] if extra else "")
        for node in cluster.nodes:
            wait_for_link(cluster[node], "up", 10, f"node {node}'s link at start")
    except BaseException as error:
        logs = cluster.logs()
        for d in cluster.nodes.values():
            with contextlib.suppress(Exception):
                d.stop()
        raise RuntimeError(f"the cluster did not start: {error!r}\n{logs}") from error
    yield cluster
    for d in cluster.nodes.values():
        if d.process.poll() is None:
            with contextlib.suppress(Exception):
                d.stop()


def stop_nodes(cluster):
    """SIGTERM to every node not killed, all at once (a node's stop takes a while); an
    AssertionError naming each that did not exit with status 0 (a suite's `test_clean_stop`)."""
    failures = []
    for client in cluster._clients.values():
        client.close()

    def stop(node, d):
        exited = d.process.poll()
        try:
            status = d.stop()
        except Exception as error:  # noqa: BLE001 - a hung node is killed by stop; report it
            status = repr(error)
        if status != 0:
            failures.append(f"node {node} {'had exited' if exited is not None else 'stopped'} with status "
                            f"{status}:\n" + "\n".join(d.log[-15:]))

    threads = [threading.Thread(target=stop, args=item) for item in cluster.nodes.items()
               if item[0] not in cluster.killed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, "\n".join(failures)


def cluster_stats(d):
    current = stats(d)
    assert "cluster" in current, f"stats has no cluster member: {current}"
    return current["cluster"]


def wait_for_link(d, link, seconds, what):
    return poll_until(lambda: cluster_stats(d), lambda c: c["link"] == link, what, seconds)


def healthz(d):
    try:
        with urllib.request.urlopen(d.url + "/healthz", timeout=5) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def subscribe(d, subject, **fields):
    """A connection of its own holding one subscription (its sid in `.sid`); a value late by
    5 s is taken for lost."""
    client = LineClient(d.port, timeout=5)
    reply = client.request({"op": "sub", "subject": subject, **fields})
    assert reply["ok"], (subject, fields, reply)
    client.sid = reply["sid"]
    return client


def next_line(client, what, who=None):
    try:
        return client.line()
    except socket.timeout:
        raise AssertionError(f"{who or 'subscription ' + client.sid}: {what} nothing for "
                             f"{client.socket.gettimeout()} s") from None


def events(client, count, who=None):
    """The next `count` lines, each a `next` event of the client's subscription."""
    lines = []
    for _ in range(count):
        line = next_line(client, f"{len(lines)} of {count} events (the last {lines[-1:]}), then", who)
        assert line.get("ev") == "next" and line.get("sid") == client.sid, (
            f"expected a next event of {client.sid} after {len(lines)}: {line}")
        lines.append(line)
    return lines


def values(client, count, who=None):
    return [line["value"] for line in events(client, count, who)]


def expect_values(client, expected, who):
    """The subscription's next values are `expected` (a long list: the first difference told)."""
    got = values(client, len(expected), who)
    if got == expected:
        return
    if len(expected) <= 10:
        raise AssertionError(f"{who}: expected {expected}, got {got}")
    first = next(index for index, (mine, wanted) in enumerate(zip(got, expected)) if mine != wanted)
    raise AssertionError(f"{who}: from index {first} expected {expected[first:first + 5]}..., got "
                         f"{got[first:first + 5]}...")


def ok(reply):
    assert reply.get("ok") is True, f"refused: {reply}"
    return reply


def expect_silence(client, seconds=0.3):
    """Nothing more arrives for `seconds` (no duplicate, no stray value): a negative check needs
    a window, kept short."""
    assert not client.buffer.strip(), f"unexpected: {client.buffer[:300]}"
    timeout = client.socket.gettimeout()
    client.socket.settimeout(seconds)
    try:
        chunk = client.socket.recv(65536)
    except socket.timeout:
        return
    finally:
        client.socket.settimeout(timeout)
    raise AssertionError(f"unexpected after the expected values: {chunk[:300]!r}")


def publish_all(client, subject, items):
    """Pipelines a `pub` (without ref) of each item, then a ping: the first line back must be
    the ping's reply, so no pub failed."""
    client.socket.sendall(b"".join(
        json.dumps({"op": "pub", "subject": subject, "value": item}).encode() + b"\n" for item in items))
    reply = client.call({"op": "ping", "ref": "after-pubs"})
    assert reply.get("ref") == "after-pubs" and reply["ok"], f"a pub into {subject} failed: {reply}"


def pub(client, subject, value):
    return client.request({"op": "pub", "subject": subject, "value": value})


def expect_each_once_in_order(received, publishers, count, who):
    """`received` ({"p": publisher, "n": n} values) holds n = 0..count-1 of every publisher
    once, each publisher's in order."""
    seen = {p: 0 for p in publishers}
    for value in received:
        p, n = value["p"], value["n"]
        assert n == seen[p], f"{who}: from publisher {p} expected n={seen[p]} next, got n={n}"
        seen[p] += 1
    assert seen == {p: count for p in publishers}, f"{who}: {seen}"


def values_sent(d):
    """runnel_cluster_values_sent_total of node d."""
    with urllib.request.urlopen(d.url + "/metrics", timeout=5) as response:
        text = response.read().decode()
    return int(float(next(line.split()[-1] for line in text.splitlines()
                          if line.startswith("runnel_cluster_values_sent_total"))))


# --- what the link_loss checks share ------------------------------------------------------------


def expect_link_lost(c):
    assert not c.nats.running(), "nats-server is running (an earlier check failed before stopping it)"


def expect_unavailable(client, request):
    reply = client.request(request)
    assert not reply["ok"] and reply["code"] == "unavailable", (request, reply)


def expect_dropped_then(client, value, late=None):
    """A `dropped` event (`count`, when there, at least 1), then `value`; `late` (a value
    published while the link was down) may come between, once (a node may keep what it could
    not send, and send it when the link is back: the protocol does not forbid that)."""
    who = f"subscription {client.sid}"
    line = next_line(client, "", who)
    assert line.get("ev") == "dropped" and line.get("sid") == client.sid, f"{who}: expected dropped first: {line}"
    assert "count" not in line or (isinstance(line["count"], int) and line["count"] >= 1), line
    got = values(client, 1, who)
    if late is not None and got == [late]:
        print(f"{who}: {late!r}, published while the link was down, came after the dropped event")
        got = values(client, 1, who)
    assert got == [value], f"{who}: expected [{value!r}] after the dropped event, got {got}"


# --- what the retained checks share -------------------------------------------------------------

LIST_SECONDS = 1  # "a subject created on one node is listed by every node within a second"


def split_pos(pos):
    """(epoch, seq) of a position "EPOCH:SEQ"."""
    epoch, _, seq = pos.rpartition(":")
    assert epoch and seq.isdigit(), f"not a position: {pos!r}"
    return epoch, int(seq)


def listed(client, subject):
    """`subject`'s entry in the node's `list`, or None."""
    entries = [s for s in ok(client.request({"op": "list", "prefix": subject}))["subjects"] if s["subject"] == subject]
    return entries[0] if entries else None


def wait_listed(c, node, subject, predicate, what, seconds=LIST_SECONDS):
    """Polls node's `list` until `subject`'s entry (None when absent) satisfies `predicate`."""
    return poll_until(lambda: listed(c.client(node), subject), predicate, f"{what}: {subject} in node {node}'s list",
                      seconds)


def create(c, node, **fields):
    """`create` on `node` (it must succeed), then every live node lists the subject in that
    epoch: the contract gives a definition a second to reach every node, and a `pub` or `sub`
    on a node before it has makes a plain subject of that node's own (which the cluster's
    definition then replaces: check_a_sub_that_beats_the_definition_is_told_to_subscribe_again)."""
    subject = fields["subject"]
    ok(c.client(node).request({"op": "create", **fields}))
    epoch = split_pos(listed(c.client(node), subject)["pos"])[0]
    for other in c.nodes:
        if other not in c.killed:
            wait_listed(c, other, subject, lambda entry: entry is not None and split_pos(entry["pos"])[0] == epoch,
                        "the cluster's definition")


def shape(entry):
    """What every node must agree on about a subject (counts are each node's own)."""
    return None if entry is None else {key: entry.get(key) for key in ("kind", "capacity", "durable", "terminated")}


def pos_seq_at_least(pos):
    """A predicate: the entry's latest position is `pos`'s epoch and at least its seq (the
    node has every value up to `pos`)."""
    epoch, seq = split_pos(pos)
    return lambda entry: entry is not None and split_pos(entry["pos"])[0] == epoch and split_pos(entry["pos"])[1] >= seq


def caught_up(c, nodes, subject, pos, seconds=3):
    """Each of `nodes` lists `subject` with its latest value at `pos` at least (it delivers the
    stream's values from its own consumer, a moment after they were stored)."""
    for node in nodes:
        wait_listed(c, node, subject, pos_seq_at_least(pos), f"caught up with {pos}", seconds)


def pairs(lines):
    return [(line["value"], line["pos"]) for line in lines]


def late(d, subject, count, who, **fields):
    """A new subscription with positions: its first `count` events, then nothing more for a
    moment; (value, pos) pairs. The connection is closed."""
    client = subscribe(d, subject, positions=True, **fields)
    try:
        got = pairs(events(client, count, who))
        expect_silence(client)
        return got
    finally:
        client.close()


def terminal(client, who):
    line = next_line(client, "a terminal event, then", who)
    assert line.get("sid") == client.sid and line.get("ev") in ("completed", "error"), f"{who}: {line}"
    return line


def publish_with_refs(client, subject, items):
    """Pipelines a `pub` with a ref of each item, then reads every reply: all ok, in order."""
    client.socket.sendall(b"".join(
        json.dumps({"op": "pub", "subject": subject, "value": item, "ref": f"p{n}"}).encode() + b"\n"
        for n, item in enumerate(items)))
    for n in range(len(items)):
        reply = client.line()
        assert reply.get("ref") == f"p{n}" and reply.get("ok") is True, f"pub {n} into {subject}: {reply}"


def increasing(positions, who):
    """One epoch, seqs strictly increasing (skips allowed)."""
    epochs = {split_pos(pos)[0] for pos in positions}
    assert len(epochs) == 1, f"{who}: positions of several epochs: {positions}"
    seqs = [split_pos(pos)[1] for pos in positions]
    assert all(a < b for a, b in zip(seqs, seqs[1:])), f"{who}: seqs do not increase: {positions}"


def jetstream_streams(c):
    """{stream name: state} of nats-server's JetStream."""
    details = c.nats.monitor("/jsz?streams=1").get("account_details") or [{}]
    return {s["name"]: s["state"] for s in details[0].get("stream_detail") or []}


def stream_of(c, epoch):
    """The state of the one JetStream stream holding epoch `epoch`'s values, or None."""
    found = {name: state for name, state in jetstream_streams(c).items() if name.endswith("_" + epoch)}
    assert len(found) <= 1, found
    return next(iter(found.values()), None)


def stored_pos(c, subject):
    """The position of `subject`'s latest value as JetStream holds it: its epoch (a's `list`)
    and its stream's last sequence number (docs/protocol.md, "How this server does it": the
    stream's sequence numbers are the seqs)."""
    epoch = split_pos(listed(c.client("a"), subject)["pos"])[0]
    state = stream_of(c, epoch)
    assert state is not None, f"no stream of {subject}'s epoch {epoch}: {sorted(jetstream_streams(c))}"
    return f"{epoch}:{state['last_seq']}"


def publish_at_once(c, nodes, subject, count):
    """A publisher on each of `nodes`, all at once, each pipelining `count` pubs with refs
    ({"p": node, "n": n}) and reading every reply (all ok)."""
    failures = []

    def publish(node):
        client = LineClient(c[node].port)
        try:
            publish_with_refs(client, subject, [{"p": node, "n": n} for n in range(count)])
        except Exception as error:  # noqa: BLE001 - reported by the check
            failures.append(f"the publisher on {node}: {error!r}")
        finally:
            client.close()

    threads = [threading.Thread(target=publish, args=(node,)) for node in nodes]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not failures, failures


def end_setup(c, subject):
    """A replay subject made on a with two values, a subscriber (with positions) on every node
    having got them; {node: subscriber}, and the values' (value, pos) pairs."""
    create(c, "a", subject=subject, kind="replay", capacity=5)
    caught_up(c, "bc", subject, listed(c.client("a"), subject)["pos"])
    subscribers = {node: subscribe(c[node], subject, positions=True) for node in "abc"}
    publish_with_refs(c.client("b"), subject, ["one", "two"])
    kept = None
    for node, client in subscribers.items():
        got = pairs(events(client, 2, f"{subject}'s subscriber on {node}"))
        assert kept in (None, got), (node, got, kept)
        kept = got
    return subscribers, kept


def expect_terminated_everywhere(c, subject):
    for node in "abc":
        for request in ({"op": "pub", "subject": subject, "value": "late"}, {"op": "complete", "subject": subject},
                        {"op": "error", "subject": subject, "message": "again"}):
            reply = c.client(node).request(request)
            assert not reply["ok"] and reply["code"] == "terminated", (node, request, reply)
        entry = wait_listed(c, node, subject, lambda e: e is not None and e["terminated"], "ended")
        assert entry["kind"] == "replay", entry


# --- what the start checks use ------------------------------------------------------------------

def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.cluster(("a", "shared"), ("b", "shared"), ("c", "shared"))
class TestShared:
    """Three nodes, a b c, of cluster "shared"."""

    def test_stats_name_the_cluster_and_count_every_node(self, c):
        # Heartbeats every 2 s: three nodes started moments ago have heard from each other.
        for node in "abc":
            poll_until(lambda: cluster_stats(c[node]),
                       lambda s, node=node: s == {"name": "shared", "node": node, "link": "up", "nodes": 3},
                       f"node {node}'s stats.cluster", COUNT_SECONDS)

    def test_runnel_stats_shows_the_node_and_its_link(self, c):
        # The CLI built beside runneld prints stats.cluster as one line.
        cli = os.path.join(os.path.dirname(os.path.abspath(c.binary)), "runnel")
        result = subprocess.run([cli, "stats", "--server", f"127.0.0.1:{c['b'].port}"],
                                capture_output=True, text=True, timeout=10)
        assert result.returncode == 0, result
        lines = [line for line in result.stdout.splitlines() if line.startswith("cluster:")]
        assert len(lines) == 1, result.stdout
        shown = json.loads(lines[0].split(":", 1)[1])
        assert shown == {"name": "shared", "node": "b", "link": "up", "nodes": 3}, lines[0]

    def test_values_from_every_node_reach_every_node_once_in_order(self, c):
        # A publisher and a subscriber on each node, publishing at once: each subscriber (the
        # publisher's own node included) gets every value once, each publisher's in its order.
        subscribers = {node: subscribe(c[node], "shared.x") for node in "abc"}
        publishers = {node: LineClient(c[node].port) for node in "abc"}
        count = 300
        failures = []

        def publish(node):
            try:
                publish_all(publishers[node], "shared.x", [{"p": node, "n": n} for n in range(count)])
            except Exception as error:  # noqa: BLE001 - reported by the check
                failures.append(f"the publisher on {node}: {error!r}")

        threads = [threading.Thread(target=publish, args=(node,)) for node in "abc"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not failures, failures
        for node, client in subscribers.items():
            expect_each_once_in_order(values(client, 3 * count), "abc", count, f"the subscriber on {node}")
        for client in subscribers.values():
            expect_silence(client)
        for client in list(subscribers.values()) + list(publishers.values()):
            client.close()

    def test_a_value_published_right_after_the_sub_reply_arrives(self, c):
        # The sub reply promises every value published after it, on any node: b's NATS subscription
        # must be in place before b answers. A race loses only now and then, so many tries: on a
        # subject that exists already, a new one, a pattern. (A value a answered just before the sub
        # may still be on its way to NATS and reach the new subscription first: that one is let
        # pass, the protocol does not say when a value of another node counts as published.)
        publisher = c.client("a")
        subscriber = LineClient(c["b"].port, timeout=2)
        for n in range(15):
            ok(pub(publisher, f"race.known.{n}", "earlier"))
            for subscribed, published in ((f"race.known.{n}", f"race.known.{n}"), (f"race.new.{n}", f"race.new.{n}"),
                                          (f"race.p{n}.*", f"race.p{n}.x")):
                subscriber.sid = ok(subscriber.request({"op": "sub", "subject": subscribed}))["sid"]
                ok(pub(publisher, published, n))
                who = f"try {n}: {subscribed} on b, {published} published on a after the reply"
                got = values(subscriber, 1, who)
                if got == ["earlier"] and published.startswith("race.known"):
                    print(f"{who}: the value published before the sub came first")
                    got = values(subscriber, 1, who)
                assert got == [n], f"{who}: expected [{n}], got {got}"
                ok(subscriber.request({"op": "unsub", "sid": subscriber.sid}))
        subscriber.close()

    def test_patterns_and_stages_get_other_nodes_values(self, c):
        # A pattern on b and one on c, a filtered subscription on b: values published on a and c
        # reach them, each subject's in order, only those that match.
        star = subscribe(c["b"], "pat.*.t")
        tail = subscribe(c["c"], "pat.>")
        even = subscribe(c["b"], "pat.a.t", ops=[{"op": "filter", "expr": ".n % 2 == 0"}])
        on_a, on_c = LineClient(c["a"].port), LineClient(c["c"].port)
        publish_all(on_a, "pat.a.t", [{"n": n} for n in range(10)])
        publish_all(on_c, "pat.c.t", [{"n": n} for n in range(10)])
        publish_all(on_c, "pat.c.u", [{"n": n} for n in range(5)])

        def by_subject(lines):
            grouped = {}
            for line in lines:
                grouped.setdefault(line.get("subject"), []).append(line["value"]["n"])
            return grouped

        got = by_subject(events(star, 20))
        assert got == {"pat.a.t": list(range(10)), "pat.c.t": list(range(10))}, f"pat.*.t on b: {got}"
        got = by_subject(events(tail, 25))
        assert got == {"pat.a.t": list(range(10)), "pat.c.t": list(range(10)), "pat.c.u": list(range(5))}, (
            f"pat.> on c: {got}")
        got = [v["n"] for v in values(even, 5)]
        assert got == [0, 2, 4, 6, 8], f"pat.a.t filtered on b: {got}"
        for client in (star, tail, even):
            expect_silence(client)
        for client in (star, tail, even, on_a, on_c):
            client.close()

    def test_receivers_counts_only_this_nodes_subscriptions(self, c):
        # One subscription on a, two on b, a pattern on c: each node's pub counts its own only,
        # yet every subscription gets every value.
        subscriptions = [(node, subject, subscribe(c[node], subject))
                         for node, subject in (("a", "rc.x"), ("b", "rc.x"), ("b", "rc.x"), ("c", "rc.*"))]
        for node, expected in (("a", 1), ("b", 2), ("c", 1)):
            reply = pub(c.client(node), "rc.x", node)
            assert reply["ok"] and reply["receivers"] == expected, (node, reply)
        for node, subject, client in subscriptions:
            who = f"{subject} on {node} (rc.x published on a, b, c after the sub replies)"
            got = values(client, 3, who)
            assert Counter(got) == Counter("abc"), f"{who}: {got}"
            expect_silence(client)
            client.close()

    def test_a_node_holds_one_nats_subscription_per_subject_while_subscribed(self, c):
        # Two subscriptions of interest.x and one of the pattern interest.* on c: c holds exactly
        # one NATS subscription for each (none wider, such as runnel.shared.v.>); a and b, with
        # no subscriber, hold none that receives them; each goes once its last subscription does,
        # or its connection closes. (Polled: whether it is in place before the sub reply is
        # check_a_value_published_right_after_the_sub_reply_arrives's business.)
        wanted = c.value_subject("c", "interest.x")
        wanted_pattern = c.value_subject("c", "interest.*")

        def receiving(node, subject=wanted):
            return sorted(s for s in c.nats_subscriptions(node) if subject_matches(s, subject))

        def expect_on_c(expected, what):
            poll_until(lambda: receiving("c"), lambda subs: subs == sorted(expected),
                       f"c's NATS subscriptions {what}", 2)

        for node in "abc":
            assert receiving(node) == [], (node, c.nats_subscriptions(node))
        client = LineClient(c["c"].port)
        for sid in ("i1", "i2"):
            ok(client.request({"op": "sub", "subject": "interest.x", "sid": sid}))
        expect_on_c([wanted], "after two subs of interest.x")
        ok(client.request({"op": "sub", "subject": "interest.*", "sid": "i3"}))
        expect_on_c([wanted, wanted_pattern], "after a sub of interest.*")
        for node in "ab":
            assert receiving(node) == [], (node, c.nats_subscriptions(node))
        ok(client.request({"op": "unsub", "sid": "i1"}))
        ok(client.request({"op": "unsub", "sid": "i3"}))
        expect_on_c([wanted], "after the unsubs of one interest.x and of interest.*")
        assert receiving("c", c.value_subject("c", "interest.y")) == [], c.nats_subscriptions("c")
        ok(client.request({"op": "unsub", "sid": "i2"}))
        expect_on_c([], "after the last unsub")
        ok(client.request({"op": "sub", "subject": "interest.x", "sid": "i4"}))
        expect_on_c([wanted], "after a sub again")
        client.close()
        expect_on_c([], "after its connection closed")

    def test_a_node_sends_only_what_other_nodes_subscribe_to(self, c):
        # With its only subscriber on a, a sends nothing of own.x to NATS; once b subscribes
        # (by name, then c by pattern), every value goes and arrives; once they are gone, a stops.
        local = subscribe(c["a"], "own.x")
        publisher = c.client("a")
        before = values_sent(c["a"])
        for n in range(50):
            ok(pub(publisher, "own.x", n))
        assert values(local, 50, "own.x on a") == list(range(50))
        assert values_sent(c["a"]) == before, f"a sent {values_sent(c['a']) - before} values nobody else wants"
        for node, subject in (("b", "own.x"), ("c", "own.*")):
            remote = subscribe(c[node], subject)
            before = values_sent(c["a"])
            for n in range(50):
                ok(pub(publisher, "own.x", n))
            who = f"{subject} on {node}, own.x published on a"
            assert values(remote, 50, who) == list(range(50)), who
            assert values(local, 50, "own.x on a") == list(range(50))
            assert values_sent(c["a"]) == before + 50, (who, values_sent(c["a"]) - before)
            remote.close()

        def sent_by_one_more_pub():
            before = values_sent(c["a"])
            ok(pub(publisher, "own.x", "after"))
            values(local, 1, "own.x on a")
            return values_sent(c["a"]) - before

        poll_until(sent_by_one_more_pub, lambda sent: sent == 0, "a sending own.x after the remote subscribers left", 3)
        local.close()

    def test_a_subscription_made_again_is_not_told_of_values_it_never_wanted(self, c):
        # b subscribes, leaves while c stays (a goes on sending to c), subscribes again: b's new
        # subscription gets the next value, with no `dropped` for the values sent meanwhile.
        publisher = c.client("a")
        on_c = subscribe(c["c"], "again.x")
        on_b = subscribe(c["b"], "again.x")
        ok(pub(publisher, "again.x", 0))
        assert values(on_b, 1, "again.x on b") == [0]
        on_b.close()
        for n in range(1, 6):
            ok(pub(publisher, "again.x", n))
        assert values(on_c, 6, "again.x on c") == list(range(6))
        on_b = subscribe(c["b"], "again.x")
        ok(pub(publisher, "again.x", 6))
        assert values(on_b, 1, "again.x on b, subscribed again") == [6]
        for client in (on_b, on_c):
            client.close()

    def test_a_nodes_own_value_back_from_nats_is_not_delivered_again(self, c):
        # No echo keeps a node's values off the connection that sent them, but after a reconnect
        # what the earlier connection left unsent reaches NATS from a client NATS still holds
        # (its end of a cut link never saw the close) and comes back on the new one. A NATS
        # client of the test's own stands in for that client: a value in a's name never reaches
        # a's subscriber, the same value in an unknown instance's name does.
        joined = next(line for line in c["a"].log if "joined cluster" in line)
        instance = joined.split("instance=")[1].split()[0]
        on_a = subscribe(c["a"], "echo.x")
        nats = socket.create_connection(("127.0.0.1", c.nats.port), timeout=5)
        subject = c.value_subject("a", "echo.x")

        def send(origin, seq, value):
            payload = json.dumps(value).encode()
            nats.sendall(f"PUB {subject} {origin}.e1.{seq} {len(payload)}\r\n".encode() + payload + b"\r\n")

        try:
            nats.sendall(b'CONNECT {"verbose":false,"pedantic":false}\r\n')
            send("stranger-1", 1, "stranger")
            assert values(on_a, 1, "echo.x on a, a stranger's value") == ["stranger"]
            send(instance, 1, "echo")
            send("stranger-1", 2, "stranger again")
            assert values(on_a, 1, "echo.x on a, after a value in its own name") == ["stranger again"]
        finally:
            nats.close()
            on_a.close()

    def test_stages_that_read_other_subjects_see_other_nodes_values(self, c):
        # On b, a subscription to zip.l zips with zip.r: zip.l's values are published on a and
        # zip.r's on c, and b pairs them as one node would. The `sub` reply comes once NATS has
        # the subscriptions its stages need, so values published right after it are not missed.
        zipped = subscribe(c["b"], "zip.l", ops=[{"op": "zipWith", "subject": "zip.r"}])
        merged = subscribe(c["b"], "merge.x", ops=[{"op": "merge", "subjects": ["merge.y"]}])
        for n in range(3):
            ok(pub(c.client("a"), "zip.l", n))
            ok(pub(c.client("c"), "zip.r", 10 + n))
            ok(pub(c.client("c"), "merge.y", n))
        assert values(zipped, 3, "zip.l zipped with zip.r on b") == [[0, 10], [1, 11], [2, 12]]
        assert values(merged, 3, "merge.x merged with merge.y on b") == [0, 1, 2]
        # A subject a stage names at run time (flattenMap) is followed from then on.
        flat = subscribe(c["b"], "flat.src", ops=[{"op": "flattenMap", "expr": ".s"}])
        ok(pub(c.client("a"), "flat.src", {"s": "flat.target"}))
        deadline = time.monotonic() + 10
        flat.socket.settimeout(0.2)
        n = 0
        while True:
            ok(pub(c.client("c"), "flat.target", n))
            with contextlib.suppress(socket.timeout):
                line = flat.line()
                break
            assert time.monotonic() < deadline, "flat.target's values on c never reached b's flattenMap"
            n += 1
        assert line.get("ev") == "next" and isinstance(line["value"], int), line
        # Once the subscriptions end, b holds no NATS subscription for what their stages read.
        for client in (zipped, merged, flat):
            client.close()
        poll_until(lambda: c.nats_subscriptions("b"), lambda subs: not any(
            s.endswith((".zip.r", ".merge.y", ".flat.target")) for s in subs), "b's stage subscriptions ended", 10)

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "loss"), ("b", "loss"), ("c", "loss"))
class TestNodeLoss:
    """Three nodes, c killed."""

    def test_a_node_stalled_past_the_alive_time_is_told_it_may_have_missed_values(self, c):
        # b stops (SIGSTOP) for longer than a node counts as alive: a gives it up, with its
        # subscriptions, and sends it nothing more. When b runs again, a tells it so, and b's
        # subscriber gets a `dropped` event without count before its next value.
        subscriber = subscribe(c["b"], "stall.x")
        publisher = c.client("a")
        ok(pub(publisher, "stall.x", 0))
        assert values(subscriber, 1, "stall.x on b") == [0]
        alive = cluster_stats(c["a"])["nodes"]
        freeze(c["b"].process.pid)
        try:
            # a counts b out once it has been silent for 10 s, and gives it up (with its
            # subscriptions) at its next heartbeat tick, 2 s at most later: value 1 must follow
            # that tick, however late a loaded machine makes the count.
            poll_until(lambda: cluster_stats(c["a"])["nodes"], lambda n: n == alive - 1, "a counting b out", 20)
            time.sleep(3)
            ok(pub(publisher, "stall.x", 1))
        finally:
            os.kill(c["b"].process.pid, signal.SIGCONT)
        deadline = time.monotonic() + 10
        subscriber.socket.settimeout(0.2)
        n = 2
        while True:
            ok(pub(publisher, "stall.x", n))
            with contextlib.suppress(socket.timeout):
                first = subscriber.line()
                break
            assert time.monotonic() < deadline, "nothing reached b's subscriber after it ran again"
            n += 1
        assert first == {"ev": "dropped", "sid": subscriber.sid}, first
        subscriber.socket.settimeout(5)
        following = next_line(subscriber, "the value after the dropped event")
        assert following.get("ev") == "next" and following["value"] >= 2, following
        subscriber.close()

    def test_a_killed_node_does_not_stop_the_others(self, c):
        # a publishes steadily; c is killed a third of the way: the subscribers on a and b get
        # every value, in order.
        for node in "ab":
            poll_until(lambda: cluster_stats(c[node])["nodes"], lambda n: n == 3, f"node {node}'s count", COUNT_SECONDS)
        subscribers = [subscribe(c["a"], "loss.x"), subscribe(c["b"], "loss.x"), subscribe(c["c"], "loss.x")]
        publisher = LineClient(c["a"].port)
        count, batch = 3000, 100
        third = threading.Event()
        failures = []

        def publish():
            try:
                for start in range(0, count, batch):
                    publish_all(publisher, "loss.x", range(start, start + batch))
                    if start >= count // 3:
                        third.set()
                    time.sleep(0.02)
            except Exception as error:  # noqa: BLE001 - reported by the check
                failures.append(repr(error))
                third.set()

        thread = threading.Thread(target=publish)
        thread.start()
        assert third.wait(10), "the publisher did not get a third of the way"
        c.kill("c")
        c.state["killed_at"] = time.monotonic()
        thread.join()
        assert not failures, failures
        for index, client in enumerate(subscribers[:2]):
            expect_values(client, list(range(count)), f"the subscriber on {'ab'[index]}")
            expect_silence(client)
        for client in subscribers + [publisher]:
            client.close()

    def test_a_killed_node_drops_out_of_the_count(self, c):
        # Heard from in the last 10 s, heartbeats every 2 s: gone from the count within ~12 s, and
        # the two left still count each other.
        if "c" not in c.killed:
            c.kill("c")
            c.state["killed_at"] = time.monotonic()
        remaining = DROP_OUT_SECONDS - (time.monotonic() - c.state["killed_at"])
        for node in "ab":
            poll_until(lambda: cluster_stats(c[node])["nodes"], lambda n: n == 2, f"node {node}'s count",
                       max(remaining, 0.1))
        print(f"counted 2 nodes {time.monotonic() - c.state['killed_at']:.1f} s after the kill")
        for node in "ab":
            current = cluster_stats(c[node])
            assert current == {"name": "loss", "node": node, "link": "up", "nodes": 2}, current

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "red"), ("b", "red"), ("c", "blue"))
class TestTwoClusters:
    """Red a and b, blue c, on one nats-server."""

    def test_each_cluster_counts_only_its_own_nodes(self, c):
        for node in "ab":
            poll_until(lambda: cluster_stats(c[node]), lambda s: s["nodes"] == 2 and s["name"] == "red",
                       f"red node {node}'s stats.cluster", COUNT_SECONDS)
        # red's nodes have heard each other's heartbeats; blue must not have, for a heartbeat period.
        deadline = time.monotonic() + 2.2
        while time.monotonic() < deadline:
            current = cluster_stats(c["c"])
            assert current == {"name": "blue", "node": "c", "link": "up", "nodes": 1}, current
            time.sleep(0.2)

    def test_values_stay_in_their_cluster(self, c):
        red = subscribe(c["b"], "iso.x")
        blue = subscribe(c["c"], "iso.x")
        blue_pattern = subscribe(c["c"], "iso.>")
        for n in range(5):
            ok(pub(c.client("a"), "iso.x", n))
        expect_values(red, list(range(5)), "red's subscriber on b")
        ok(pub(c.client("c"), "iso.x", "blue"))
        ok(pub(c.client("a"), "iso.x", "red-end"))
        expect_values(blue, ["blue"], "blue's iso.x subscriber")
        expect_values(blue_pattern, ["blue"], "blue's iso.> subscriber")
        expect_values(red, ["red-end"], "red's subscriber on b")
        for client in (red, blue, blue_pattern):
            expect_silence(client)
            client.close()
        # Nor does either listen on the other's NATS subjects.
        for node, other in (("a", "c"), ("b", "c"), ("c", "a")):
            foreign = c.value_subject(other, "iso.x")
            assert not [s for s in c.nats_subscriptions(node) if subject_matches(s, foreign)], (
                node, c.nats_subscriptions(node))

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "link"), ("b", "link"))
class TestLinkLoss:
    """Nodes a and b, nats-server stopped and started again. The checks build on each other,
    in this order (what one leaves for the next is in `state`)."""

    def test_a_lost_link_is_reported(self, c):
        # Before: a replay subject, a plain one that b subscribes and a publishes to (it works),
        # a plain one with a subscriber on a. Then nats-server stops.
        on_a = c.client("a")
        create(c, "a", subject="r.x", kind="replay", capacity=10)
        c.state["remote"] = subscribe(c["b"], "ll.plain")
        # (In place before the reply is another check's business.)
        poll_until(lambda: c.nats_subscriptions("b"), lambda subs: c.value_subject("b", "ll.plain") in subs,
                   "b's NATS subscription of ll.plain", 2)
        ok(pub(on_a, "ll.plain", "before"))
        expect_values(c.state["remote"], ["before"], "ll.plain's subscriber on b")
        c.state["local"] = subscribe(c["a"], "ll.local")
        listed = on_a.request({"op": "list", "prefix": "ll.local"})
        assert listed["ok"] and "pos" in listed["subjects"][0], listed
        c.state["local_pos"] = listed["subjects"][0]["pos"]
        assert (healthz(c["a"]), healthz(c["b"])) == (200, 200), (healthz(c["a"]), healthz(c["b"]))
        c.nats.stop()
        stopped = time.monotonic()
        for node in "ab":
            wait_for_link(c[node], "down", max(LINK_DOWN_SECONDS - (time.monotonic() - stopped), 0.1),
                          f"node {node}'s link")
            poll_until(lambda: healthz(c[node]), lambda status: status == 503, f"node {node}'s /healthz",
                       max(LINK_DOWN_SECONDS - (time.monotonic() - stopped), 0.1))
        print(f"both down {time.monotonic() - stopped:.1f} s after nats-server stopped")

    def test_what_needs_the_cluster_fails_unavailable_while_down(self, c):
        expect_link_lost(c)
        on_a = c.client("a")
        expect_unavailable(on_a, {"op": "create", "subject": "r.y", "kind": "replay", "capacity": 10})
        expect_unavailable(on_a, {"op": "pub", "subject": "r.x", "value": 1})
        expect_unavailable(on_a, {"op": "sub", "subject": "ll.local", "from": c.earlier("local_pos")})
        expect_unavailable(on_a, {"op": "pub", "subject": "ll.new.pub", "value": 1})
        expect_unavailable(on_a, {"op": "sub", "subject": "ll.new.sub"})
        # ...and changed nothing.
        listed = [s["subject"] for s in ok(on_a.request({"op": "list", "prefix": "ll.new"}))["subjects"]]
        assert listed == [], f"created while down: {listed}"
        listed = [s["subject"] for s in ok(on_a.request({"op": "list", "prefix": "r."}))["subjects"]]
        assert listed == ["r.x"], f"created while down: {listed}"

    def test_retained_subs_and_terminations_fail_unavailable_while_down(self, c):
        # docs/protocol.md lists these too: a sub to a retained subject, complete, error, delete.
        expect_link_lost(c)
        on_a = c.client("a")
        expect_unavailable(on_a, {"op": "sub", "subject": "r.x"})
        expect_unavailable(on_a, {"op": "complete", "subject": "r.x"})
        expect_unavailable(on_a, {"op": "error", "subject": "r.x", "message": "no"})
        expect_unavailable(on_a, {"op": "delete", "subject": "r.x"})
        listed = on_a.request({"op": "list", "prefix": "r.x"})["subjects"]
        assert len(listed) == 1 and not listed[0]["terminated"], listed

    def test_plain_subjects_go_on_within_the_node_while_down(self, c):
        expect_link_lost(c)
        on_a = c.client("a")
        reply = pub(on_a, "ll.local", "while-down")
        assert reply["ok"] and reply["receivers"] == 1, reply
        expect_values(c.earlier("local"), ["while-down"], "ll.local's subscriber on a")
        # A value b's subscription misses (an existing plain subject, no subscriber on a).
        reply = pub(on_a, "ll.plain", "missed")
        assert reply["ok"] and reply["receivers"] == 0, reply

    def test_the_link_comes_back(self, c):
        assert not c.nats.running(), "nats-server was not stopped (an earlier check failed)"
        c.nats.start()
        started = time.monotonic()
        for node in "ab":
            wait_for_link(c[node], "up", max(LINK_UP_SECONDS - (time.monotonic() - started), 0.1),
                          f"node {node}'s link")
            poll_until(lambda: healthz(c[node]), lambda status: status == 200, f"node {node}'s /healthz", 2)
        print(f"both up {time.monotonic() - started:.1f} s after nats-server started")
        create(c, "a", subject="r.z", kind="replay", capacity=10)

    def test_a_remote_subscriber_is_told_it_may_have_missed_values(self, c):
        # b's subscription of ll.plain missed "missed" (published on a while the links were down):
        # a `dropped` comes before the first value published after the link came back.
        remote = c.earlier("remote")
        ok(pub(c.client("a"), "ll.plain", "after"))
        expect_dropped_then(remote, "after", late="missed")
        expect_silence(remote)

    def test_a_local_subscriber_is_told_too(self, c):
        # a's subscription of ll.local may have missed b's values while the link was down, so it
        # is told too, before its next value (even one from its own node).
        local = c.earlier("local")
        ok(pub(c.client("a"), "ll.local", "after"))
        expect_dropped_then(local, "after")

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "kept"), ("b", "kept"), ("c", "kept"))
class TestRetained:
    """Three nodes, a b c, of cluster "kept"."""

    def test_a_created_subject_is_listed_everywhere_in_the_clusters_shape(self, c):
        # Created on a: listed by b and c within a second, in its shape and under its epoch. A create
        # on b of another shape right after a's reply (b need not have heard yet: the cluster's
        # definition decides) is kind_mismatch, and b keeps a's shape; the same shape is ok.
        created = time.monotonic()
        create(c, "a", subject="def.x", kind="replay", capacity=5)
        wanted = {"kind": "replay", "capacity": 5, "durable": False, "terminated": False}
        for other in ({"kind": "replay", "capacity": 6}, {"kind": "behavior"}, {"kind": "subject"},
                      {"kind": "replay", "capacity": 5, "durable": True}):
            reply = c.client("b").request({"op": "create", "subject": "def.x", **other})
            assert not reply["ok"] and reply["code"] == "kind_mismatch", (other, reply)
        mine = listed(c.client("a"), "def.x")
        assert shape(mine) == wanted and split_pos(mine["pos"])[1] == 0, mine
        for node in "bc":
            entry = wait_listed(c, node, "def.x", lambda e: e is not None,
                                "created on a", max(LIST_SECONDS - (time.monotonic() - created), 0.1))
            assert shape(entry) == wanted and entry["pos"] == mine["pos"], (node, entry, mine)
        print(f"listed by b and c {time.monotonic() - created:.2f} s after a's create")
        for node in "bc":
            ok(c.client(node).request({"op": "create", "subject": "def.x", "kind": "replay", "capacity": 5}))
            reply = c.client(node).request({"op": "create", "subject": "def.x", "kind": "replay", "capacity": 4})
            assert not reply["ok"] and reply["code"] == "kind_mismatch", (node, reply)
        for node in "abc":
            entry = listed(c.client(node), "def.x")
            assert shape(entry) == wanted and entry["pos"] == mine["pos"], (node, entry)

    def test_two_creates_of_one_name_in_two_shapes_one_wins_everywhere(self, c):
        # a and b create the same new name at once, a replay of 5 and a behavior: one is ok, the
        # other kind_mismatch, and every node lists the winner's shape.
        tries = 6
        barrier = threading.Barrier(2)
        replies = {}
        requests = {"a": {"kind": "replay", "capacity": 5}, "b": {"kind": "behavior"}}

        def create(node):
            client = LineClient(c[node].port)
            try:
                for n in range(tries):
                    barrier.wait(5)
                    replies[node, n] = client.request({"op": "create", "subject": f"def.race.{n}", **requests[node]})
            finally:
                client.close()

        threads = [threading.Thread(target=create, args=(node,)) for node in "ab"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for n in range(tries):
            got = {node: replies.get((node, n)) for node in "ab"}
            winners = [node for node, reply in got.items() if reply and reply["ok"]]
            assert len(winners) == 1 and all(
                reply["code"] == "kind_mismatch" for node, reply in got.items() if node not in winners), (n, got)
            wanted = requests[winners[0]]["kind"]
            for node in "abc":
                entry = wait_listed(c, node, f"def.race.{n}", lambda e: e is not None and e["kind"] == wanted,
                                    f"{winners[0]} won")
                assert entry.get("capacity") == requests[winners[0]].get("capacity"), (node, entry)

    def test_retained_values_have_one_order_on_every_node(self, c):
        # Publishers on a and b at once (pipelined, with refs) into one replay subject of capacity
        # 5; once every node has the values, late subscribers with positions on a, b and c get the
        # same 5 values with the same positions, seqs increasing, the latest being `list`'s `pos`
        # everywhere; each publisher's among them are its last ones, in its order.
        create(c, "a", subject="one.x", kind="replay", capacity=5)
        count = 20
        publish_at_once(c, "ab", "one.x", count)
        latest = stored_pos(c, "one.x")
        caught_up(c, "abc", "one.x", latest)
        got = {node: late(c[node], "one.x", 5, f"a late subscriber of one.x on {node}") for node in "abc"}
        for node, sequence in got.items():
            assert sequence == got["a"], (
                f"one.x: node {node} replayed other values or positions than a:\n{sequence}\n{got['a']}")
        increasing([pos for _, pos in got["a"]], "one.x's late subscribers")
        assert got["a"][-1][1] == latest, f"the last replayed {got['a'][-1]}, the stream's latest {latest}"
        for node in "abc":
            assert listed(c.client(node), "one.x")["pos"] == latest, (node, listed(c.client(node), "one.x"))
        for p in "ab":
            mine = [value["n"] for value, _ in got["a"] if value["p"] == p]
            assert mine == list(range(count - len(mine), count)), f"publisher {p}'s values among the last 5: {mine}"

    def test_live_subscribers_of_a_retained_subject_get_every_value_of_a_burst(self, c):
        # Subscribers with positions on a, b and c from before; publishers on a and b at once
        # (pipelined) into a replay subject of capacity 5: every subscriber gets all 40 values
        # (not only what the buffer keeps), once, in one order with the same positions everywhere.
        create(c, "a", subject="burst.x", kind="replay", capacity=5)
        caught_up(c, "bc", "burst.x", listed(c.client("a"), "burst.x")["pos"])
        live = {node: subscribe(c[node], "burst.x", positions=True) for node in "abc"}
        count = 20
        publish_at_once(c, "ab", "burst.x", count)
        got = {}
        for node, client in live.items():
            lines = []
            client.socket.settimeout(2)
            with contextlib.suppress(socket.timeout):
                while len(lines) < 2 * count:
                    lines.append(client.line())
            client.socket.settimeout(5)
            shown = [(line["value"]["p"] + str(line["value"]["n"]), line["pos"]) if "value" in line else line
                     for line in lines]
            assert len(lines) == 2 * count and all(line.get("ev") == "next" for line in lines), (
                f"burst.x's subscriber on {node} got {len(lines)} events of {2 * count} values (then nothing for 2 s): "
                f"{shown}")
            got[node] = pairs(lines)
        for node, sequence in got.items():
            expect_each_once_in_order([value for value, _ in sequence], "ab", count, f"burst.x on {node}")
            increasing([pos for _, pos in sequence], f"burst.x on {node}")
            assert sequence == got["a"], f"burst.x: node {node} delivered another order than a:\n{sequence}\n{got['a']}"
            expect_silence(live[node])
        for client in live.values():
            client.close()

    def test_a_pub_into_a_retained_subject_is_answered_once_stored(self, c):
        # Each reply comes once JetStream holds the value: the subject's stream has it at once, and
        # a late subscriber on c gets it (its node may deliver it a moment later). While nats-server
        # is frozen (SIGSTOP) no reply comes; it comes once nats-server goes on.
        on_a = c.client("a")
        create(c, "a", subject="stored.x", kind="replay", capacity=100)
        epoch = split_pos(listed(on_a, "stored.x")["pos"])[0]
        # c knows the subject within a second (a sub before that would make a plain one there:
        # check_a_sub_that_beats_the_definition_is_told_to_subscribe_again).
        caught_up(c, "c", "stored.x", f"{epoch}:0")
        subscriber = LineClient(c["c"].port, timeout=2)
        previous = 0
        for n in range(8):
            ok(pub(on_a, "stored.x", n))
            state = stream_of(c, epoch)
            assert state is not None and state["messages"] == n + 1 and state["last_seq"] > previous, (
                f"the stream of stored.x after {n + 1} pubs answered: {state}")
            previous = state["last_seq"]
            subscriber.sid = ok(subscriber.request({"op": "sub", "subject": "stored.x", "sid": f"s{n}"}))["sid"]
            who = f"a subscriber on c right after pub {n} was answered on a"
            got = values(subscriber, n + 1, who)
            assert got == list(range(n + 1)), f"{who}: {got}"
            ok(subscriber.request({"op": "unsub", "sid": subscriber.sid}))
        subscriber.close()
        freeze(c.nats.pid)
        try:
            on_a.send({"op": "pub", "subject": "stored.x", "value": "frozen", "ref": "frozen"})
            on_a.socket.settimeout(0.5)
            try:
                early = on_a.line()
            except socket.timeout:
                early = None
            assert early is None, f"answered while nats-server was frozen: {early}"
        finally:
            os.kill(c.nats.pid, signal.SIGCONT)
            on_a.socket.settimeout(10)
        reply = on_a.line()
        assert reply.get("ref") == "frozen" and reply["ok"], reply
        assert stream_of(c, epoch)["messages"] == 9, stream_of(c, epoch)

    def test_a_sub_that_beats_the_definition_is_told_to_subscribe_again(self, c):
        # A create on a and, at once, a sub to the name on c, before c heard of it: c makes a plain
        # subject of its own. Whichever definition the cluster took first wins: c's (the create on
        # a is then `kind_mismatch`, and c's subscription stands), or a's, which replaces c's plain
        # subject: the subscription is not left on a subject that gets no values, it ends with
        # `subject_error` naming the cluster's shape, and a new sub gets the retained subject.
        on_a, on_c = c.client("a"), c.client("c")
        told = won = 0
        for n in range(20):
            name = f"race.def.{n}"
            on_a.send({"op": "create", "subject": name, "kind": "replay", "capacity": 3})
            subscriber = subscribe(c["c"], name)
            created = on_a.line()
            if not created.get("ok"):
                assert created.get("code") == "kind_mismatch", created
                won += 1
                subscriber.close()
                continue
            caught_up(c, "c", name, split_pos(listed(on_a, name)["pos"])[0] + ":0")
            if listed(on_c, name)["kind"] != "replay":
                continue
            subscriber.socket.settimeout(0.3)
            with contextlib.suppress(socket.timeout):
                line = subscriber.line()
                assert line.get("ev") == "error" and line.get("code") == "subject_error" and "replay" in line.get(
                    "message", ""), line
                told += 1
            subscriber.close()
        print(f"     of 20: c's plain subject won {won} times; {told} subs on c were told to subscribe again",
              flush=True)
        create(c, "a", subject="race.def.last", kind="replay", capacity=3)
        caught_up(c, "c", "race.def.last", split_pos(listed(on_a, "race.def.last")["pos"])[0] + ":0")
        ok(pub(on_a, "race.def.last", "v"))
        assert late(c["c"], "race.def.last", 1, "a subscriber of race.def.last on c")[0][0] == "v"

    def test_a_pub_that_beats_the_definition_is_answered_kind_mismatch(self, c):
        # A create on a and, at once, a pub with ref to the name on c, before c heard of it: c makes
        # a plain subject of its own and the value goes there. Whichever definition the cluster took
        # first wins; when it is a's, the pub is answered kind_mismatch (the value did not reach the
        # replay subject), never ok: every value answered ok reaches a late subscriber on a.
        on_a, on_c = c.client("a"), c.client("c")
        told = 0
        for n in range(20):
            name = f"race.pub.{n}"
            on_a.send({"op": "create", "subject": name, "kind": "replay", "capacity": 3})
            on_c.send({"op": "pub", "subject": name, "value": n, "ref": n})
            created, published = on_a.line(), on_c.line()
            if not created.get("ok"):
                assert created.get("code") == "kind_mismatch" and published.get("ok"), (created, published)
                continue
            if not published.get("ok"):
                assert published.get("code") == "kind_mismatch" and "replay" in published.get("message", ""), published
                told += 1
                continue
            got = [value for value, _ in late(c["a"], name, 1, f"a late subscriber of {name} on a")]
            assert got == [n], (name, got)
        print(f"     of 20: {told} pubs on c were answered kind_mismatch", flush=True)

    def test_positions_resume_on_any_node(self, c):
        # Values 0..7 into a replay subject of capacity 5 (3..7 kept), published on b, their
        # positions read on a (late subscribers after 0..4 and after 5..7). On c, from: value 4's
        # position resumes with 5 6 7; value 2's (every value after it still kept) with 3..7; value
        # 1's does not (3 is kept no more), nor a position beyond the latest or of another epoch;
        # the latest resumes with nothing, then live. On b (the publisher's) too.
        create(c, "a", subject="resume.x", kind="replay", capacity=5)
        publish_with_refs(c.client("b"), "resume.x", list(range(5)))
        caught_up(c, "a", "resume.x", stored_pos(c, "resume.x"))
        positions = [pos for _, pos in late(c["a"], "resume.x", 5, "a late subscriber of resume.x on a")]
        publish_with_refs(c.client("b"), "resume.x", list(range(5, 8)))
        caught_up(c, "abc", "resume.x", stored_pos(c, "resume.x"))
        got = late(c["a"], "resume.x", 5, "a late subscriber of resume.x on a")
        assert [value for value, _ in got] == list(range(3, 8)) and [pos for _, pos in got[:2]] == positions[3:], (
            got, positions)
        positions += [pos for _, pos in got[2:]]
        epoch, latest = split_pos(positions[-1])

        def resume(node, pos):
            client = LineClient(c[node].port, timeout=5)
            reply = ok(client.request({"op": "sub", "subject": "resume.x", "from": pos}))
            client.sid = reply["sid"]
            return reply.get("resumed"), client

        for node, index, expected in (("c", 4, [5, 6, 7]), ("c", 2, [3, 4, 5, 6, 7]), ("b", 4, [5, 6, 7])):
            who = f"from value {index}'s position {positions[index]} on {node}"
            resumed, client = resume(node, positions[index])
            assert resumed is True, f"{who}: resumed {resumed}"
            got = pairs(events(client, len(expected), who))
            assert got == list(zip(expected, positions[-len(expected):])), f"{who}: {got}"
            expect_silence(client)
            client.close()
        for pos, what in ((positions[1], "value 1's"), (f"{epoch}:{latest + 1000}", "beyond the latest"),
                          (f"Zz{epoch[2:]}:{latest}" if not epoch.startswith("Zz") else f"Yy{epoch[2:]}:{latest}",
                           "another epoch's")):
            who = f"from {what} position {pos} on c"
            resumed, client = resume("c", pos)
            assert resumed is False, f"{who}: resumed {resumed}"
            got = pairs(events(client, 5, who))
            assert got == list(zip(range(3, 8), positions[3:])), f"{who}: expected the usual replay, got {got}"
            expect_silence(client)
            client.close()
        resumed, client = resume("c", positions[-1])
        assert resumed is True, f"from the latest position on c: resumed {resumed}"
        expect_silence(client)
        ok(pub(c.client("a"), "resume.x", 8))
        got = pairs(events(client, 1, "from the latest position on c"))
        assert got[0][0] == 8 and split_pos(got[0][1])[0] == epoch and split_pos(got[0][1])[1] > latest, got
        client.close()

    def test_a_position_given_by_a_node_ahead_resumes_on_a_node_behind(self, c):
        # c is frozen while 2,000 values are stored through a; the moment it goes on, before its
        # copy of the stream can have caught up, a `sub` on c from the 1,990th value's position
        # (read on a) waits until c has delivered that far: resumed, with exactly the 10 after.
        # A position beyond what the stream holds is still told at once as not resumed.
        create(c, "a", subject="resume.lag", kind="replay", capacity=2000)
        client = LineClient(c["c"].port, timeout=10)
        freeze(c["c"].process.pid)
        try:
            publish_with_refs(c.client("a"), "resume.lag", list(range(2000)))
            positions = [pos for _, pos in late(c["a"], "resume.lag", 2000, "a late subscriber of resume.lag on a")]
        finally:
            os.kill(c["c"].process.pid, signal.SIGCONT)
        reply = ok(client.request({"op": "sub", "subject": "resume.lag", "sid": "r", "from": positions[1989]}))
        client.sid = "r"
        assert reply.get("resumed") is True, f"from the 1,990th value's position on c, just woken: {reply}"
        got = pairs(events(client, 10, "from the 1,990th value's position on c"))
        assert got == list(zip(range(1990, 2000), positions[1990:])), got
        expect_silence(client)
        epoch, latest = split_pos(positions[-1])
        started = time.monotonic()
        reply = ok(client.request({"op": "sub", "subject": "resume.lag", "sid": "b", "from": f"{epoch}:{latest + 1000}"}))
        assert reply.get("resumed") is False and time.monotonic() - started < 1, (reply, time.monotonic() - started)
        client.close()

    def test_a_behavior_subjects_value_is_the_clusters(self, c):
        # Created with a value on a: a subscriber on c gets it first (seq 0); after a pub on b,
        # subscribers everywhere get the new value, and a late one on a gets only it. A create on c
        # with another value changes nothing.
        create(c, "a", subject="beh.x", kind="behavior", value={"v": 0})
        initial = listed(c.client("a"), "beh.x")["pos"]
        epoch = split_pos(initial)[0]
        assert split_pos(initial)[1] == 0, initial
        wait_listed(c, "c", "beh.x", lambda e: e is not None and e["kind"] == "behavior", "created on a")
        live = {node: subscribe(c[node], "beh.x", positions=True) for node in "ac"}
        for node, client in live.items():
            got = pairs(events(client, 1, f"beh.x's subscriber on {node}"))
            assert got == [({"v": 0}, initial)], f"beh.x on {node}: expected the initial value first, got {got}"
        ok(pub(c.client("b"), "beh.x", {"v": 1}))
        got = {node: pairs(events(client, 1, f"beh.x's subscriber on {node}")) for node, client in live.items()}
        assert got["a"] == got["c"] and got["a"][0][0] == {"v": 1}, got
        newest = got["a"][0][1]
        assert split_pos(newest)[0] == epoch and split_pos(newest)[1] > 0, newest
        for client in live.values():
            client.close()
        ok(c.client("c").request({"op": "create", "subject": "beh.x", "kind": "behavior", "value": {"v": 9}}))
        caught_up(c, "b", "beh.x", newest)
        for node in "abc":
            assert late(c[node], "beh.x", 1, f"a late subscriber on {node}") == [({"v": 1}, newest)], node

    def test_complete_on_one_node_ends_the_subject_everywhere(self, c):
        subscribers, kept = end_setup(c, "end.c")
        ok(c.client("a").request({"op": "complete", "subject": "end.c"}))
        for node, client in subscribers.items():
            line = terminal(client, f"end.c's subscriber on {node}")
            assert line == {"ev": "completed", "sid": client.sid}, (node, line)
            client.close()
        expect_terminated_everywhere(c, "end.c")
        for node in "bc":
            client = subscribe(c[node], "end.c", positions=True)
            who = f"a late subscriber of end.c on {node}"
            assert pairs(events(client, 2, who)) == kept, who
            assert terminal(client, who) == {"ev": "completed", "sid": client.sid}, who
            client.close()

    def test_error_on_one_node_ends_the_subject_everywhere(self, c):
        subscribers, kept = end_setup(c, "end.e")
        ok(c.client("a").request({"op": "error", "subject": "end.e", "message": "boom"}))
        for node, client in subscribers.items():
            line = terminal(client, f"end.e's subscriber on {node}")
            assert line.get("ev") == "error" and line.get("code") == "subject_error" and line.get("message") == "boom", (
                node, line)
            client.close()
        expect_terminated_everywhere(c, "end.e")
        client = subscribe(c["c"], "end.e", positions=True)
        assert pairs(events(client, 2, "a late subscriber of end.e on c")) == kept
        line = terminal(client, "a late subscriber of end.e on c")
        assert line.get("ev") == "error" and line.get("code") == "subject_error" and line.get("message") == "boom", line
        client.close()

    def test_delete_on_one_node_removes_the_subject_everywhere(self, c):
        # Deleted on c: the subscribers on a and b complete, a and b list it no more within a
        # second, its stream goes; made again on a, it is a new subject: a new epoch, none of the
        # old values, and the old positions do not resume.
        subscribers, kept = end_setup(c, "end.d")
        old_epoch = split_pos(kept[0][1])[0]
        deleted = time.monotonic()
        ok(c.client("c").request({"op": "delete", "subject": "end.d"}))
        for node, client in subscribers.items():
            line = terminal(client, f"end.d's subscriber on {node}")
            assert line == {"ev": "completed", "sid": client.sid}, (node, line)
            client.close()
        for node in "abc":
            wait_listed(c, node, "end.d", lambda e: e is None, "deleted on c",
                        max(LIST_SECONDS - (time.monotonic() - deleted), 0.1))
        poll_until(lambda: stream_of(c, old_epoch), lambda state: state is None, "end.d's old stream", 2)
        create(c, "a", subject="end.d", kind="replay", capacity=5)
        new_epoch = split_pos(listed(c.client("a"), "end.d")["pos"])[0]
        assert new_epoch != old_epoch, f"made again with the old epoch {old_epoch}"
        caught_up(c, "b", "end.d", f"{new_epoch}:0")
        ok(pub(c.client("b"), "end.d", "three"))
        watcher = subscribe(c["a"], "end.d", positions=True)
        got = pairs(events(watcher, 1, "end.d's new subscriber on a"))
        watcher.close()
        assert got[0][0] == "three" and split_pos(got[0][1])[0] == new_epoch, got
        caught_up(c, "c", "end.d", got[0][1])
        assert late(c["c"], "end.d", 1, "a late subscriber of the new end.d on c") == got
        client = LineClient(c["c"].port, timeout=5)
        reply = ok(client.request({"op": "sub", "subject": "end.d", "from": kept[0][1]}))
        assert reply.get("resumed") is False, f"the old subject's position resumed in the new one: {reply}"
        client.close()

    def test_a_subject_made_by_pub_or_sub_is_the_clusters(self, c):
        # auto_create: a pub on a to a new name, a sub on b to another: every node lists them as
        # plain subjects within a second, and a create of another kind is kind_mismatch anywhere.
        made = time.monotonic()
        ok(pub(c.client("a"), "auto.p", 1))
        subscriber = subscribe(c["b"], "auto.s")
        for node in "abc":
            for subject in ("auto.p", "auto.s"):
                entry = wait_listed(c, node, subject, lambda e: e is not None, "made by a pub or sub",
                                    max(LIST_SECONDS - (time.monotonic() - made), 0.1))
                assert entry["kind"] == "subject" and not entry["terminated"], (node, entry)
        for node, subject in (("c", "auto.p"), ("a", "auto.s"), ("b", "auto.p")):
            reply = c.client(node).request({"op": "create", "subject": subject, "kind": "replay", "capacity": 5})
            assert not reply["ok"] and reply["code"] == "kind_mismatch", (node, subject, reply)
            ok(c.client(node).request({"op": "create", "subject": subject, "kind": "subject"}))
        subscriber.close()

    def test_a_restarted_node_gets_the_clusters_subjects_and_values(self, c):
        # c is killed; while it is down, a makes a subject and publishes, another subject is
        # deleted and another completed. c started again with its config: it lists what the
        # cluster has (and not the deleted one), and late subscribers on it get the retained
        # values with a's positions.
        on_a = c.client("a")
        for subject in ("rs.kept", "rs.gone", "rs.ended"):
            create(c, "a", subject=subject, kind="replay", capacity=5)
        publish_with_refs(on_a, "rs.kept", list(range(3)))
        publish_with_refs(on_a, "rs.ended", ["e"])
        caught_up(c, "c", "rs.kept", listed(on_a, "rs.kept")["pos"])
        c["c"].kill()
        c.killed.add("c")
        on_b = c.client("b")
        create(c, "b", subject="rs.new", kind="behavior", value="initial")
        publish_with_refs(on_b, "rs.kept", list(range(3, 8)))
        ok(on_b.request({"op": "delete", "subject": "rs.gone"}))
        ok(on_b.request({"op": "complete", "subject": "rs.ended"}))
        caught_up(c, "a", "rs.kept", stored_pos(c, "rs.kept"))
        kept = late(c["a"], "rs.kept", 5, "a late subscriber of rs.kept on a")
        assert [value for value, _ in kept] == list(range(3, 8)), kept
        started = time.monotonic()
        c.restart("c", kill=True)
        print(f"c's link up {time.monotonic() - started:.1f} s after its start")
        caught_up(c, "c", "rs.kept", kept[-1][1], seconds=5)
        for subject in ("rs.kept", "rs.new", "rs.ended"):
            mine, theirs = listed(c.client("c"), subject), listed(on_a, subject)
            assert shape(mine) == shape(theirs) and mine["pos"] == theirs["pos"], (subject, mine, theirs)
        assert listed(c.client("c"), "rs.gone") is None, listed(c.client("c"), "rs.gone")
        assert late(c["c"], "rs.kept", 5, "a late subscriber of rs.kept on c") == kept
        assert [value for value, _ in late(c["c"], "rs.new", 1, "a late subscriber of rs.new on c")] == ["initial"]
        client = subscribe(c["c"], "rs.ended")
        assert values(client, 1, "a late subscriber of rs.ended on c") == ["e"]
        assert terminal(client, "a late subscriber of rs.ended on c") == {"ev": "completed", "sid": client.sid}
        client.close()

    def test_clean_stop(self, c):
        stop_nodes(c)


@pytest.mark.cluster(("a", "kept"), ("b", "kept"))
class TestRetainedRestarts:
    """Nodes a and b; nats-server and the nodes restarted. The checks build on each other, in
    this order (what one leaves for the next is in `state`)."""

    def test_retained_subscribers_get_nothing_while_the_link_is_down(self, c):
        # A durable and a memory replay subject with a subscriber on b each, 3 values published on
        # a; nats-server stops: the subscribers get nothing (no value again, no end) while it is
        # down; it starts again and both links come back. The durable subject's subscriber still
        # gets nothing; the memory one's stream is gone with the server's memory (the next check).
        on_a = c.client("a")
        for subject, durable in (("kd.r", True), ("km.r", False)):
            create(c, "a", subject=subject, kind="replay", capacity=10, durable=durable)
            caught_up(c, "b", subject, listed(on_a, subject)["pos"])
            subscriber = subscribe(c["b"], subject, positions=True)
            publish_with_refs(on_a, subject, [0, 1, 2])
            c.state[subject] = (subscriber, pairs(events(subscriber, 3, f"{subject}'s subscriber on b")))
        c.nats.stop()
        stopped = time.monotonic()
        for node in "ab":
            wait_for_link(c[node], "down", max(LINK_DOWN_SECONDS - (time.monotonic() - stopped), 0.1),
                          f"node {node}'s link")
        for subject in ("kd.r", "km.r"):
            expect_silence(c.state[subject][0], 0.5)
        c.nats.start()
        started = time.monotonic()
        for node in "ab":
            wait_for_link(c[node], "up", max(LINK_UP_SECONDS - (time.monotonic() - started), 0.1),
                          f"node {node}'s link")
        expect_silence(c.state["kd.r"][0], 0.2)

    def test_a_durable_replay_subscriber_goes_on_after_the_link_is_back(self, c):
        # Values published on a once its link is back reach b's subscriber, in order, after those
        # it had, none again; the positions go on in the same epoch.
        subscriber, had = c.earlier("kd.r")
        publish_with_refs(c.client("a"), "kd.r", [3, 4, 5])
        got = pairs(events(subscriber, 3, "kd.r's subscriber on b after the link came back"))
        assert [value for value, _ in got] == [3, 4, 5], f"expected [3, 4, 5] after {had}, got {got}"
        increasing([pos for _, pos in had + got], "kd.r's subscriber on b")
        expect_silence(subscriber)
        assert late(c["a"], "kd.r", 6, "a late subscriber of kd.r on a") == had + got

    def test_a_memory_replay_subject_takes_values_again_after_nats_restarts(self, c):
        # nats-server kept km.r's stream in memory: the restart lost it. The subject goes on in a new
        # epoch (docs/protocol.md, "Clusters"): b's subscriber is told with a `subject_error` end
        # (never silence, never the old values again), a pub into km.r works again once the links
        # are back, and a new subscriber gets the new values in the new epoch.
        subscriber, had = c.earlier("km.r")
        ended = next_line(subscriber, "km.r's subscriber on b: the end saying the values were lost, then")
        assert ended.get("ev") == "error" and ended.get("code") == "subject_error", ended
        old_epoch = had[0][1].split(":")[0]
        on_a = c.client("a")
        poll_until(lambda: pub(on_a, "km.r", 3), lambda reply: reply["ok"],
                   "pub into km.r after nats-server's restart", 5)
        publish_with_refs(on_a, "km.r", [4, 5])
        got = late(c["b"], "km.r", 3, "a late subscriber of km.r on b")
        assert [value for value, _ in got] == [3, 4, 5], got
        assert all(pos.split(":")[0] != old_epoch for _, pos in got), (old_epoch, got)

    def test_a_durable_subjects_values_survive_restarts_of_nats_and_every_node(self, c):
        # A durable replay (capacity 5, 7 values) and a durable behavior subject: after nats-server
        # restarts, then after every node restarts, late subscribers on every node get the same
        # values with the same positions (same epoch), a kept position resumes, and new values
        # count on in that epoch.
        for subject in ("km.r", "kd.r"):
            with contextlib.suppress(AssertionError):
                c.earlier(subject)[0].close()
        on_a = c.client("a")
        create(c, "a", subject="dur.r", kind="replay", capacity=5, durable=True)
        create(c, "a", subject="dur.b", kind="behavior", value="v0", durable=True)
        create(c, "a", subject="mem.r", kind="replay", capacity=5)
        for subject, items in (("dur.r", list(range(7))), ("dur.b", ["v1", "v2"]), ("mem.r", [0, 1])):
            publish_with_refs(on_a, subject, items)
        kept = {}
        for subject, count in (("dur.r", 5), ("dur.b", 1)):
            caught_up(c, "a", subject, stored_pos(c, subject))
            kept[subject] = late(c["a"], subject, count, f"a late subscriber of {subject} on a")
        assert [value for value, _ in kept["dur.r"]] == [2, 3, 4, 5, 6] and kept["dur.b"][0][0] == "v2", kept

        def expect_kept(when):
            for subject, count in (("dur.r", 5), ("dur.b", 1)):
                caught_up(c, "ab", subject, kept[subject][-1][1], seconds=5)
                for node in "ab":
                    entry = listed(c.client(node), subject)
                    assert entry["durable"] is True and entry["pos"] == kept[subject][-1][1], (when, node, entry)
                    got = late(c[node], subject, count, f"a late subscriber of {subject} on {node} {when}")
                    assert got == kept[subject], f"{subject} on {node} {when}: expected {kept[subject]}, got {got}"

        c.nats.stop()
        c.nats.start()
        started = time.monotonic()
        for node in "ab":
            wait_for_link(c[node], "up", max(LINK_UP_SECONDS - (time.monotonic() - started), 0.1),
                          f"node {node}'s link")
        for subject, count in (("dur.r", 5), ("dur.b", 1)):
            state = stream_of(c, split_pos(kept[subject][-1][1])[0])
            # The stream keeps at least the subject's capacity (more: a window for slow consumers).
            assert state is not None and state["messages"] >= count and state["last_seq"] == split_pos(
                kept[subject][-1][1])[1], f"{subject}'s stream after nats-server restarted: {state}"
        expect_kept("after nats-server restarted")
        for node in "ab":
            c.restart(node)
        expect_kept("after every node restarted too")
        client = LineClient(c["b"].port, timeout=5)
        reply = ok(client.request({"op": "sub", "subject": "dur.r", "from": kept["dur.r"][1][1]}))
        client.sid = reply["sid"]
        assert reply.get("resumed") is True, f"from {kept['dur.r'][1][1]} after the restarts: {reply}"
        assert pairs(events(client, 3, "dur.r resumed on b")) == kept["dur.r"][2:]
        ok(pub(c.client("a"), "dur.r", 7))
        got = pairs(events(client, 1, "dur.r resumed on b"))
        epoch, seq = split_pos(kept["dur.r"][-1][1])
        assert got[0][0] == 7 and split_pos(got[0][1])[0] == epoch and split_pos(got[0][1])[1] > seq, got
        client.close()

    def test_clean_stop(self, c):
        stop_nodes(c)


class TestStart:
    """Nodes that must not start, and a standalone one."""

    def test_an_unreachable_nats_stops_the_node_naming_the_url(self, binary):
        url = f"nats://127.0.0.1:{free_port()}"
        status, seconds, err, out = run_until_exit(binary, f'cluster_nats = "{url}"\ncluster_connect_timeout = 2\n', 10)
        print(f"status {status} after {seconds:.1f} s")
        assert status not in (None, 0), (status, err, out)
        assert 1.5 <= seconds <= 6.5, f"exited after {seconds:.1f} s with cluster_connect_timeout = 2"
        assert url in err, f"stderr does not name {url}: {err!r}"

    def test_a_bad_cluster_name_stops_the_node_naming_the_key(self, binary):
        # The name is checked at start, before any attempt to reach NATS (which would take the
        # default 10 s here and name the URL).
        url = f"nats://127.0.0.1:{free_port()}"
        for name in ("bad name!", "x" * 33, ""):
            status, seconds, err, out = run_until_exit(binary, f'cluster_nats = "{url}"\ncluster_name = "{name}"\n', 8)
            assert status not in (None, 0) and seconds < 5, (name, status, seconds, err, out)
            assert "cluster_name" in err and "unknown key" not in err, (name, err)

    def test_a_list_of_urls_is_accepted(self, binary):
        # cluster_nats as a list; an unreachable first URL does not keep the node from the second.
        with NatsServer() as nats:
            dead = f"nats://127.0.0.1:{free_port()}"
            d = Daemon(binary, node_config([dead, nats.url], "listed", "l"))
            try:
                reached = wait_for_link(d, "up", 10, "the link")
                assert reached["nodes"] == 1, reached
            finally:
                assert d.stop() == 0, d.log[-15:]

    def test_a_standalone_node_has_no_cluster_member(self, binary):
        d = Daemon(binary, "")
        try:
            current = stats(d)
            assert "cluster" not in current, current
            assert healthz(d) == 200, healthz(d)
        finally:
            assert d.stop() == 0, d.log[-15:]


@pytest.mark.cluster(("a", "send", "cluster_send_buffer_bytes = 16777216"), ("b", "send"))
class TestSendQueue:
    """Two nodes, a's send queue 16 MiB (`cluster_send_buffer_bytes`): more than the sockets hold."""

    def test_a_nats_that_stops_reading_does_not_hold_the_loop(self, c):
        # b subscribes; a takes 32 MiB of values for it while nats-server is frozen (SIGSTOP), so
        # nothing reads a's link, and a client of a subscribes to a subject new to a (a NATS
        # subscription to make). a's loop goes on answering pings at once (cnats, which writes
        # the socket itself when its buffer is full, runs off the loop); the values a's send
        # queue cannot hold are counted and not sent, and once nats-server runs again the `sub`
        # is answered, and b's subscriber is told the gap (`dropped`) before the values that
        # follow.
        subscriber = subscribe(c["b"], "flood.x")
        publisher = c.client("a")
        # a sends b nothing until it knows b subscribes: publish until a value arrives.
        deadline = time.monotonic() + 10
        subscriber.socket.settimeout(0.2)
        while True:
            ok(pub(publisher, "flood.x", {"n": -1}))
            with contextlib.suppress(socket.timeout):
                first = subscriber.line()
                break
            assert time.monotonic() < deadline, "b's subscriber got nothing of a's values"
        assert first.get("ev") == "next", first
        subscriber.socket.settimeout(0.05)
        with contextlib.suppress(socket.timeout):
            while True:
                subscriber.line()  # the other values of the wait, if any
        pad = "x" * 16384
        flood = b"".join(
            json.dumps({"op": "pub", "subject": "flood.x", "value": {"n": n, "pad": pad}}).encode() + b"\n"
            for n in range(2000))
        flooder = LineClient(c["a"].port)
        pinger = LineClient(c["a"].port, timeout=3)
        freeze(c.nats.pid)
        try:
            sender = threading.Thread(target=flooder.socket.sendall, args=(flood,), daemon=True)
            sender.start()
            time.sleep(0.3)
            newcomer = LineClient(c["a"].port, timeout=10)
            newcomer.send({"op": "sub", "subject": "flood.new", "ref": "new"})
            slowest = 0.0
            until = time.monotonic() + 1.5
            while sender.is_alive() or time.monotonic() < until:
                started = time.monotonic()
                try:
                    reply = pinger.call({"op": "ping"})
                except socket.timeout:
                    raise AssertionError("a's loop answered no ping for 3 s while nats-server was frozen") from None
                assert reply.get("ok"), reply
                slowest = max(slowest, time.monotonic() - started)
                time.sleep(0.02)
            assert slowest < 1.0, f"a ping took {slowest:.2f} s while nats-server was frozen"
            # Every pub taken: a ping on the flooder's own connection comes after them.
            assert flooder.call({"op": "ping", "ref": "after"}).get("ref") == "after"
            with urllib.request.urlopen(c["a"].url + "/metrics", timeout=5) as response:
                text = response.read().decode()
            dropped = int(float(next(line.split()[-1] for line in text.splitlines()
                                     if line.startswith("runnel_cluster_values_dropped_total"))))
            assert dropped > 0, "a sent every value though its send queue holds 16 MiB of the 32"
        finally:
            os.kill(c.nats.pid, signal.SIGCONT)
        assert ok(newcomer.line()).get("ref") == "new"
        newcomer.close()
        ok(pub(publisher, "flood.x", {"n": "after"}))
        subscriber.socket.settimeout(10)
        told, last = False, -1
        while True:
            line = next_line(subscriber, "the values after nats-server ran again")
            if line.get("ev") == "dropped":
                told = True
                continue
            assert line.get("ev") == "next", line
            n = line["value"]["n"]
            if n == "after":
                break
            assert n > last, f"value {n} after {last}"
            last = n
        assert told, "b's subscriber was not told of the values a did not send"
        flooder.close()
        pinger.close()
        subscriber.close()

    def test_clean_stop(self, c):
        stop_nodes(c)
