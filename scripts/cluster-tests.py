#!/usr/bin/env python3
"""Clusters (docs/protocol.md, "Clusters: many machines on NATS"): runneld nodes sharing subjects through a real nats-server.

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
"""

import contextlib
import functools
import json
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections import Counter

from nats_process import NatsServer, subject_matches
from runneld_process import TEST_LOOPS, Daemon, LineClient, Suite, main, poll_until, stats

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
        self.cluster_of = {}
        self.killed = set()
        self.state = {}
        self._clients = {}

    def add(self, node, cluster_name, nats_url=None, extra=""):
        self.nodes[node] = Daemon(self.binary, node_config(nats_url or self.nats.url, cluster_name, node, extra))
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

    def value_subject(self, node, subject):
        """The NATS subject that node's values of `subject` travel on."""
        return f"runnel.{self.cluster_of[node]}.v.{subject}"

    def nats_subscriptions(self, node):
        return self.nats.subscriptions(f"runneld {node}")

    def logs(self):
        parts = [f"--- node {name} (last lines):\n" + "\n".join(d.log[-15:]) for name, d in self.nodes.items()]
        return "\n".join(parts) + "\n--- nats-server (last lines):\n" + self.nats.log_tail(10)


@contextlib.contextmanager
def cluster_started(binary, nodes):
    """A nats-server and `nodes` ((node name, cluster name) pairs, or with a third item of
    extra config), each node's link up; then every node not killed by a check is stopped and
    must exit with status 0 (the suite's clean_stop), and nats-server is stopped."""
    nats = NatsServer()
    cluster = Cluster(binary, nats)
    try:
        for node, cluster_name, *extra in nodes:
            cluster.add(node, cluster_name, extra=extra[0] if extra else "")
        for node in cluster.nodes:
            wait_for_link(cluster[node], "up", 10, f"node {node}'s link at start")
    except BaseException as error:
        logs = cluster.logs()
        for d in cluster.nodes.values():
            with contextlib.suppress(Exception):
                d.stop()
        nats.close()
        raise RuntimeError(f"the cluster did not start: {error!r}\n{logs}") from error
    try:
        yield cluster
    finally:
        try:
            stop_nodes(cluster)
        finally:
            # Even when the stop was cut short (--timeout, SIGTERM): nothing is left running.
            for d in cluster.nodes.values():
                if d.process.poll() is None:
                    d.process.kill()
            nats.close()


def stop_nodes(cluster):
    """SIGTERM to every node not killed, all at once (a node's stop takes a while); an
    AssertionError naming each that did not exit with status 0."""
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


def with_logs(check):
    """A check that, when it fails, prints the last lines of every node and of nats-server."""
    @functools.wraps(check)
    def run(cluster):
        try:
            check(cluster)
        except BaseException:
            print(cluster.logs())
            raise
    return run


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


# --- suite "shared": three nodes, a b c, of cluster "shared" ------------------------------------

def check_stats_name_the_cluster_and_count_every_node(c):
    # Heartbeats every 2 s: three nodes started moments ago have heard from each other.
    for node in "abc":
        poll_until(lambda: cluster_stats(c[node]),
                   lambda s, node=node: s == {"name": "shared", "node": node, "link": "up", "nodes": 3},
                   f"node {node}'s stats.cluster", COUNT_SECONDS)


def check_values_from_every_node_reach_every_node_once_in_order(c):
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


def check_a_value_published_right_after_the_sub_reply_arrives(c):
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


def check_patterns_and_stages_get_other_nodes_values(c):
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


def check_receivers_counts_only_this_nodes_subscriptions(c):
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


def check_a_node_holds_one_nats_subscription_per_subject_while_subscribed(c):
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
        poll_until(lambda: receiving("c"), lambda subs: subs == sorted(expected), f"c's NATS subscriptions {what}", 2)

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


# --- suite "node_loss": three nodes, c killed ---------------------------------------------------

def check_a_killed_node_does_not_stop_the_others(c):
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


def check_a_killed_node_drops_out_of_the_count(c):
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


# --- suite "two_clusters": red a and b, blue c, on one nats-server ------------------------------

