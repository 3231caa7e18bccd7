"""The checker of scripts/netfault-harness.py: what one round's writers were answered and its
subscribers received, against the cluster's contract (docs/protocol.md, "Clusters"). Pure
functions over what the harness recorded; not run on its own.

What a writer recorded: `Written(name, node, sent, answers)`, `answers` n -> the reply's code
(`ok`, `unavailable`, any other code, or `None` when no reply came), for the values
`{"w": name, "n": n}`, n = 1..sent, each published with `ref` n on one connection.

What a subscriber recorded, in the order it arrived: `("sub", node, reply)` for each `sub` it
sent (a roaming subscriber sends several), `("next", w, n, seq)` (seq from its position, None
without positions), `("dropped", count)`, `("left", node)` when the harness closed its
connection on purpose, `("odd", line)` for any other line, `("closed", why)` when its connection
failed.

Both kinds: every pub answered, `ok`, or `unavailable` on a node cut off in the round (counted);
any other code, or no reply at all, is a problem. A retained subject (check_retained): every
value is at one seq, every seq holds one value, on every subscriber (one order); every value
answered `ok` is in it, none answered otherwise is (`unavailable` changed nothing), and the
stream holds as many as were delivered; each subscriber delivers the seqs from the first to the
stream's last, growing, each writer's values in its order; a seq it skipped is a told gap after
a `dropped` event or a `resumed: false` reply (a subscription not resumed starts again from the
first seq), a lost value otherwise; a value again is a duplicate. A plain subject (check_plain):
each subscriber's values of each writer in the order published, none twice, and the values it
skipped told by a `dropped` event after that writer's previous value (for the values at the end,
after its last one); none skipped of a writer on the subscriber's own node (its node delivers
those itself, link or no link).

`self_test()` runs these checks over made-up rounds, a clean one and ones with a fault planted
each, and returns what they did not notice: the harness runs it first, so a check that could no
longer fail is found.
"""

from collections import namedtuple

Written = namedtuple("Written", "name node sent answers")


class Figures:
    """A round's counts, added up over rounds by `add`."""

    FIELDS = ("answered", "unavailable", "unanswered", "delivered", "resumed", "dropped_events", "resumed_false",
              "told_values", "duplicates", "lost")

    def __init__(self):
        for field in self.FIELDS:
            setattr(self, field, 0)

    def add(self, other):
        for field in self.FIELDS:
            setattr(self, field, getattr(self, field) + getattr(other, field))

    def line(self):
        return (f"{self.answered} values answered ok, {self.unavailable} unavailable; {self.delivered} delivered "
                f"({self.resumed} subscriptions resumed); "
                f"told as gaps: {self.dropped_events} dropped, {self.resumed_false} resumed:false "
                f"({self.told_values} values); duplicates {self.duplicates}, lost {self.lost}"
                + (f"; {self.unanswered} pubs never answered" if self.unanswered else ""))


def shown(items, limit=8):
    items = list(items)
    return ", ".join(str(i) for i in items[:limit]) + (f", ... ({len(items)} in all)" if len(items) > limit else "")


def count_answers(writers, figures, problems, subject, unavailable_allowed):
    """Counts the writers' answers; a reply that is neither `ok` nor an allowed `unavailable`, or
    none at all, is a problem. Returns ({(w, n) answered ok}, {(w, n) answered otherwise})."""
    ok, refused = set(), set()
    for writer in writers:
        wrong = []
        for n in range(1, writer.sent + 1):
            code = writer.answers.get(n)
            if code == "ok":
                ok.add((writer.name, n))
                continue
            refused.add((writer.name, n))
            if code == "unavailable" and writer.node in unavailable_allowed:
                figures.unavailable += 1
            else:
                figures.unanswered += code is None
                wrong.append(f"{n}: {code or 'no reply'}")
        figures.answered += sum(1 for n in writer.answers.values() if n == "ok")
        if wrong:
            cut = " (its node was not cut off)" if writer.node not in unavailable_allowed else ""
            problems.append(f"{subject}, writer {writer.name} on node {writer.node}: answers not ok{cut}: "
                            f"{shown(wrong)}")
    return ok, refused


