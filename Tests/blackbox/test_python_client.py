"""The Python client (clients/python, imported from this checkout) against real runneld processes:
the client behaviour checklist of docs/clients.md. Connect and auth (a good token, a wrong one,
none, one a reload removes); every transport (runnel://, runnels://, ws://, wss://); publish with
and without a reply; typed errors; subscribe with stages, as an iterator and with callbacks;
positions and `from`; history by time (`since`, `until`, `ts`, and a reconnect that resumes by
position); runneld killed with SIGKILL and restarted under a durable subscription (nothing lost or
repeated) and under a plain one (a gap reported); a `closing` line; the client's bounded buffer
under a consumer slower than the network; the server's `dropped` events as gaps; a `conflate`
subscription that stops reading kept, not cut, its replaced values as gaps; a map subject's table
(`subscribe_map`: the server's table at `synced`, its changes, resumed after a reconnect with the
table kept, rebuilt whole when it cannot resume; `key` and `delete_key`); a clean close (the
server's `stats` back to what they were); leaving an `async for` (or a blocking `for`) early
unsubscribes; every call's deadline, with runneld stopped (SIGSTOP) and killed, and a
`sub` answered past it undone; a wrong port named (`runnel://` at the HTTP port, `ws://` at the
line port); the blocking wrapper; `pip install` of the package.

    python3 -m pytest Tests/blackbox/test_python_client.py --runneld .build/debug/runneld

Needs openssl (the test certificate) and websockets 13 or later (the client's websocket extra).
"""

import asyncio
import contextlib
import functools
import logging
import os
import shutil
import signal
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timedelta, timezone

import pytest

from client_checklist import EXPIRY_CONFIG, JWT_SECRET, MAIN_CONFIG, RESTART_CONFIG, SLOW_CONFIG, TOKEN, certificate
from runneld_process import Daemon, assert_clean_stop, freeze, poll_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The client under test is this checkout's, not an installed copy.
sys.path.insert(0, os.path.join(ROOT, "clients", "python", "src"))

import runnel  # noqa: E402
import runnel.blocking  # noqa: E402
from runnel import Gap, Removed, RunnelError, Synced, Value  # noqa: E402

DEADLINE = 10  # seconds for any one thing to happen


def trusting_context():
    return ssl.create_default_context(cafile=certificate("server.pem"))


def runs_async(check):
    """A check written as a coroutine, run on a fresh event loop."""

    @functools.wraps(check)
    def run(*arguments, **keywords):
        asyncio.run(check(*arguments, **keywords))

    return run


def url(d):
    return f"runnel://127.0.0.1:{d.port}"


async def connected(d, **options):
    return await runnel.connect(url(d), token=TOKEN, **options)


async def take(subscription, count):
    """The next `count` events, within the deadline."""
    return [await asyncio.wait_for(anext(subscription), DEADLINE) for _ in range(count)]


async def values_until(subscription, last, gaps=None):
    """Values (their `value`) until one equals `last`; gaps go to `gaps` (else they fail)."""
    seen = []
    while not seen or seen[-1] != last:
        event = await asyncio.wait_for(anext(subscription), DEADLINE)
        if isinstance(event, Gap):
            assert gaps is not None, f"a gap where none was: {event}, after {seen}"
            gaps.append((len(seen), event))
        else:
            seen.append(event.value)
    return seen


async def expect_error(awaitable, code):
    try:
        await awaitable
    except RunnelError as error:
        assert error.code == code, (error.code, error)
        return error
    raise AssertionError(f"no {code} error")


async def expect_end(subscription):
    try:
        event = await asyncio.wait_for(anext(subscription), DEADLINE)
        raise AssertionError(f"the subscription went on: {event}")
    except StopAsyncIteration:
        pass


class Recorded(logging.Handler):
    """Keeps what is logged to it."""

    def __init__(self):
        super().__init__()
        self.records = []

    def emit(self, record):
        self.records.append(record)


async def poll(read, predicate, what, seconds=DEADLINE):
    """Awaits `read()` every 50 ms until `predicate` holds of it, as runneld_process.poll_until."""
    deadline = time.monotonic() + seconds
    while True:
        current = await read()
        if predicate(current):
            return current
        assert time.monotonic() < deadline, f"{what}: {current}"
        await asyncio.sleep(0.05)


async def quiet_stats(d):
    """A client of the check's own, and the server's `stats` once that client is its only
    connection (the last check's connections close a moment after their clients)."""
    admin = await connected(d)
    return admin, await poll(lambda: admin.request("stats"), lambda s: s["connections"] == 1,
                             "only this check's client")


async def timed_out(awaitable, seconds, *words):
    """`awaitable` fails with `timeout` at its deadline, `seconds` (not before, nor much after;
    a call with no deadline fails the check at DEADLINE), its message naming `words`."""
    started = time.monotonic()
    try:
        error = await expect_error(asyncio.wait_for(awaitable, DEADLINE), "timeout")
    except asyncio.TimeoutError:
        raise AssertionError(f"still waiting after {DEADLINE} s: no deadline") from None
    took = time.monotonic() - started
    assert seconds <= took < seconds + 2, f"the deadline was {seconds} s; it took {took:.2f} s"
    for word in (f"within {seconds:g} s", *words):
        assert word in error.message, (word, error.message)
    return error


@contextlib.contextmanager
def stopped(d):
    """runneld stopped (SIGSTOP, every thread: its connections open, nothing answered),
    continued after."""
    freeze(d.process.pid)
    try:
        yield
    finally:
        d.process.send_signal(signal.SIGCONT)


def blocking_call(function, *arguments, **options):
    """A call of the blocking client, failing the check (rather than hanging it) when it is still
    blocked after DEADLINE."""
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(function, *arguments, **options)
        try:
            return future.result(DEADLINE)
        except TimeoutError:
            raise AssertionError(f"still blocked after {DEADLINE} s: no deadline") from None


def unix_ms():
    return time.time_ns() // 1_000_000


async def publish_apart(client, subject, values):
    """Publishes `values` to `subject` and returns a Unix ms time between each and the next, 50 ms
    after the one's reply and 50 ms before the next is sent: no millisecond clock can put either
    publish on that time's side."""
    betweens = []
    for value in values:
        if betweens:
            await asyncio.sleep(0.05)
        await client.publish(subject, value, reply=True)
        await asyncio.sleep(0.05)
        betweens.append(unix_ms())
    return betweens[:-1]


def recording_lines(client):
    """The requests `client` sends and the replies it reads from now on (its own methods
    wrapped): what goes over the wire, for the checks of what a resubscription asks."""
    sent, replies = [], []
    send, reply = client._send, client._reply

    async def sending(body, deadline=None):
        sent.append(dict(body))
        await send(body, deadline)

    def replied(line):
        replies.append(line)
        reply(line)

    client._send, client._reply = sending, replied
    return sent, replies


async def wait_for_event(event, what):
    try:
        await asyncio.wait_for(event.wait(), DEADLINE)
    except asyncio.TimeoutError:
        raise AssertionError(f"no {what} within {DEADLINE} s") from None