def check_each_cluster_counts_only_its_own_nodes(c):
    for node in "ab":
        poll_until(lambda: cluster_stats(c[node]), lambda s: s["nodes"] == 2 and s["name"] == "red",
                   f"red node {node}'s stats.cluster", COUNT_SECONDS)
    # red's nodes have heard each other's heartbeats; blue must not have, for a heartbeat period.
    deadline = time.monotonic() + 2.2
    while time.monotonic() < deadline:
        current = cluster_stats(c["c"])
        assert current == {"name": "blue", "node": "c", "link": "up", "nodes": 1}, current
        time.sleep(0.2)


def check_values_stay_in_their_cluster(c):
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


# --- suite "link_loss": nodes a and b, nats-server stopped and started again --------------------
# The checks build on each other, in this order (what one leaves for the next is in `state`).

def check_a_lost_link_is_reported(c):
    # Before: a replay subject, a plain one that b subscribes and a publishes to (it works),
    # a plain one with a subscriber on a. Then nats-server stops.
    on_a = c.client("a")
    ok(on_a.request({"op": "create", "subject": "r.x", "kind": "replay", "capacity": 10}))
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


def expect_link_lost(c):
    assert not c.nats.running(), "nats-server is running (an earlier check failed before stopping it)"


def expect_unavailable(client, request):
    reply = client.request(request)
    assert not reply["ok"] and reply["code"] == "unavailable", (request, reply)


def check_what_needs_the_cluster_fails_unavailable_while_down(c):
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


def check_retained_subs_and_terminations_fail_unavailable_while_down(c):
    # docs/protocol.md lists these too: a sub to a retained subject, complete, error, delete.
    expect_link_lost(c)
    on_a = c.client("a")
    expect_unavailable(on_a, {"op": "sub", "subject": "r.x"})
    expect_unavailable(on_a, {"op": "complete", "subject": "r.x"})
    expect_unavailable(on_a, {"op": "error", "subject": "r.x", "message": "no"})
    expect_unavailable(on_a, {"op": "delete", "subject": "r.x"})
    listed = on_a.request({"op": "list", "prefix": "r.x"})["subjects"]
    assert len(listed) == 1 and not listed[0]["terminated"], listed


def check_plain_subjects_go_on_within_the_node_while_down(c):
    expect_link_lost(c)
    on_a = c.client("a")
    reply = pub(on_a, "ll.local", "while-down")
    assert reply["ok"] and reply["receivers"] == 1, reply
    expect_values(c.earlier("local"), ["while-down"], "ll.local's subscriber on a")
    # A value b's subscription misses (an existing plain subject, no subscriber on a).
    reply = pub(on_a, "ll.plain", "missed")
    assert reply["ok"] and reply["receivers"] == 0, reply


def check_the_link_comes_back(c):
    assert not c.nats.running(), "nats-server was not stopped (an earlier check failed)"
    c.nats.start()
    started = time.monotonic()
    for node in "ab":
        wait_for_link(c[node], "up", max(LINK_UP_SECONDS - (time.monotonic() - started), 0.1), f"node {node}'s link")
        poll_until(lambda: healthz(c[node]), lambda status: status == 200, f"node {node}'s /healthz", 2)
    print(f"both up {time.monotonic() - started:.1f} s after nats-server started")
    ok(c.client("a").request({"op": "create", "subject": "r.z", "kind": "replay", "capacity": 10}))


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


def check_a_remote_subscriber_is_told_it_may_have_missed_values(c):
    # b's subscription of ll.plain missed "missed" (published on a while the links were down):
    # a `dropped` comes before the first value published after the link came back.
    remote = c.earlier("remote")
    ok(pub(c.client("a"), "ll.plain", "after"))
    expect_dropped_then(remote, "after", late="missed")
    expect_silence(remote)


def check_a_local_subscriber_is_told_too(c):
    # a's subscription of ll.local may have missed b's values while the link was down, so it
    # is told too, before its next value (even one from its own node).
    local = c.earlier("local")
    ok(pub(c.client("a"), "ll.local", "after"))
    expect_dropped_then(local, "after")


# --- suite "start": nodes that must not start, and a standalone one -----------------------------

def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def run_node(binary, toml, seconds):
    """runneld on `toml` as Daemon starts it, but with stderr apart; (status or None when it was
    still running after `seconds` (then killed), seconds taken, stderr, stdout)."""
    with tempfile.TemporaryDirectory(prefix="runneld-test-") as directory:
        config = f"{directory}/runneld.toml"
        with open(config, "w") as file:
            file.write(toml)
        started = time.monotonic()
        process = subprocess.Popen(
            [binary, "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0", "--config", config,
             "--loops", TEST_LOOPS], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True)
        try:
            out, err = process.communicate(timeout=seconds)
            return process.returncode, time.monotonic() - started, err, out
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
            return None, time.monotonic() - started, err, out