def check_retained(subject, writers, subscribers, state, unavailable_allowed):
    """The figures and problems of a retained subject: `writers` (Written), `subscribers` (name ->
    events), `state` the stream's (messages, first_seq, last_seq), `unavailable_allowed` the
    nodes cut off in the round."""
    figures, problems = Figures(), []
    ok, refused = count_answers(writers, figures, problems, subject, unavailable_allowed)
    sent = {w.name: w.sent for w in writers}
    at_seq, seq_of = {}, {}
    for name, events in subscribers.items():
        for event in events:
            if event[0] != "next":
                continue
            _, w, n, seq = event
            if at_seq.setdefault(seq, (w, n)) != (w, n):
                problems.append(f"{subject}: seq {seq} is {at_seq[seq]} on one subscriber, {(w, n)} on {name}")
            if seq_of.setdefault((w, n), seq) != seq:
                problems.append(f"{subject}: {w}/{n} at seq {seq_of[(w, n)]} on one subscriber, {seq} on {name}")
    unknown = sorted((w, n) for w, n in seq_of if w not in sent or not isinstance(n, int) or not 1 <= n <= sent[w])
    if unknown:
        problems.append(f"{subject}: values nobody sent: {shown(unknown)}")
    nowhere = sorted(ok - set(seq_of))
    if nowhere:
        figures.lost += len(nowhere)
        problems.append(f"{subject}: answered ok, delivered by no subscriber: {shown(nowhere)}")
    stored_refused = sorted((w, n, seq_of[(w, n)]) for w, n in refused & set(seq_of))
    if stored_refused:
        problems.append(f"{subject}: answered unavailable (or not answered), yet stored: "
                        f"{shown(f'{w}/{n} at seq {s}' for w, n, s in stored_refused)}")
    first, last = state["first_seq"], state["last_seq"]
    if state["messages"] != len(at_seq) or (at_seq and (min(at_seq) != first or max(at_seq) != last)):
        problems.append(f"{subject}: the stream holds {state['messages']} values (seqs {first} to {last}), the "
                        f"subscribers delivered {len(at_seq)} (seqs {min(at_seq, default=0)} to "
                        f"{max(at_seq, default=0)})")
    for name, events in subscribers.items():
        problems += walk_retained(f"{subject}, subscriber {name}", events, first, last, at_seq, figures)
    return figures, problems


def subscribed(where, event, figures, problems):
    """A `sub` reply: 'ok', 'resumed', 'not resumed' or 'refused' (counted, or a problem)."""
    _, node, reply = event
    if reply.get("ok") is not True:
        if reply.get("code") == "unavailable":
            figures.unavailable += 1
        else:
            problems.append(f"{where}: sub on node {node} answered {reply}")
        return "refused"
    if "resumed" not in reply:
        return "ok"
    if reply["resumed"] is True:
        figures.resumed += 1
        return "resumed"
    figures.resumed_false += 1
    return "not resumed"


def walk_retained(where, events, first, last, at_seq, figures):
    problems, lost, duplicates, disorder = [], [], [], []
    previous, told, seen, last_n = first - 1, False, set(), {}
    for event in events:
        kind = event[0]
        if kind == "sub":
            outcome = subscribed(where, event, figures, problems)
            if outcome == "not resumed":  # starts again, as a sub without from: every value, told
                previous, told, seen, last_n = first - 1, True, set(), {}
            continue
        if kind == "dropped":
            figures.dropped_events += 1
            told = True
            continue
        if kind in ("odd", "closed"):
            problems.append(f"{where}: {event[0]} {event[1]}")
            continue
        if kind != "next":
            continue
        _, w, n, seq = event
        figures.delivered += 1
        if seq is None or seq <= previous:
            if (w, n) in seen:
                duplicates.append(f"{w}/{n} at seq {seq}")
            else:
                disorder.append(f"{w}/{n} at seq {seq} after seq {previous}")
            continue
        skipped = range(previous + 1, seq)
        if told:
            figures.told_values += len(skipped)
        else:
            lost += [f"seq {s} ({'%s/%s' % at_seq[s] if s in at_seq else 'delivered nowhere'})" for s in skipped]
        if n <= last_n.get(w, 0):
            disorder.append(f"{w}/{n} at seq {seq} after {w}/{last_n[w]}")
        previous, told = seq, False
        seen.add((w, n))
        last_n[w] = max(n, last_n.get(w, 0))
    tail = range(previous + 1, last + 1)
    figures.lost += len(lost)
    if told:
        figures.told_values += len(tail)
    elif tail:
        lost.append(f"seqs {tail.start} to {tail.stop - 1}, after its last value up to the stream's last")
        figures.lost += len(tail)
    figures.duplicates += len(duplicates)
    for what, items in (("lost (skipped, no dropped or resumed:false before)", lost),
                        ("delivered twice", duplicates), ("out of order", disorder)):
        if items:
            problems.append(f"{where}: {what}: {shown(items)}")
    return problems