class SilentNetwork:
    """silent_network.py in front of `port`: `silence()` makes the connections open now
    lose everything, both ways, without closing (a network that drops a connection without a
    word); connections made after it are forwarded."""

    def __init__(self, port):
        script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "silent_network.py")
        self.process = subprocess.Popen([sys.executable, script, str(port)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
        self.port = int(self.process.stdout.readline())

    def silence(self):
        self.process.send_signal(signal.SIGUSR1)

    def close(self):
        self.process.terminate()
        self.process.wait(timeout=DEADLINE)


async def subscriptions_back_to(admin, before, what):
    await poll(lambda: admin.request("stats"), lambda s: s["subscriptions"] == before["subscriptions"], what)


class Restarts:
    """A daemon that a check kills and starts again on the same ports and directory."""

    def __init__(self, binary):
        self.binary = binary
        self.daemon = Daemon(binary, RESTART_CONFIG)

    async def kill(self, *lost):
        """SIGKILL; waits until every client of `lost` (asyncio.Events) has noticed."""
        self.daemon.kill()
        for event in lost:
            await wait_for_event(event, "the client noticing the kill")

    async def restart(self, swapped=False):
        """Starts runneld again (on a thread: the clients keep running meanwhile); `swapped`: its
        HTTP port where its TCP port was and the other way round (`swapped` again undoes it)."""
        d = self.daemon
        port, http_port = (d.http_port, d.port) if swapped else (d.port, d.http_port)
        self.daemon = await asyncio.to_thread(Daemon, self.binary, RESTART_CONFIG, port=port,
                                              http_port=http_port, directory=d.directory)


def noticing():
    """An asyncio.Event set by the disconnect it is given to, and the reasons."""
    lost, reasons = asyncio.Event(), []
    return lost, reasons, lambda reason: (reasons.append(reason), lost.set())


def expiring_token(seconds):
    """An HS256 JWT (PyJWT) that expires `seconds` from now (in the past when negative), with the
    rights to publish and subscribe to `expiry.>`."""
    import jwt

    now = int(time.time())
    claims = {"sub": "checklist", "iat": now, "exp": now + seconds,
              "runnel": {"publish": ["expiry.>"], "subscribe": ["expiry.>"]}}
    return jwt.encode(claims, JWT_SECRET, algorithm="HS256")


@pytest.mark.daemon(MAIN_CONFIG)
@pytest.mark.usefixtures("checklist_certificate")
class TestMain:
    """One daemon with a token, a token of limited rights, TLS and HTTPS."""

    @runs_async
    async def test_connect_with_a_good_token_a_wrong_one_and_none(self, d):
        client = await connected(d)
        assert (await client.request("ping"))["ok"]
        await client.close()
        wrong = await expect_error(runnel.connect(url(d), token="not-a-token"), "unauthorized")
        assert wrong.message, wrong
        await expect_error(runnel.connect(url(d)), "unauthorized")
        await expect_error(runnel.connect(d.ws_url, token="not-a-token"), "unauthorized")

    @runs_async
    async def test_every_transport_publishes_and_subscribes(self, d):
        urls = {"runnel": url(d), "runnels": f"runnels://127.0.0.1:{d.tls_port}", "ws": d.ws_url,
                "wss": f"wss://127.0.0.1:{d.https_port}/ws"}
        publisher = await connected(d)
        for scheme, address in urls.items():
            secure = {"ssl": trusting_context()} if scheme in ("runnels", "wss") else {}
            client = await runnel.connect(address, token=TOKEN, **secure)
            subject = f"transport.{scheme}"
            subscription = await client.subscribe(subject, {"map": ".n"})
            assert await publisher.publish(subject, {"n": 21}, reply=True) == 1
            big = "x" * 300_000  # many TLS records, one long WebSocket message
            await client.publish(subject, {"n": big})
            [first, second] = await take(subscription, 2)
            assert first == Value(21, subject, first.pos) and first.pos.endswith(":1"), first
            assert second.value == big, scheme
            # Over a WebSocket, compressed (websockets offers permessage-deflate; runneld accepts).
            compressed = (await client.request("stats"))["compression"]["websockets"]
            assert compressed == (1 if scheme in ("ws", "wss") else 0), (scheme, compressed)
            await client.close()
        # A certificate the client does not trust fails the connection, over TLS and wss.
        for address in (urls["runnels"], urls["wss"]):
            with contextlib.suppress(ssl.SSLCertVerificationError):
                await runnel.connect(address, token=TOKEN)
                raise AssertionError(f"{address}: an untrusted certificate was accepted")
        await publisher.close()

    @runs_async
    async def test_publish_with_and_without_a_reply(self, d):
        failures = []
        client = await connected(d, on_error=failures.append)
        first = await client.subscribe("pub.a")
        second = await client.subscribe("pub.>")
        assert await client.publish("pub.a", {"k": 1}, reply=True) == 2
        assert await client.publish("pub.a", [2]) is None
        assert [event.value for event in await take(first, 2)] == [{"k": 1}, [2]]
        assert [(event.subject, event.value) for event in await take(second, 2)] == [("pub.a", {"k": 1}), ("pub.a",
                                                                                                           [2])]
        assert await client.publish("nobody.here", None, reply=True) == 0
        # A quiet publish is answered only when it fails: the failure goes to on_error.
        await client.request("complete", subject="pub.a")
        await client.publish("pub.a", 3)
        await client.request("ping")  # answered after the publish's failure, in order
        assert [failure.code for failure in failures] == ["terminated"], failures
        await expect_error(client.publish("pub.a", 4, reply=True), "terminated")
        # The limited token may publish to `limited.>` only: the server's message names the right.
        limited = await runnel.connect(url(d), token="limited-token")
        assert await limited.publish("limited.x", 1, reply=True) == 0
        refused = await expect_error(limited.publish("pub.b", 1, reply=True), "unauthorized")
        assert "may not publish to pub.b" in refused.message, refused
        await limited.close()
        await client.close()

    @runs_async
    async def test_typed_errors_carry_code_message_and_stage(self, d):
        client = await connected(d)
        error = await expect_error(client.subscribe("err.a", {"filter": ".a > 1", "map": ".b +"}), "bad_expr")
        assert error.stage == 1 and error.message, error
        error = await expect_error(client.subscribe("err.a", {"ops": [{"op": "nosuch"}]}), "bad_operator")
        assert error.stage == 0, error
        await expect_error(client.subscribe("bad name"), "bad_request")
        await client.request("create", subject="err.r", kind="replay", capacity=2)
        error = await expect_error(client.request("create", subject="err.r", kind="replay", capacity=3),
                                   "kind_mismatch")
        assert error.stage is None, error
        # A stage failing on a value ends its subscription: iterating raises the error event's.
        failing = await client.subscribe("err.eval", {"map": ".n + 1"})
        await client.publish("err.eval", {"n": "text"})
        try:
            await take(failing, 1)
            raise AssertionError("no eval error")
        except RunnelError as error:
            assert (error.code, error.stage) == ("eval", 0), error
        ended = await client.subscribe("err.subject")
        await client.request("error", subject="err.subject", message="it broke")
        try:
            await take(ended, 1)
            raise AssertionError("no subject_error")
        except RunnelError as error:
            assert (error.code, error.message) == ("subject_error", "it broke"), error
        await client.close()

    @runs_async
    async def test_subscribe_with_stages_as_an_iterator_and_with_callbacks(self, d):
        client = await connected(d)
        hot = await client.subscribe("cpu", {"filter": ".load > 0.9", "map": ".host", "ops": [{"op": "take",
                                                                                               "count": 2}]})
        throttled = await client.subscribe("cpu", {"map": ".host", "throttle": 0.05})
        seen, called, ended, endings = [], asyncio.Event(), asyncio.Event(), []
        callback = await client.subscribe("cpu", {"filter": ".load < 0.5", "map": ".host"},
                                          lambda event: (seen.append(event), called.set()),
                                          on_end=lambda error: (endings.append(error), ended.set()))
        for host, load in (("a", 0.95), ("b", 0.2), ("c", 0.99), ("d", 0.97)):
            await client.publish("cpu", {"host": host, "load": load})
        # take 2 completes the first: the iteration ends after "a" and "c".
        assert [event.value for event in await take(hot, 2)] == ["a", "c"]
        await expect_end(hot)
        # throttle keeps the newest of a burst.
        assert (await take(throttled, 1))[0].value == "d"
        await wait_for_event(called, "the callback")
        assert [event.value for event in seen] == ["b"], seen
        await callback.unsubscribe()
        assert endings == [None], endings
        ended.clear()
        completes = await client.subscribe("cpu", {"ops": [{"op": "take", "count": 1}]}, seen.append,
                                           on_end=lambda error: (endings.append(error), ended.set()))
        await client.publish("cpu", {"host": "e", "load": 0.1})
        await wait_for_event(ended, "completion")
        assert endings == [None, None] and completes.sid != callback.sid
        await throttled.unsubscribe()
        # A callback that raises is logged; the subscription and the connection go on.
        failing, raised = [], asyncio.Event()

        def broken(event):
            failing.append(event.value)
            if len(failing) == 2:
                raised.set()
            raise RuntimeError("the callback's own bug")

        logged = Recorded()
        logging.getLogger("runnel").addHandler(logged)
        try:
            await client.subscribe("callback.broken", None, broken)
            await client.publish("callback.broken", 1)
            await client.publish("callback.broken", 2)
            await wait_for_event(raised, "the second value")
            assert failing == [1, 2] and (await client.request("ping"))["ok"]
        finally:
            logging.getLogger("runnel").removeHandler(logged)
        assert [record.exc_info[1].args for record in logged.records] == [("the callback's own bug",)] * 2
        await client.close()

    @runs_async
    async def test_while_watched_starts_and_stops_a_feed_on_the_first_and_last_subscriber(self, d):
        calls = []
        feed = await connected(d)
        reader = await connected(d)
        watch = await feed.while_watched("ww.feed", lambda: calls.append("start"), lambda: calls.append("stop"))
        # The same counts on the same connection, subscribed after the watch: once this one has a
        # count, the watch has had it too. Unsubscribed whatever happens: a subscription read with
        # anext() and left open keeps asyncio.run from returning (a client bug, in the stop's note).
        counts = await feed.subscribe("$sys.occupancy.ww.feed")
        try:
            async def count_reaches(n):
                while (await asyncio.wait_for(anext(counts), DEADLINE)).value["subscribers"] != n:
                    pass

            await count_reaches(0)
            assert calls == [], "nobody watched yet: nothing to stop"
            first = await reader.subscribe("ww.feed")
            await count_reaches(1)
            assert calls == ["start"]
            second = await reader.subscribe("ww.>")
            await count_reaches(2)
            await first.unsubscribe()
            await count_reaches(1)
            assert calls == ["start"], "1 -> 2 -> 1 is no transition"
            await second.unsubscribe()
            await count_reaches(0)
            assert calls == ["start", "stop"]
            await watch.unsubscribe()
            await reader.subscribe("ww.feed")
            await count_reaches(1)
            assert calls == ["start", "stop"], "the watch was ended"
            with pytest.raises(ValueError):
                await feed.while_watched("ww.*", lambda: None, lambda: None)
        finally:
            await counts.unsubscribe()
            await reader.close()
            await feed.close()

    @runs_async
    async def test_positions_and_from(self, d):
        client = await connected(d)
        await client.request("create", subject="pos.r", kind="replay", capacity=10)
        for n in range(1, 6):
            await client.publish("pos.r", n)
        everything = await client.subscribe("pos.r")
        events = await take(everything, 5)
        epochs = {event.pos.split(":")[0] for event in events}
        assert len(epochs) == 1 and [event.pos.split(":")[1] for event in events] == ["1", "2", "3", "4", "5"], events
        assert everything.position == events[-1].pos
        # From the second value's position: exactly the values after it, and no gap.
        after = await client.subscribe("pos.r", {"from": events[1].pos})
        assert [event.value for event in await take(after, 3)] == [3, 4, 5]
        await client.publish("pos.r", 6)
        assert (await take(after, 1))[0].value == 6
        # A position the server cannot continue from: a gap, then what a plain sub gets.
        lost = await client.subscribe("pos.r", {"from": "another-epoch:3"})
        gap, *replayed = await take(lost, 7)
        assert gap == Gap("not_resumed"), gap
        assert [event.value for event in replayed] == [1, 2, 3, 4, 5, 6]
        await client.close()

    @runs_async
    async def test_since_until_and_ts_read_history_by_time(self, d):
        client = await connected(d)
        sent, replies = recording_lines(client)
        opened = []
        try:
            await client.request("create", subject="history.r", kind="replay", capacity=10)
            # since: after the first value's publish, before the second's; until: before the third's.
            since, until = await publish_apart(client, "history.r", [1, 2, 3])
            history = await client.subscribe("history.r", {"since": since, "ts": True})
            opened.append(history)
            events = await take(history, 2)
            assert [event.value for event in events] == [2, 3], events
            times = [event.ts for event in events]
            assert all(type(ts) is int for ts in times) and since <= times[0] <= times[1] <= unix_ms(), (since, times)
            [reply] = [line for line in replies if line.get("sid") == history.sid]
            assert reply["resumed"] is True, reply
            # Then live values, with their time too.
            await client.publish("history.r", 4, reply=True)
            [live] = await take(history, 1)
            assert live.value == 4 and type(live.ts) is int and live.ts >= times[1], live
            # A datetime in another zone than UTC, and an RFC 3339 string: the same instants. Values
            # until the second time: the second value, then the end; no `ts` asked, none given.
            epoch = datetime(1970, 1, 1, tzinfo=timezone.utc)
            at = (epoch + timedelta(milliseconds=since)).astimezone(timezone(timedelta(hours=-5)))
            text = (epoch + timedelta(milliseconds=until)).isoformat(timespec="milliseconds").replace("+00:00", "Z")
            bounded = await client.subscribe("history.r", {"since": at, "until": text})
            opened.append(bounded)
            assert [(event.value, event.ts) for event in await take(bounded, 1)] == [(2, None)]
            await expect_end(bounded)
            request = next(body for body in sent if body.get("sid") == bounded.sid)
            assert (request["since"], request["until"], "ts" in request) == (since, text, False), request
            # A since whose values the server no longer all holds (capacity 2, three values since): a
            # gap first, then what it holds.
            await client.request("create", subject="history.small", kind="replay", capacity=2)
            before = unix_ms()
            await asyncio.sleep(0.05)
            for n in (1, 2, 3):
                await client.publish("history.small", n, reply=True)
            evicted = await client.subscribe("history.small", {"since": before})
            opened.append(evicted)
            gap, *held = await take(evicted, 3)
            assert gap == Gap("not_resumed") and [event.value for event in held] == [2, 3], (gap, held)
            # Refused here: a naive datetime, a time of another type, since with from; by the server:
            # since on a plain subject and on a pattern.
            count = len(sent)
            with pytest.raises(ValueError, match="naive datetime"):
                await client.subscribe("history.r", {"since": datetime.now()})
            with pytest.raises(TypeError):
                await client.subscribe("history.r", {"until": 1.5})
            with pytest.raises(ValueError, match="not both"):
                await client.subscribe("history.r", {"since": since, "from": events[0].pos})
            assert len(sent) == count, sent[count:]
            await expect_error(client.subscribe("history.plain", {"since": since}), "bad_request")
            await expect_error(client.subscribe("history.*", {"since": since}), "bad_request")
        finally:
            # Unsubscribed whatever happens: a subscription read with anext() and left open keeps
            # asyncio.run from returning (a client bug, in the stop's note).
            for subscription in opened:
                await subscription.unsubscribe()
            await client.close()

    @runs_async
    async def test_a_since_subscription_resumes_by_position_after_a_reconnect(self, d):
        # As the keepalive's check: the network drops the connection without a word, the client
        # takes it for lost within about 2 s and subscribes again, from the last value's position,
        # not from `since` (the server refuses both), keeping `until` and `ts`.
        network = SilentNetwork(d.port)
        admin = await connected(d)
        client = subscription = None
        try:
            await admin.request("create", subject="history.resume", kind="replay", capacity=100)
            [since] = await publish_apart(admin, "history.resume", [1, 2])
            until = unix_ms() + 600_000
            reasons = []
            client = await runnel.connect(f"runnel://127.0.0.1:{network.port}", token=TOKEN, keepalive=1, timeout=1,
                                          on_disconnect=reasons.append)
            sent, replies = recording_lines(client)
            subscription = await client.subscribe("history.resume", {"since": since, "until": until, "ts": True})
            [two] = await take(subscription, 1)
            assert two.value == 2 and two.ts >= since, two
            network.silence()
            for n in (3, 4, 5):
                await admin.publish("history.resume", n, reply=True)
            # Nothing lost, nothing repeated, no gap; each value with its time.
            events = await take(subscription, 3)
            assert [(type(event), event.value) for event in events] == [(Value, 3), (Value, 4), (Value, 5)], events
            assert all(type(event.ts) is int and event.ts >= two.ts for event in events), events
            assert [reason.code for reason in reasons] == ["connection_lost"], reasons
            first, again = [body for body in sent if body["op"] == "sub"]
            assert (first["since"], first["until"], first["ts"], "from" in first) == (since, until, True, False), first
            assert (again["from"], again["until"], again["ts"], "since" in again) == (two.pos, until, True, False), again
            assert [line["resumed"] for line in replies if line.get("sid") == subscription.sid] == [True, True], replies
            await admin.publish("history.resume", 6, reply=True)
            assert [event.value for event in await take(subscription, 1)] == [6]
        finally:
            if subscription is not None:
                await subscription.unsubscribe()
            if client is not None:
                await client.close()
            await admin.close()
            network.close()

    @runs_async
    async def test_a_map_subscription_keeps_the_servers_table_and_its_changes(self, d):
        admin = await connected(d)
        client = await connected(d)
        sent, _ = recording_lines(client)
        opened = []
        try:
            await admin.request("create", subject="maps.hosts", kind="map")
            # Before the subscription (its snapshot): keys written, one written again, one removed;
            # removing a key the map does not hold is no error.
            assert await admin.publish("maps.hosts", {"load": 1}, reply=True, key="a") == 0
            await admin.publish("maps.hosts", {"load": 2}, reply=True, key="b")
            await admin.publish("maps.hosts", {"load": 3}, reply=True, key="c")
            await admin.publish("maps.hosts", {"load": 20}, reply=True, key="b")
            assert await admin.delete_key("maps.hosts", "c", reply=True) == 0
            assert await admin.delete_key("maps.hosts", "absent", reply=True) == 0
            hosts = await client.subscribe_map("maps.hosts", {"conflate": True})
            opened.append(hosts)
            await asyncio.wait_for(hosts.wait_synced(), DEADLINE)
            assert hosts.synced and hosts.table == {"a": {"load": 1}, "b": {"load": 20}}, dict(hosts.table)
            # The snapshot comes as the table's first changes (in no promised order), then Synced.
            *snapshot, synced = await take(hosts, 3)
            assert synced == Synced() and all(isinstance(event, Value) for event in snapshot), (snapshot, synced)
            assert sorted((event.key, event.value["load"]) for event in snapshot) == [("a", 1), ("b", 20)], snapshot
            assert len({event.pos.split(":")[0] for event in snapshot}) == 1, snapshot
            newest = max(int(event.pos.split(":")[1]) for event in snapshot)
            # Then each change, in order: a write, a new key, a removal.
            assert await admin.publish("maps.hosts", {"load": 5}, reply=True, key="a") == 1
            await admin.publish("maps.hosts", {"load": 6}, reply=True, key="d")
            assert await admin.delete_key("maps.hosts", "b", reply=True) == 1
            changes = await take(hosts, 3)
            assert [(type(event), event.key) for event in changes] == [(Value, "a"), (Value, "d"), (Removed, "b")], changes
            assert [changes[0].value, changes[1].value, changes[2].reason] == [{"load": 5}, {"load": 6}, "deleted"]
            seqs = [int(event.pos.split(":")[1]) for event in changes]
            assert newest < seqs[0] < seqs[1] < seqs[2], (newest, seqs)
            assert hosts.table == {"a": {"load": 5}, "d": {"load": 6}} and hosts.position == changes[2].pos
            # The server's table: another subscription's snapshot, and the keys `list` counts.
            other = await admin.subscribe_map("maps.hosts")
            opened.append(other)
            await asyncio.wait_for(other.wait_synced(), DEADLINE)
            assert other.table == hosts.table, (dict(other.table), dict(hosts.table))
            [entry] = (await admin.request("list", prefix="maps.hosts"))["subjects"]
            assert (entry["kind"], entry["keys"]) == ("map", 2), entry
            [request] = [body for body in sent if body["op"] == "sub"]
            assert (request["positions"], request["conflate"], "from" in request) == (True, True, False), request
            # Stages run over the values: the table holds what they make, of the keys they let through.
            loads = await client.subscribe_map("maps.hosts", {"filter": '$key != "d"', "map": ".load * 2"})
            opened.append(loads)
            await asyncio.wait_for(loads.wait_synced(), DEADLINE)
            assert loads.table == {"a": 10}, dict(loads.table)
            # A key not written for the map's ttl_s goes, reason expired.
            await admin.request("create", subject="maps.ttl", kind="map", ttl_s=1)
            expiring = await client.subscribe_map("maps.ttl", {"ts": True})
            opened.append(expiring)
            await admin.publish("maps.ttl", "soon gone", reply=True, key="k")
            synced, written, gone = await take(expiring, 3)
            assert synced == Synced(), synced
            assert (written.key, written.value, type(written.ts)) == ("k", "soon gone", int), written
            assert isinstance(gone, Removed) and (gone.key, gone.reason) == ("k", "expired"), gone
            assert 900 <= gone.ts - written.ts <= 3000 and expiring.table == {}, (written, gone)
            # Refused here: a pattern, a position to start from; by the server: a map's pub without a
            # key, a key on a subject that is not a map.
            with pytest.raises(ValueError, match="pattern"):
                await client.subscribe_map("maps.*")
            with pytest.raises(ValueError, match="no from"):
                await client.subscribe_map("maps.hosts", {"from": hosts.position})
            await expect_error(admin.publish("maps.hosts", 1, reply=True), "bad_request")
            await expect_error(admin.publish("maps.plain", 1, reply=True, key="a"), "bad_request")
            await expect_error(admin.delete_key("maps.plain", "a", reply=True), "bad_request")
        finally:
            for subscription in opened:
                await subscription.unsubscribe()
            await client.close()
            await admin.close()

    @runs_async
    async def test_a_map_subscription_resumes_its_table_after_a_reconnect(self, d):
        # Its connection closed under it (as the conflation check's): the client reconnects 0.5 to
        # 1 s later and subscribes again from its table's position; the server still holds every
        # change since, so the table is kept and the changes missed are applied to it.
        admin = await connected(d)
        lost, reasons, on_disconnect = noticing()
        client = await connected(d, backoff=(1.0, 1.0), on_disconnect=on_disconnect)
        sent, replies = recording_lines(client)
        hosts = None
        try:
            await admin.request("create", subject="maps.resume", kind="map")
            for value, key in enumerate("abc"):
                await admin.publish("maps.resume", value, reply=True, key=key)
            hosts = await client.subscribe_map("maps.resume", {"ts": True, "conflate": True})
            assert [type(event) for event in await take(hosts, 4)] == [Value, Value, Value, Synced]
            await admin.publish("maps.resume", 10, reply=True, key="a")
            [live] = await take(hosts, 1)
            assert hosts.position == live.pos and hosts.table == {"a": 10, "b": 1, "c": 2}, (live, dict(hosts.table))
            await client._transport.close()
            await wait_for_event(lost, "the client noticing its closed connection")
            assert not hosts.synced and hosts.table == {"a": 10, "b": 1, "c": 2}, dict(hosts.table)
            await admin.publish("maps.resume", 11, reply=True, key="b")
            await admin.delete_key("maps.resume", "c", reply=True)
            await admin.publish("maps.resume", 12, reply=True, key="d")
            await asyncio.wait_for(hosts.wait_synced(), DEADLINE)
            # Exactly the changes missed, in order, no gap, then Synced.
            missed = await take(hosts, 4)
            assert [(type(event), event.key) for event in missed[:3]] == [(Value, "b"), (Removed, "c"), (Value, "d")], missed
            assert (missed[0].value, missed[1].reason, missed[2].value, missed[3]) == (11, "deleted", 12, Synced()), missed
            assert all(type(event.ts) is int for event in missed[:3]), missed
            assert hosts.table == {"a": 10, "b": 11, "d": 12}, dict(hosts.table)
            subs = [body for body in sent if body["op"] == "sub"]
            assert [(body.get("from"), body["ts"], body["conflate"]) for body in subs] == [
                (None, True, True), (live.pos, True, True)], subs
            assert [line.get("resumed") for line in replies if line.get("sid") == hosts.sid] == [None, True], replies
            assert [reason.code for reason in reasons] == ["connection_lost"], reasons
            # Live changes go on; the table is the server's.
            await admin.delete_key("maps.resume", "a", reply=True)
            [removed] = await take(hosts, 1)
            assert (type(removed), removed.key, removed.reason) == (Removed, "a", "deleted"), removed
            fresh = await admin.subscribe_map("maps.resume")
            await asyncio.wait_for(fresh.wait_synced(), DEADLINE)
            assert fresh.table == hosts.table == {"b": 11, "d": 12}, (dict(fresh.table), dict(hosts.table))
            await fresh.unsubscribe()
        finally:
            if hosts is not None:
                await hosts.unsubscribe()
            await client.close()
            await admin.close()

    @runs_async
    async def test_a_map_subscription_rebuilds_its_table_when_it_cannot_resume(self, d):
        # The network drops the connection without a word (item 12's way); meanwhile the map is
        # deleted and made again, with a new epoch: the client's `from` cannot resume, and the new
        # snapshot is built apart and swapped in whole at `synced`, its differences the changes.
        network = SilentNetwork(d.port)
        admin = await connected(d)
        client = hosts = None
        try:
            await admin.request("create", subject="maps.rebuild", kind="map")
            for key, value in (("a", 1), ("b", 2), ("c", 3)):
                await admin.publish("maps.rebuild", value, reply=True, key=key)
            reasons = []
            client = await runnel.connect(f"runnel://127.0.0.1:{network.port}", token=TOKEN, keepalive=1, timeout=1,
                                          on_disconnect=reasons.append)
            sent, replies = recording_lines(client)
            # Each change, with the table as it stood when the change came.
            seen, holder = [], {}
            hosts = holder["hosts"] = await client.subscribe_map(
                "maps.rebuild", None,
                lambda event: seen.append((event, dict(holder["hosts"].table) if "hosts" in holder else None)))
            await asyncio.wait_for(hosts.wait_synced(), DEADLINE)
            old, old_position = dict(hosts.table), hosts.position
            assert old == {"a": 1, "b": 2, "c": 3} and isinstance(seen[-1][0], Synced), (old, seen)
            first = len(seen)
            network.silence()
            await admin.request("delete", subject="maps.rebuild")
            await admin.request("create", subject="maps.rebuild", kind="map")
            await admin.publish("maps.rebuild", 2, reply=True, key="b")  # as it was
            await admin.publish("maps.rebuild", 30, reply=True, key="c")  # another value
            await admin.publish("maps.rebuild", 4, reply=True, key="d")  # a new key
            new = {"b": 2, "c": 30, "d": 4}

            async def rebuilt():
                return hosts.synced and len(seen) > first and isinstance(seen[-1][0], Synced)

            await poll(rebuilt, bool, "the table rebuilt")
            assert hosts.table == new, dict(hosts.table)
            (gap, at_gap), *differences, (synced, at_synced) = seen[first:]
            assert isinstance(gap, Gap) and gap.reason == "not_resumed" and gap.cause.code == "connection_lost", gap
            assert sorted((type(event).__name__, event.key, getattr(event, "value", None), getattr(event, "reason", None))
                          for event, _ in differences) == [
                ("Removed", "a", None, "not_resumed"), ("Value", "c", 30, None), ("Value", "d", 4, None)], differences
            # Never half a table: the old one until the snapshot was whole, then the new one whole.
            assert at_gap == old and all(table == new for _, table in differences) and at_synced == new, seen[first:]
            subs = [body for body in sent if body["op"] == "sub"]
            assert [body.get("from") for body in subs] == [None, old_position], subs
            assert [line.get("resumed") for line in replies if line.get("sid") == hosts.sid] == [None, False], replies
            assert hosts.position.split(":")[0] != old_position.split(":")[0], (hosts.position, old_position)
            assert [(reason.code, reason.message) for reason in reasons] == [
                ("connection_lost", "no answer to a keep-alive ping within 1 s")], reasons
            # Live changes go on, applied to the new table.
            await admin.delete_key("maps.rebuild", "b", reply=True)
            await admin.publish("maps.rebuild", 5, reply=True, key="e")
            await poll(lambda: asyncio.sleep(0, dict(hosts.table)), lambda table: table == {"c": 30, "d": 4, "e": 5},
                       "the live changes")
            assert [(type(event), event.key) for event, _ in seen[-2:]] == [(Removed, "b"), (Value, "e")], seen[-2:]
        finally:
            if hosts is not None:
                await hosts.unsubscribe()
            if client is not None:
                await client.close()
            await admin.close()
            network.close()

    def test_the_blocking_client_keeps_a_maps_table(self, d):
        with runnel.blocking.connect(url(d), token=TOKEN) as client:
            client.request("create", subject="maps.blocking", kind="map")
            client.publish("maps.blocking", "one", reply=True, key="a")
            client.publish("maps.blocking", "two", key="b")
            hosts = client.subscribe_map("maps.blocking")
            hosts.wait_synced(timeout=DEADLINE)
            assert hosts.synced and hosts.table == {"a": "one", "b": "two"}, hosts.table
            assert client.delete_key("maps.blocking", "a", reply=True) == 1
            events = iter(hosts)
            assert [type(next(events)) for _ in range(3)] == [Value, Value, Synced]
            removed = next(events)
            assert (type(removed), removed.key, removed.reason) == (Removed, "a", "deleted"), removed
            assert hosts.table == {"b": "two"}, hosts.table
            hosts.unsubscribe()

    @runs_async
    async def test_a_full_buffer_drops_the_newest_and_reports_a_gap(self, d):
        subscriber = await connected(d, buffer=10)
        publisher = await connected(d)
        before = await publisher.request("stats")
        subscription = await subscriber.subscribe("buffer.drop")
        for n in range(50):
            await publisher.publish("buffer.drop", n)
        await publisher.request("ping")
        # The subscriber's ping is answered after every event the server wrote it before.
        await subscriber.request("ping")
        first = await take(subscription, 11)
        assert [event.value for event in first[:10]] == list(range(10))
        assert first[10] == Gap("overflow", 40), first[10]
        await publisher.publish("buffer.drop", 50)
        assert (await take(subscription, 1))[0].value == 50
        after = await publisher.request("stats")
        assert after["dropped"] == before["dropped"], "the client dropped them, not the server"
        await subscriber.close()
        await publisher.close()

    @runs_async
    async def test_a_full_buffer_under_overflow_wait_loses_nothing(self, d):
        subscriber = await connected(d, buffer=10, overflow="wait")
        publisher = await connected(d)
        subscription = await subscriber.subscribe("buffer.wait")
        for n in range(2000):
            await publisher.publish("buffer.wait", {"n": n, "pad": "x" * 100})
        await publisher.request("ping")
        # The client stopped reading at 10: the rest waited in the sockets, and all of it comes.
        assert [event.value["n"] for event in await take(subscription, 2000)] == list(range(2000))
        await subscriber.close()
        await publisher.close()

    @runs_async
    async def test_clean_close_disposes_the_servers_subscriptions(self, d):
        admin, before = await quiet_stats(d)
        client = await connected(d)
        await client.subscribe("close.a", {"throttle": 30})  # a value waiting holds a timer
        await client.subscribe("close.>", {"filter": ".x > 1"})
        await client.subscribe("close.b", {"ops": [{"op": "delay", "seconds": 30}]})
        await client.publish("close.a", {"x": 5})
        await client.publish("close.b", {"x": 5})
        during = await poll(lambda: admin.request("stats"), lambda s: s["timers"] >= before["timers"] + 2, "timers")
        assert during["subscriptions"] == before["subscriptions"] + 3, during
        assert during["connections"] == before["connections"] + 1, during
        await client.close()
        keys = ("connections", "subscriptions", "timers")
        await poll(lambda: admin.request("stats"), lambda s: all(s[k] == before[k] for k in keys), "stats as before")
        await expect_error(client.publish("close.a", 1), "closed")
        await admin.close()

    def test_the_blocking_client(self, d):
        with runnel.blocking.connect(url(d), token=TOKEN) as client:
            client.request("create", subject="blocking.r", kind="replay", capacity=5)
            assert client.publish("blocking.r", "one", reply=True) == 0
            client.publish("blocking.r", "two")
            subscription = client.subscribe("blocking.r", {"ops": [{"op": "take", "count": 2}]})
            assert [event.value for event in subscription] == ["one", "two"]
            seen, done = [], threading.Event()
            client.subscribe("blocking.r", {"from": subscription.position}, seen.append,
                             on_end=lambda error: done.set())
            client.publish("blocking.r", "three")
            client.request("complete", subject="blocking.r")
            assert done.wait(DEADLINE), "no completion"
            assert [event.value for event in seen] == ["three"], seen
            try:
                client.subscribe("blocking.r", {"map": "+"})
                raise AssertionError("no bad_expr")
            except RunnelError as error:
                assert error.code == "bad_expr"
        with contextlib.suppress(RunnelError):
            runnel.blocking.connect(url(d), token="wrong")
            raise AssertionError("a wrong token was accepted")

    @runs_async
    async def test_a_connection_gone_silent_is_noticed_by_the_keepalive_and_resumed(self, d):
        # keepalive = 1 s, timeout = 1 s: a connection the network dropped silently is taken for lost
        # within about 2 s, and the subscription resumes on a new one with nothing lost.
        network = SilentNetwork(d.port)
        admin = await connected(d)
        await admin.request("create", subject="silent.r", kind="replay", capacity=100)
        reasons = []
        client = await runnel.connect(f"runnel://127.0.0.1:{network.port}", token=TOKEN, keepalive=1, timeout=1,
                                      on_disconnect=reasons.append)
        subscription = await client.subscribe("silent.r")
        assert await admin.publish("silent.r", 0, reply=True) == 1
        assert (await take(subscription, 1))[0].value == 0
        network.silence()
        for n in range(1, 6):
            await admin.publish("silent.r", n, reply=True)
        assert [event.value for event in await take(subscription, 5)] == [1, 2, 3, 4, 5]
        assert [(reason.code, reason.message) for reason in reasons] == [
            ("connection_lost", "no answer to a keep-alive ping within 1 s")], reasons
        # A quiet connection that answers is kept: its pings are answered.
        await asyncio.sleep(3)
        assert len(reasons) == 1 and client.connected, reasons
        await client.close()
        await admin.close()
        network.close()

    @runs_async
    async def test_a_call_to_a_stopped_server_fails_at_its_deadline_and_the_client_goes_on(self, d):
        client = await connected(d, call_timeout=1)
        with stopped(d):
            error = await timed_out(client.request("stats"), 1, "stats: no reply", "the client was connected")
            assert "disconnected" not in error.message, error
            await timed_out(client.publish("deadline.a", 1, reply=True), 1, "pub deadline.a: no reply")
            await timed_out(client.authenticate(TOKEN), 1, "auth: no reply")
            # A quiet publish returns once written: past the sockets' buffers, it cannot be.
            big = "x" * 500_000
            for _ in range(400):
                started = time.monotonic()
                try:
                    await asyncio.wait_for(client.publish("deadline.big", big, timeout=0.5), DEADLINE)
                except RunnelError as error:
                    assert error.code == "timeout" and 0.5 <= time.monotonic() - started < 2.5, error
                    assert "pub deadline.big: not written within 0.5 s (the client was connected" in error.message, error
                    break
                except asyncio.TimeoutError:
                    raise AssertionError("a quiet publish still waiting after DEADLINE: no deadline") from None
            else:
                raise AssertionError("200 MB written to a stopped runneld")
        # Back: the late replies are ignored, and the client works as before.
        subscription = await client.subscribe("deadline.a")
        assert await client.publish("deadline.a", 2, reply=True) == 1
        assert (await take(subscription, 1))[0].value == 2
        assert client.connected and (await client.request("ping"))["ok"]
        await client.close()

    @runs_async
    async def test_a_per_call_timeout_overrides_the_clients(self, d):
        client = await connected(d)  # call_timeout: 30 s by default
        quick = await connected(d, call_timeout=0.5)
        with stopped(d):
            await timed_out(client.request("ping", timeout=0.5), 0.5, "ping: no reply")
            await timed_out(client.subscribe("deadline.b", timeout=0.5), 0.5, "sub deadline.b: no reply")
            # Longer than the client's: it outlives a call that has the client's deadline.
            patient = asyncio.create_task(quick.request("ping", timeout=DEADLINE))
            await timed_out(quick.request("ping"), 0.5, "ping: no reply")
            assert not patient.done(), patient
        assert (await asyncio.wait_for(patient, DEADLINE))["ok"]
        for bad in (0, -1):
            try:
                await client.request("ping", timeout=bad)
                raise AssertionError(f"timeout={bad} was accepted")
            except ValueError:
                pass
        await client.close()
        await quick.close()

    @runs_async
    async def test_a_sub_past_its_deadline_leaves_no_subscription_behind(self, d):
        admin, before = await quiet_stats(d)
        client = await connected(d)
        with stopped(d):
            await timed_out(client.subscribe("deadline.sub", timeout=0.5), 0.5, "sub deadline.sub: no reply",
                            "a subscription it makes is undone")
        # Answered in order: once the ping's reply is in, so is the late `sub`'s, which made the
        # subscription in the server; the client undoes it, and keeps no Subscription for it (a
        # reconnect would subscribe again what the client keeps).
        await client.request("ping")
        await subscriptions_back_to(admin, before, "the late subscription undone")
        assert not client._subscriptions, client._subscriptions
        assert await admin.publish("deadline.sub", 1, reply=True) == 0
        await client.close()
        await admin.close()

    @runs_async
    async def test_leaving_an_async_for_loop_unsubscribes(self, d):
        admin, before = await quiet_stats(d)
        client = await connected(d)
        for leaving in ("break", "raise"):
            subscription = await client.subscribe("loop.a")
            for n in range(1, 4):
                await client.publish("loop.a", n)
            seen = []
            with contextlib.suppress(LookupError):
                async for event in subscription:
                    seen.append(event.value)
                    if event.value == 2:
                        if leaving == "break":
                            break
                        raise LookupError("the consumer's own")
            assert seen == [1, 2], (leaving, seen)
            await subscriptions_back_to(admin, before, f"unsubscribed by a {leaving}")
            await expect_end(subscription)
        # Taking events one at a time (anext) unsubscribes nothing; a loop that runs to completion
        # ends with the subscription.
        kept = await client.subscribe("loop.b")
        await client.publish("loop.b", 1)
        assert (await take(kept, 1))[0].value == 1
        stats = await admin.request("stats")
        assert stats["subscriptions"] == before["subscriptions"] + 1, stats
        completing = await client.subscribe("loop.c", {"ops": [{"op": "take", "count": 2}]})
        await client.publish("loop.c", 1)
        await client.publish("loop.c", 2)
        assert [event.value async for event in completing] == [1, 2]
        await kept.unsubscribe()
        await subscriptions_back_to(admin, before, "kept, unsubscribed")
        await client.close()
        await admin.close()

    def test_the_blocking_clients_calls_have_deadlines_and_its_loops_unsubscribe(self, d):
        with runnel.blocking.connect(url(d), token=TOKEN) as admin, \
                runnel.blocking.connect(url(d), token=TOKEN, call_timeout=0.5) as client:
            before = admin.request("stats")
            with stopped(d):
                for call, arguments, options, seconds in (
                        (client.request, ("ping",), {}, 0.5),
                        (client.publish, ("blocking.deadline", 1, True), {"timeout": 0.3}, 0.3),
                        (client.subscribe, ("blocking.deadline",), {}, 0.5)):
                    started = time.monotonic()
                    try:
                        blocking_call(call, *arguments, **options)
                        raise AssertionError(f"{call.__name__} returned")
                    except RunnelError as error:
                        took = time.monotonic() - started
                        assert error.code == "timeout" and f"within {seconds:g} s" in error.message, error
                        assert seconds <= took < seconds + 2, (call.__name__, took)
            assert blocking_call(client.request, "ping", timeout=DEADLINE)["ok"]
            # Leaving a `for` loop early unsubscribes.
            subscription = client.subscribe("blocking.loop")
            for n in range(1, 4):
                client.publish("blocking.loop", n)
            for event in subscription:
                if event.value == 2:
                    break
            client.request("ping")  # after the `unsub` the loop sent, as the server reads them
            poll_until(lambda: admin.request("stats"), lambda s: s["subscriptions"] == before["subscriptions"],
                       "unsubscribed by a break")

    @runs_async
    async def test_a_wrong_port_is_named_at_connect(self, d):
        trusting = {"ssl": trusting_context()}
        for address, options, code, advice in (
                (f"runnel://127.0.0.1:{d.http_port}", {}, "wrong_port",
                 f"this port speaks HTTP; use ws://127.0.0.1:{d.http_port}/ws"),
                (f"ws://127.0.0.1:{d.port}/ws", {}, "wrong_port",
                 f"this port speaks runnel's line protocol, not HTTP; use runnel://127.0.0.1:{d.port}"),
                (f"runnels://127.0.0.1:{d.https_port}", trusting, "wrong_port",
                 f"this port speaks HTTPS; use wss://127.0.0.1:{d.https_port}/ws"),
                (f"wss://127.0.0.1:{d.tls_port}/ws", trusting, "wrong_port",
                 f"this port speaks runnel's line protocol, not HTTP; use runnels://127.0.0.1:{d.tls_port}")):
            error = await expect_error(asyncio.wait_for(runnel.connect(address, token=TOKEN, **options), DEADLINE),
                                       code)
            assert advice in error.message and error.message.startswith(address), error
        try:
            runnel.blocking.connect(f"runnel://127.0.0.1:{d.http_port}", token=TOKEN)
            raise AssertionError("the blocking client connected to the HTTP port")
        except RunnelError as error:
            assert error.code == "wrong_port", error

    # Last: it changes the configuration.
    @runs_async
    async def test_a_token_removed_by_a_reload_ends_its_subscriptions_without_reconnecting(self, d):
        # Static tokens do not expire; a reload that removes one is how a token stops working today.
        admin = await connected(d)
        reasons, lost = [], asyncio.Event()
        client = await runnel.connect(url(d), token="revoked-token",
                                      on_disconnect=lambda reason: (reasons.append(reason), lost.set()))
        subscription = await client.subscribe("reload.a")
        before = await admin.request("stats")
        config = os.path.join(d.directory, "runneld.toml")
        with open(config) as file:
            text = file.read()
        with open(config, "w") as file:
            file.write(text.replace(', "revoked-token"', ""))
        d.process.send_signal(signal.SIGHUP)
        await wait_for_event(lost, "disconnect")
        assert [(reason.code, reason.message) for reason in reasons] == [
            ("unauthorized", "the token was removed from the configuration")], reasons
        try:
            await take(subscription, 1)
            raise AssertionError("the subscription went on")
        except RunnelError as error:
            assert error.code == "unauthorized", error
        await expect_error(client.publish("reload.a", 1, reply=True), "unauthorized")
        await poll(lambda: admin.request("stats"), lambda s: s["connections"] == before["connections"] - 1,
                   "the connection closed and not opened again")
        await client.close()
        await admin.close()

    def test_asyncio_run_returns_with_a_subscription_left_open_after_anext(self, d):
        """A program that takes one event with `anext()` and returns, its subscription open: the
        generator `asyncio.run` closes at exit finds the client's reader cancelled, ends the
        subscription here without waiting for an answer that cannot come, and the run returns."""
        program = f"""
import asyncio, sys
sys.path.insert(0, {os.path.join(ROOT, "clients", "python", "src")!r})
import runnel

async def main():
    client = await runnel.connect({url(d)!r}, token={TOKEN!r})
    events = aiter(await client.subscribe("left.open"))
    await client.publish("left.open", 1, reply=True)
    print((await anext(events)).value, flush=True)

asyncio.run(main())
print("returned", flush=True)
"""
        ran = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=30)
        assert ran.returncode == 0 and ran.stdout.split() == ["1", "returned"], (ran.stdout, ran.stderr)

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestRestart:
    """runneld killed with SIGKILL and started again on its ports and data."""

    @pytest.fixture(scope="class")
    def restarts(self, binary):
        """The daemon the checks kill and start again; stopped after them (its directory removed)."""
        restarts = Restarts(binary)
        try:
            yield restarts
        finally:
            restarts.daemon.stop()

    @runs_async
    async def test_a_durable_subscription_resumes_across_a_kill_with_nothing_lost_or_repeated(self, restarts):
        d = restarts.daemon
        clients, events = [], []
        for address in (url(d), d.ws_url):
            lost, _, on_disconnect = noticing()
            clients.append(await runnel.connect(address, token=TOKEN, on_disconnect=on_disconnect))
            events.append(lost)
        publisher, ws_subscriber = clients
        await publisher.request("create", subject="durable.orders", kind="replay", capacity=1000, durable=True)
        subscriptions = [await publisher.subscribe("durable.orders"), await ws_subscriber.subscribe("durable.orders"),
                         await ws_subscriber.subscribe("durable.>")]
        for n in range(1, 51):
            await publisher.publish("durable.orders", n, reply=n == 50)
        for subscription in subscriptions:
            assert await values_until(subscription, 50) == list(range(1, 51))
        await restarts.kill(*events)
        await restarts.restart()
        # The publisher's requests wait for its reconnection; with fsync = "always" the epoch holds.
        for n in range(51, 101):
            await publisher.publish("durable.orders", n, reply=n == 100)
        single, over_ws, pattern = subscriptions
        assert await values_until(single, 100) == list(range(51, 101))
        assert await values_until(over_ws, 100) == list(range(51, 101))
        # A pattern cannot resume: a gap, and the values it had (replayed again) are not repeated.
        gaps = []
        assert await values_until(pattern, 100, gaps) == list(range(51, 101))
        assert [(at, gap.reason, gap.cause.code) for at, gap in gaps] == [(0, "not_resumed", "connection_lost")], gaps
        assert single.position.endswith(":100")
        for client in clients:
            await client.close()

    @runs_async
    async def test_a_plain_subscription_reports_a_gap_across_a_kill(self, restarts):
        d = restarts.daemon
        lost, reasons, on_disconnect = noticing()
        client = await runnel.connect(url(d), token=TOKEN, on_disconnect=on_disconnect)
        subscription = await client.subscribe("plain.ticks")
        # A client that does not reconnect: its subscription ends with the loss.
        once_lost, _, once_disconnect = noticing()
        once = await runnel.connect(url(d), token=TOKEN, reconnect=False, on_disconnect=once_disconnect)
        ended = await once.subscribe("plain.ticks")
        for n in range(1, 4):
            await client.publish("plain.ticks", n)
        assert await values_until(subscription, 3) == [1, 2, 3]
        assert await values_until(ended, 3) == [1, 2, 3]
        position = subscription.position
        await restarts.kill(lost, once_lost)
        # A subscribe made while the client reconnects waits for the connection, and is made once.
        late = asyncio.create_task(client.subscribe("plain.late"))
        await restarts.restart()
        await expect_error(anext(ended), "connection_lost")
        await expect_error(once.publish("plain.ticks", 0), "connection_lost")
        # The restarted server has a new epoch for the subject: no resume, a gap before what follows.
        gap = await asyncio.wait_for(anext(subscription), DEADLINE)
        assert gap.reason == "not_resumed" and gap.count is None and gap.cause.code == "connection_lost", gap
        assert [reason.code for reason in reasons] == ["connection_lost"], reasons
        await client.publish("plain.ticks", 4)
        event = await asyncio.wait_for(anext(subscription), DEADLINE)
        assert event.value == 4 and event.pos.split(":")[0] != position.split(":")[0], (event, position)
        assert not once.connected
        late_subscription = await asyncio.wait_for(late, DEADLINE)
        await client.publish("plain.late", "late")
        assert await values_until(late_subscription, "late") == ["late"]
        await client.close()
        await once.close()

    @runs_async
    async def test_calls_while_runneld_is_down_fail_at_their_deadline(self, restarts):
        d = restarts.daemon
        lost, reasons, on_disconnect = noticing()
        client = await runnel.connect(url(d), token=TOKEN, call_timeout=1, on_disconnect=on_disconnect)
        kept = await client.subscribe("down.kept")
        await restarts.kill(lost)
        disconnected = ("not sent within", f"the client was disconnected, reconnecting to {url(d)} (the connection "
                        "was lost: connection_lost")
        await timed_out(client.publish("down.a", 1, reply=True), 1, "pub down.a: ", *disconnected)
        # A quiet publish too: it cannot be written anywhere.
        await timed_out(client.publish("down.a", 2), 1, "pub down.a: ", *disconnected)
        await timed_out(client.request("stats", timeout=0.3), 0.3, "stats: ", *disconnected)
        await timed_out(client.subscribe("down.b", timeout=0.3), 0.3, "sub down.b: ", *disconnected)
        await timed_out(client.authenticate(TOKEN, timeout=0.3), 0.3, "auth: ", *disconnected)
        # One with a deadline long enough waits for the reconnection.
        patient = asyncio.create_task(client.publish("down.kept", 3, reply=True, timeout=DEADLINE))
        await restarts.restart()
        assert await asyncio.wait_for(patient, DEADLINE) == 1
        assert (await take(kept, 2))[1].value == 3  # after the gap of the restart
        # Nothing of the calls that gave up is left: the server has the one subscription.
        assert (await client.request("stats"))["subscriptions"] == 1
        assert [reason.code for reason in reasons] == ["connection_lost"], reasons
        await client.close()

    @runs_async
    async def test_a_reconnect_that_meets_the_wrong_port_gives_up(self, restarts):
        lost, reasons, on_disconnect = noticing()
        client = await runnel.connect(url(restarts.daemon), token=TOKEN, on_disconnect=on_disconnect)
        subscription = await client.subscribe("swapped.a")
        await restarts.kill(lost)
        # Back with its HTTP port where its line port was: the client's reconnect meets HTTP.
        await restarts.restart(swapped=True)
        try:
            error = await expect_error(asyncio.wait_for(anext(subscription), DEADLINE), "wrong_port")
            assert "this port speaks HTTP; use ws://" in error.message, error
            await expect_error(client.publish("swapped.a", 1), "wrong_port")
            assert not client.connected and [reason.code for reason in reasons] == ["connection_lost"], reasons
        finally:
            restarts.daemon.kill()
            await restarts.restart(swapped=True)
        await client.close()


@pytest.mark.daemon(SLOW_CONFIG)
class TestSlow:
    """A consumer the server cuts (`closing` slow_consumer), or drops events for."""

    @runs_async
    async def test_a_closing_line_is_the_disconnect_reason_and_the_subscription_resumes(self, d):
        lost, reasons, on_disconnect = noticing()
        # overflow "wait" with a buffer of 1: the client stops reading at once, and the server cuts it.
        subscriber = await connected(d, buffer=1, overflow="wait", on_disconnect=on_disconnect)
        publisher = await connected(d)
        # Watched over a connection of its own: a `stats` behind the publisher's values would come
        # back only once all of them were read.
        watcher = await connected(d)
        count = 20_000  # 20 MB: past the kernel's buffers and the server's 256 KiB
        await publisher.request("create", subject="slow.r", kind="replay", capacity=count)
        subscription = await subscriber.subscribe("slow.r")
        for n in range(count):
            await publisher.publish("slow.r", {"n": n, "pad": "x" * 1000})
        await poll(lambda: watcher.request("stats"), lambda s: s["slow_consumer_disconnects"] == 1, "the cut", 30)
        assert not lost.is_set(), "the client read past a full buffer"
        # Reading again at once (the server flushes a closing line for 2 s), the client meets the
        # closing line, reconnects and resumes: nothing missed.
        seen = [event.value["n"] for event in await take(subscription, count)]
        await watcher.close()
        assert seen == list(range(count)), (len(seen), seen[:3])
        # The cuts are slow_consumer ones, told by their closing line; its replay after each
        # reconnect may outrun it again. A cut whose closing line does not reach the client within
        # the server's 2 s flush (a loaded machine, the client still catching up) is a lost
        # connection instead: allowed, but not all of them.
        assert ("slow_consumer", "") in {(reason.code, reason.message) for reason in reasons}, reasons
        assert {reason.code for reason in reasons} <= {"slow_consumer", "connection_lost"}, reasons
        await subscriber.close()
        await publisher.close()

    @runs_async
    async def test_the_servers_dropped_events_are_gaps_with_their_count(self, d):
        # A subject whose policy is "drop": the server drops what the stalled client cannot take.
        subscriber = await connected(d, buffer=1, overflow="wait")
        publisher = await connected(d)
        before = await publisher.request("stats")
        await publisher.request("create", subject="slow.drop", kind="subject", slow_consumer="drop")
        subscription = await subscriber.subscribe("slow.drop")
        count = 20_000
        for n in range(count):
            await publisher.publish("slow.drop", {"n": n, "pad": "x" * 1000})
        await poll(lambda: publisher.request("stats"), lambda s: s["dropped"] > before["dropped"], "drops", 30)
        events = []

        async def consume():
            async for event in subscription:
                events.append(event)

        consumer = asyncio.create_task(consume())
        # Once the subscriber has read up to its ping's reply it reads as fast as the server writes:
        # the marker after it is delivered, with the `dropped` event that waited for it.
        await subscriber.request("ping")
        await publisher.publish("slow.drop", {"n": count}, reply=True)
        async def received():
            return events

        await poll(received, lambda e: e and getattr(e[-1], "value", {}).get("n") == count, "the marker")
        consumer.cancel()
        values = [event.value["n"] for event in events if isinstance(event, Value)]
        gaps = [event for event in events if isinstance(event, Gap)]
        assert gaps and {gap.reason for gap in gaps} == {"dropped"}, gaps
        assert values == sorted(values) and len(values) + sum(gap.count for gap in gaps) == count + 1, (len(values),
                                                                                                        gaps)
        after = await publisher.request("stats")
        assert after["dropped"] - before["dropped"] == sum(gap.count for gap in gaps), (after["dropped"], gaps)
        await subscriber.close()
        await publisher.close()

    @runs_async
    async def test_a_conflating_subscription_gets_the_latest_values_and_a_gap_for_the_rest(self, d):
        # `conflate`: while the client reads nothing (overflow "wait" with a buffer of 1: its reader
        # stops at the first event nobody takes) the server keeps one value for it, not 20 MB (the
        # 256 KiB limit many times over: a subscriber that is not conflating is cut). Every wait
        # has a deadline and the clients are closed whatever happens (this check once hung CI: a
        # close() that waited for a reader which had dropped its cancellation, fixed since).
        lost, reasons, on_disconnect = noticing()
        count = 20_000
        clients = []
        try:
            subscriber = await connected(d, buffer=1, overflow="wait", call_timeout=DEADLINE,
                                         on_disconnect=on_disconnect)
            clients.append(subscriber)
            publisher = await connected(d, call_timeout=DEADLINE)
            clients.append(publisher)
            sent, replies = recording_lines(subscriber)
            before = await publisher.request("stats")
            subscription = await subscriber.subscribe("slow.conflate", {"conflate": True})

            async def publish_every_value():
                for n in range(count):
                    await publisher.publish("slow.conflate", {"n": n, "pad": "x" * 1000})
                # Answered once the server has handled every value: kept, sent or replaced.
                await publisher.request("ping")

            await asyncio.wait_for(publish_every_value(), 60)
            assert not lost.is_set(), reasons
            events = []

            async def read_to_the_last_value():
                while not (events and isinstance(events[-1], Value) and events[-1].value["n"] == count - 1):
                    events.append(await asyncio.wait_for(anext(subscription), DEADLINE))

            try:
                await asyncio.wait_for(read_to_the_last_value(), 60)
            except asyncio.TimeoutError:
                last = [event.value["n"] if isinstance(event, Value) else event for event in events[-3:]]
                raise AssertionError(f"the last value did not come: {len(events)} events, the last {last}") from None
            values = [event.value["n"] for event in events if isinstance(event, Value)]
            gaps = [event for event in events if isinstance(event, Gap)]
            assert gaps and {gap.reason for gap in gaps} == {"dropped"}, gaps[:5]
            assert all(isinstance(gap.count, int) and gap.count > 0 for gap in gaps), gaps[:5]
            assert all(a < b for a, b in zip(values, values[1:])), "values out of order or repeated"
            replaced = sum(gap.count for gap in gaps)
            assert len(values) + replaced == count, (len(values), replaced)
            # Each gap stands where its values would have been: it counts those between the value
            # before it and the one after.
            previous = -1
            for at, event in enumerate(events):
                if isinstance(event, Gap):
                    following = events[at + 1]
                    assert isinstance(following, Value) and following.value["n"] - previous - 1 == event.count, (
                        previous, event, following.value["n"] if isinstance(following, Value) else following)
                else:
                    previous = event.value["n"]
            after = await publisher.request("stats")
            assert after["slow_consumer_disconnects"] == before["slow_consumer_disconnects"], "the subscriber was cut"
            assert after["dropped"] - before["dropped"] == replaced, (after["dropped"] - before["dropped"], replaced)
            assert not reasons and subscriber.connected, reasons
            # A reconnect subscribes again, conflating again: the connection is closed under the
            # client (as the JavaScript check closes its WebSocket), which reconnects.
            await subscriber._transport.close()
            await wait_for_event(lost, "the client noticing its closed connection")

            async def is_connected():
                return subscriber.connected  # set once its subscriptions are subscribed again

            await poll(is_connected, bool, "the reconnect")
            assert await publisher.publish("slow.conflate", {"n": count}, reply=True) == 1
            [event] = await take(subscription, 1)
            assert isinstance(event, Value) and event.value["n"] == count, event
            subs = [body for body in sent if body["op"] == "sub"]
            assert [(body["sid"], body.get("conflate")) for body in subs] == [(subscription.sid, True)] * 2, subs
            assert [line["ok"] for line in replies if line.get("sid") == subscription.sid] == [True, True], replies
            assert [reason.code for reason in reasons] == ["connection_lost"], reasons
        finally:
            unclosed = []
            for client in clients:
                try:
                    await asyncio.wait_for(client.close(), DEADLINE)
                except asyncio.TimeoutError:
                    unclosed.append(client)
            assert not unclosed, f"{len(unclosed)} client(s) still closing after {DEADLINE} s"

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(EXPIRY_CONFIG)
class TestExpiry:
    """JWTs, which expire."""

    @runs_async
    async def test_an_expired_token_fails_at_connect_and_an_expiring_one_ends_the_connection(self, d):
        # Expired already: refused at connect, over TCP and WebSocket, naming the expiry.
        for address in (url(d), d.ws_url):
            error = await expect_error(runnel.connect(address, token=expiring_token(-60)), "unauthorized")
            assert error.message == "JWT expired", error
        # Expiring while connected: the server's closing line (`unauthorized`, "token expired") is the
        # reason, the subscription ends with that error, and the client does not reconnect with the
        # token it has (it would be refused).
        reasons, lost = [], asyncio.Event()
        client = await runnel.connect(url(d), token=expiring_token(2),
                                      on_disconnect=lambda reason: (reasons.append(reason), lost.set()))
        subscription = await client.subscribe("expiry.a")
        assert await client.publish("expiry.a", 1, reply=True) == 1
        assert (await take(subscription, 1))[0].value == 1
        await wait_for_event(lost, "the expiry")
        assert [(reason.code, reason.message) for reason in reasons] == [("unauthorized", "token expired")], reasons
        try:
            await take(subscription, 1)
            raise AssertionError("the subscription went on")
        except RunnelError as error:
            assert error.code == "unauthorized", error
        await expect_error(client.publish("expiry.a", 2, reply=True), "unauthorized")
        await client.close()

    @runs_async
    async def test_a_token_function_refreshes_its_jwt_and_authenticate_replaces_a_token(self, d):
        # A function hands out 3-second JWTs (the server allows no leeway here): the client sends a
        # new one as `auth` before each expires, so the connection and its subscription outlive
        # several tokens, over TCP with a plain function and over WebSocket with an async one.
        for address, is_async in ((url(d), False), (d.ws_url, True)):
            minted, reasons = [], []

            def mint():
                minted.append(expiring_token(3))
                return minted[-1]

            async def mint_async():
                return mint()

            client = await runnel.connect(address, token=mint_async if is_async else mint, on_disconnect=reasons.append)
            subscription = await client.subscribe("expiry.refresh")
            for n in range(8):
                assert await client.publish("expiry.refresh", n, reply=True) == 1
                await asyncio.sleep(1)
            assert [event.value for event in await take(subscription, 8)] == list(range(8))
            assert reasons == [] and len(minted) >= 3, (reasons, len(minted))
            await client.close()
        # A token given by hand: a refused one leaves the connection as it was; a good one before
        # the old one expires keeps the connection past that expiry.
        reasons = []
        client = await runnel.connect(url(d), token=expiring_token(2), on_disconnect=reasons.append)
        await expect_error(client.authenticate("not-a-token"), "unauthorized")
        await client.authenticate(expiring_token(60))
        await asyncio.sleep(3)
        assert await client.publish("expiry.b", 1, reply=True) == 0 and reasons == [], reasons
        await client.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


class TestPackage:
    """pip install ./clients/python."""

    def test_the_package_installs_with_pip(self, binary):
        with tempfile.TemporaryDirectory() as work:
            source = os.path.join(work, "source")
            shutil.copytree(os.path.join(ROOT, "clients", "python"), source,
                            ignore=shutil.ignore_patterns("__pycache__"))
            target = os.path.join(work, "site")
            subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", target, source],
                           check=True, capture_output=True, timeout=120)
            probe = ("import runnel, runnel.blocking, os; print(os.path.dirname(runnel.__file__)); "
                     "print(sorted(runnel.__all__))")
            result = subprocess.run([sys.executable, "-c", probe], env=dict(os.environ, PYTHONPATH=target),
                                    capture_output=True, text=True, check=True)
            where, names = result.stdout.splitlines()
            assert where == os.path.join(target, "runnel"), where
            assert "'connect'" in names and "'RunnelError'" in names, names
            assert os.path.exists(os.path.join(target, "runnel", "py.typed"))