def check_an_unreachable_nats_stops_the_node_naming_the_url(binary):
    url = f"nats://127.0.0.1:{free_port()}"
    status, seconds, err, out = run_node(binary, f'cluster_nats = "{url}"\ncluster_connect_timeout = 2\n', 10)
    print(f"status {status} after {seconds:.1f} s")
    assert status not in (None, 0), (status, err, out)
    assert 1.5 <= seconds <= 6.5, f"exited after {seconds:.1f} s with cluster_connect_timeout = 2"
    assert url in err, f"stderr does not name {url}: {err!r}"


def check_a_bad_cluster_name_stops_the_node_naming_the_key(binary):
    # The name is checked at start, before any attempt to reach NATS (which would take the
    # default 10 s here and name the URL).
    url = f"nats://127.0.0.1:{free_port()}"
    for name in ("bad name!", "x" * 33, ""):
        status, seconds, err, out = run_node(binary, f'cluster_nats = "{url}"\ncluster_name = "{name}"\n', 8)
        assert status not in (None, 0) and seconds < 5, (name, status, seconds, err, out)
        assert "cluster_name" in err and "unknown key" not in err, (name, err)


def check_a_list_of_urls_is_accepted(binary):
    # cluster_nats as a list; an unreachable first URL does not keep the node from the second.
    with NatsServer() as nats:
        dead = f"nats://127.0.0.1:{free_port()}"
        d = Daemon(binary, node_config([dead, nats.url], "listed", "l"))
        try:
            reached = wait_for_link(d, "up", 10, "the link")
            assert reached["nodes"] == 1, reached
        finally:
            assert d.stop() == 0, d.log[-15:]


def check_a_standalone_node_has_no_cluster_member(binary):
    d = Daemon(binary, "")
    try:
        current = stats(d)
        assert "cluster" not in current, current
        assert healthz(d) == 200, healthz(d)
    finally:
        assert d.stop() == 0, d.log[-15:]


@contextlib.contextmanager
def binary_only(binary):
    """For the checks that start runneld themselves: the binary."""
    yield binary


def logged(*checks):
    return [with_logs(check) for check in checks]


if __name__ == "__main__":
    main(__doc__.splitlines()[0], [
        Suite("shared", logged(
            check_stats_name_the_cluster_and_count_every_node,
            check_values_from_every_node_reach_every_node_once_in_order,
            check_a_value_published_right_after_the_sub_reply_arrives,
            check_patterns_and_stages_get_other_nodes_values,
            check_receivers_counts_only_this_nodes_subscriptions,
            check_a_node_holds_one_nats_subscription_per_subject_while_subscribed,
        ), start=lambda binary: cluster_started(binary, [("a", "shared"), ("b", "shared"), ("c", "shared")])),
        Suite("node_loss", logged(
            check_a_killed_node_does_not_stop_the_others,
            check_a_killed_node_drops_out_of_the_count,
        ), start=lambda binary: cluster_started(binary, [("a", "loss"), ("b", "loss"), ("c", "loss")])),
        Suite("two_clusters", logged(
            check_each_cluster_counts_only_its_own_nodes,
            check_values_stay_in_their_cluster,
        ), start=lambda binary: cluster_started(binary, [("a", "red"), ("b", "red"), ("c", "blue")])),
        Suite("link_loss", logged(
            check_a_lost_link_is_reported,
            check_what_needs_the_cluster_fails_unavailable_while_down,
            check_retained_subs_and_terminations_fail_unavailable_while_down,
            check_plain_subjects_go_on_within_the_node_while_down,
            check_the_link_comes_back,
            check_a_remote_subscriber_is_told_it_may_have_missed_values,
            check_a_local_subscriber_is_told_too,
        ), start=lambda binary: cluster_started(binary, [("a", "link"), ("b", "link")])),
        Suite("start", [
            check_an_unreachable_nats_stops_the_node_naming_the_url,
            check_a_bad_cluster_name_stops_the_node_naming_the_key,
            check_a_list_of_urls_is_accepted,
            check_a_standalone_node_has_no_cluster_member,
        ], start=binary_only, stops_a_daemon=False),
    ])