def check_plain(subject, writers, subscribers, unavailable_allowed):
    """The figures and problems of a plain subject: `subscribers` name -> (node, events)."""
    figures, problems = Figures(), []
    ok, _ = count_answers(writers, figures, problems, subject, unavailable_allowed)
    sent = {w.name: w for w in writers}
    for name, (node, events) in subscribers.items():
        where = f"{subject}, subscriber {name} on node {node}"
        drops = 0
        previous, dropped_at, seen = {}, {}, set()
        lost, duplicates, disorder, unknown = [], [], [], []

        def skipped(w, numbers):
            """Values of w skipped: told when a dropped event came since w's previous value."""
            numbers = [k for k in numbers if (w, k) in ok]
            if not numbers:
                return
            if drops > dropped_at.get(w, 0) and sent[w].node != node:
                figures.told_values += len(numbers)
            else:
                lost.append(f"{w}/{numbers[0]}" + (f" to {numbers[-1]}" if len(numbers) > 1 else ""))
                figures.lost += len(numbers)

        for event in events:
            if event[0] == "sub":
                subscribed(where, event, figures, problems)
            elif event[0] == "dropped":
                figures.dropped_events += 1
                drops += 1
            elif event[0] in ("odd", "closed"):
                problems.append(f"{where}: {event[0]} {event[1]}")
            elif event[0] == "next":
                _, w, n, _ = event
                figures.delivered += 1
                if w not in sent or not isinstance(n, int) or not 1 <= n <= sent[w].sent:
                    unknown.append(f"{w}/{n}")
                    continue
                if (w, n) in seen:
                    duplicates.append(f"{w}/{n}")
                    continue
                seen.add((w, n))
                if n <= previous.get(w, 0):
                    disorder.append(f"{w}/{n} after {w}/{previous[w]}")
                    continue
                skipped(w, range(previous.get(w, 0) + 1, n))
                previous[w], dropped_at[w] = n, drops
        for w, writer in sent.items():
            skipped(w, range(previous.get(w, 0) + 1, writer.sent + 1))
        figures.duplicates += len(duplicates)
        for what, items in (("lost (skipped, no dropped before)", lost), ("delivered twice", duplicates),
                            ("out of its writer's order", disorder), ("values nobody sent", unknown)):
            if items:
                problems.append(f"{where}: {what}: {shown(items)}")
    return figures, problems


def self_test():
    """The checks run over made-up rounds, a clean one and ones each with a fault of the contract
    planted (which each must name); returns what they got wrong (the harness runs this first)."""
    ok4, sub = {n: "ok" for n in range(1, 5)}, ("sub", "a", {"ok": True, "sid": "s"})
    writers = [Written("1ar", "a", 4, ok4), Written("1br", "b", 3, {1: "ok", 2: "unavailable", 3: "ok"})]
    order = [("1ar", 1), ("1br", 1), ("1ar", 2), ("1ar", 3), ("1br", 3), ("1ar", 4)]
    state = {"messages": 6, "first_seq": 1, "last_seq": 6}

    def values(pairs, first=1, skip=()):
        return [("next", w, n, seq) for seq, (w, n) in enumerate(pairs, first) if seq not in skip]

    def roaming(reply, after):
        return [sub] + values(order[:2]) + [("left", "a"), ("sub", "c", reply)] + after

    resumed = roaming({"ok": True, "resumed": True}, values(order[2:], 3))
    swapped = order[:2] + [order[3], order[2]] + order[4:]
    retained = {  # what is planted: (subscribers besides a clean "a", state, nodes cut, what must be named)
        "nothing": ({"b": [sub] + values(order), "roaming": resumed}, state, {"b"}, None),
        "a skip": ({"b": [sub] + values(order, skip={3})}, state, {"b"}, "lost"),
        "a skip told by dropped": ({"b": [sub] + values(order[:2]) + [("dropped", None)] + values(order[3:], 4)},
                                   state, {"b"}, None),
        "a resume not resumed": ({"roaming": roaming({"ok": True, "resumed": False}, values(order))}, state, {"b"},
                                 None),
        "a resume replaying": ({"roaming": roaming({"ok": True}, values(order))}, state, {"b"}, "delivered twice"),
        "a missing tail": ({"b": [sub] + values(order[:5])}, state, {"b"}, "after its last value"),
        "two values at a seq": ({"b": [sub] + values(swapped)}, state, {"b"}, "seq 3 is"),
        "a writer out of order": ({"a": [sub] + values(swapped), "b": [sub] + values(swapped)}, state, {"b"},
                                  "out of order"),
        "a value refused, stored": ({"a": [sub] + values(order + [("1br", 2)]),
                                     "b": [sub] + values(order + [("1br", 2)])},
                                    dict(state, messages=7, last_seq=7), {"b"}, "yet stored"),
        "unavailable on a node not cut off": ({}, state, set(), "answers not ok"),
        "a value the stream holds, delivered nowhere": ({}, dict(state, messages=7, last_seq=7), {"b"},
                                                         "the stream holds"),
    }
    wrong = []
    for planted, (extra, stream, cut, named) in retained.items():
        subscribers = dict({"a": [sub] + values(order)}, **extra)
        figures, problems = check_retained("r", writers, subscribers, stream, cut)
        if (named is None and problems) or (named is not None and not any(named in p for p in problems)):
            wrong.append(f"retained, {planted}: expected {named or 'no problem'}, got {problems}")
    unanswered = [writers[0]._replace(answers={1: "ok", 2: "ok", 3: "ok"})] + writers[1:]
    figures, problems = check_retained("r", unanswered, {"a": [sub] + values(order)}, state, {"b"})
    if not any("no reply" in p for p in problems) or figures.unanswered != 1:
        wrong.append(f"retained, a pub never answered: expected no reply, got {problems}")
    plain_writers = [Written("1ap", "a", 3, ok4), Written("1bp", "b", 3, ok4)]
    mixed = [("1ap", 1), ("1bp", 1), ("1ap", 2), ("1bp", 2), ("1ap", 3), ("1bp", 3)]
    plain = {
        "nothing": ("c", mixed, None),
        "a skip": ("c", mixed[:1] + mixed[2:], "lost"),
        "a skip told by dropped": ("c", mixed[:1] + ["dropped"] + mixed[2:], None),
        "a skip of the node's own writer, dropped told": ("b", mixed[:1] + ["dropped"] + mixed[2:], "lost"),
        "a missing tail": ("c", mixed[:5], "lost"),
        "a value twice": ("c", mixed + mixed[-1:], "twice"),
        "a writer out of order": ("c", mixed[:2] + [mixed[4], mixed[2]] + mixed[3:4] + mixed[5:], "order"),
    }
    for planted, (node, pairs, named) in plain.items():
        events = [sub] + [("dropped", None) if p == "dropped" else ("next", p[0], p[1], None) for p in pairs]
        figures, problems = check_plain("p", plain_writers, {"s": (node, events)}, set())
        if (named is None and problems) or (named is not None and not any(named in p for p in problems)):
            wrong.append(f"plain, {planted}: expected {named or 'no problem'}, got {problems}")
    return wrong
