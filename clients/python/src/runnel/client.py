"""The asyncio client: one connection to runneld at a time, its requests matched to their replies
by `ref`, and its subscriptions, each with its own bounded buffer and its last position, resumed
from that position after a reconnect (docs/clients.md)."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import random
import ssl as ssl_module
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, TypeVar, Union

from .tokens import Token, TokenSource, refresh_delay
from .transport import Transport, open_transport

log = logging.getLogger("runnel")
T = TypeVar("T")
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_decode = json.JSONDecoder().decode


class RunnelError(Exception):
    """A failure with the protocol's `code` (`bad_expr`, `unauthorized`, `slow_consumer`...), its
    `message`, and `stage` when a stage of a subscription caused it; or one of the client's own
    codes: `connection_lost` (the connection ended before the answer came) and `closed` (the client
    was closed)."""

    def __init__(self, code: str, message: str = "", stage: int | None = None) -> None:
        super().__init__(code + (f" (stage {stage})" if stage is not None else "") + (f": {message}" if message else ""))
        self.code = code
        self.message = message
        self.stage = stage

    @classmethod
    def of(cls, line: Mapping[str, Any]) -> RunnelError:
        """The error a reply, an `error` event or a `closing` line carries."""
        return cls(str(line.get("code")), str(line.get("message", "")), line.get("stage"))


@dataclass(frozen=True)
class Value:
    """A value of a subscription: `subject` is where it was published (for a pattern, the matching
    subject), `pos` its position `EPOCH:SEQ` (None for a value a stage made from no value of the
    subject, such as `startWith`'s)."""

    value: Any
    subject: str
    pos: str | None


@dataclass(frozen=True)
class Gap:
    """Values this subscription will never get, in place of where they would have been: `reason`
    is `dropped` (the server dropped `count` events: its slow-consumer policy `drop`; or, in a
    cluster, missed `count` values of other nodes, None when it does not know how many), `overflow`
    (the subscription's buffer in this client was full and `count` events were dropped) or
    `not_resumed` (after a reconnect, or with a `from` the server could not continue from, values
    may have been missed: `count` is None; `cause` says why the connection was lost)."""

    reason: Literal["dropped", "overflow", "not_resumed"]
    count: int | None = None
    cause: RunnelError | None = None


Event = Union[Value, Gap]

SubscribeOptions = TypedDict("SubscribeOptions", {
    "filter": str,  # an expression: a `filter` stage
    "map": str,  # an expression: a `map` stage, after the filter
    "throttle": float,  # seconds: a `throttle` stage, after both
    "ops": list[dict[str, Any]],  # more stages, after those
    "from": str,  # a position: continue right after it
}, total=False)


class Subscription:
    """One `sub`: an async iterator of `Value` and `Gap` events (or, given `on_value`, a callback
    for them), which ends when the subscription completes, raises RunnelError when it fails, and
    ends quietly after `unsubscribe()` or the client's `close()`."""

    def __init__(self, client: Client, sid: str, subject: str, ops: list[dict[str, Any]], start: str | None,
                 on_value: Callable[[Event], None] | None,
                 on_end: Callable[[RunnelError | None], None] | None) -> None:
        self.sid = sid
        self.subject = subject
        self.pattern = any(token in ("*", ">") for token in subject.split("."))
        self._client = client
        self._ops = ops
        self._on_value = on_value
        self._on_end = on_end
        # The newest position seen, per source subject; after a subscription that could not
        # resume, those a value must pass to be shown (a pattern's replay repeats what it sent).
        self._positions: dict[str, str] = {subject: start} if start and not self.pattern else {}
        self._skip: dict[str, tuple[str, int]] = {}
        self._subscribed_before = False
        self._queue: deque[Event] = deque()
        self._overflowed = 0
        self._room = asyncio.Event()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._error: RunnelError | None = None

    @property
    def position(self) -> str | None:
        """The position of the newest value of a one-subject subscription (or its `from`): give it
        as `from` to a later subscription to continue after it. None for a pattern."""
        return None if self.pattern else self._positions.get(self.subject)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self

    async def __anext__(self) -> Event:
        while not self._queue:
            if self._overflowed:
                return self._take_overflow()
            if self._ended:
                if self._error:
                    raise self._error
                raise StopAsyncIteration
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
        event = self._queue.popleft()
        self._room.set()
        return event

    async def unsubscribe(self) -> None:
        """Ends the subscription: in the server (`unsub`) and here (what it buffered is dropped)."""
        if self._ended:
            return
        self._end(None)
        self._queue.clear()
        if self._client.connected:
            # A connection lost meanwhile took the server's subscription with it.
            with contextlib.suppress(RunnelError):
                await self._client._call({"op": "unsub", "sid": self.sid})

    def _request(self) -> dict[str, Any]:
        body: dict[str, Any] = {"op": "sub", "subject": self.subject, "sid": self.sid, "positions": True}
        if self._ops:
            body["ops"] = self._ops
        if self.position:
            body["from"] = self.position
        return body

    def _answered(self, reply: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
        """The reply to this subscription's `sub` (handled before any of its events)."""
        if not reply.get("ok"):
            self._end(RunnelError.of(reply))
            return
        if self._ended:  # unsubscribed while a resubscription was under way
            self._client._send_soon({"op": "unsub", "sid": self.sid})
            return
        if reply.get("resumed") is False or (self._subscribed_before and "from" not in sent):
            self._skip = {subject: _split(pos) for subject, pos in self._positions.items()}
            self._put(Gap("not_resumed", cause=self._client.last_disconnect))
        self._subscribed_before = True

    def _event(self, line: Mapping[str, Any]) -> None:
        kind = line.get("ev")
        if kind == "next":
            subject = line.get("subject", self.subject)
            pos = line.get("pos")
            if pos:
                if subject in self._skip:
                    epoch, seq = _split(pos)
                    shown_epoch, shown_seq = self._skip[subject]
                    if epoch == shown_epoch and seq <= shown_seq:
                        return
                    del self._skip[subject]
                self._positions[subject] = pos
            self._put(Value(line.get("value"), subject, pos))
        elif kind == "dropped":
            count = line.get("count")
            self._put(Gap("dropped", None if count is None else int(count)))
        elif kind in ("completed", "error"):
            self._end(RunnelError.of(line) if kind == "error" else None)

    def _full(self) -> bool:
        return self._on_value is None and not self._ended and len(self._queue) >= self._client._buffer

    async def _room_made(self) -> None:
        """Returns once the consumer has taken an event from a full buffer (overflow `wait`)."""
        while self._full():
            self._room.clear()
            await self._room.wait()

    def _put(self, event: Event) -> None:
        if self._on_value is not None:
            _call_back(self._on_value, event)
            return
        if isinstance(event, Value) and len(self._queue) >= self._client._buffer:
            self._overflowed += 1
            return
        if self._overflowed:
            self._queue.append(self._take_overflow())
        self._queue.append(event)
        self._wake()

    def _take_overflow(self) -> Gap:
        count, self._overflowed = self._overflowed, 0
        return Gap("overflow", count)

    def _end(self, error: RunnelError | None) -> None:
        if self._ended:
            return
        self._ended = True
        self._error = error
        self._client._subscriptions.pop(self.sid, None)
        self._room.set()
        self._wake()
        if self._on_end is not None:
            _call_back(self._on_end, error)
        elif error is not None and self._on_value is not None:
            log.warning("runnel: the subscription to %s ended: %s", self.subject, error)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)


def _call_back(callback: Callable[[T], None], argument: T) -> None:
    """Calls one of the caller's callbacks: one that raises is logged, and stops nothing."""
    try:
        callback(argument)
    except Exception:  # noqa: BLE001 - the connection and its other subscriptions go on
        log.exception("runnel: a callback raised")


def _split(pos: str) -> tuple[str, int]:
    epoch, _, seq = pos.rpartition(":")
    return epoch, int(seq)


class Client:
    """A connection to runneld (see `connect`)."""

    def __init__(self, url: str, token: Token, ssl: ssl_module.SSLContext | None, server_hostname: str | None,
                 reconnect: bool, backoff: tuple[float, float], timeout: float, keepalive: float | None, buffer: int,
                 overflow: Literal["drop", "wait"], on_disconnect: Callable[[RunnelError], None] | None,
                 on_error: Callable[[RunnelError], None] | None) -> None:
        if buffer < 1 or overflow not in ("drop", "wait"):
            raise ValueError("buffer is at least 1, and overflow is 'drop' or 'wait'")
        self.url = url
        self.last_disconnect: RunnelError | None = None
        self._tokens = TokenSource(token)
        self._refresher: asyncio.Task[None] | None = None
        self._ssl = ssl
        self._server_hostname = server_hostname
        self._reconnect = reconnect
        self._backoff = backoff
        self._timeout = timeout
        self._keepalive = keepalive
        self._buffer = buffer
        self._overflow = overflow
        self._on_disconnect = on_disconnect
        self._on_error = on_error
        self._transport: Transport | None = None
        self._refs = itertools.count(1)
        self._sids = itertools.count(1)
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]], Callable[[dict[str, Any]], None] | None]] = {}
        self._subscriptions: dict[str, Subscription] = {}
        self._ready = asyncio.Event()
        self._final: RunnelError | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._supervisor: asyncio.Task[None] | None = None

    @property
    def connected(self) -> bool:
        return self._ready.is_set() and self._final is None

    async def publish(self, subject: str, value: Any = None, reply: bool = False) -> int | None:
        """Publishes `value` (any JSON value) to `subject`. With `reply`, waits for the server's
        answer and returns how many subscriptions received the value; without, returns at once,
        and a failure (the server answers only those) goes to `on_error`."""
        body = {"op": "pub", "subject": subject, "value": value}
        if reply:
            return int((await self._call(body))["receivers"])
        await self._wait_ready()
        await self._send(body)
        return None

    async def authenticate(self, token: str) -> None:
        """Sends `token` as `auth` on the live connection (RunnelError when refused: the
        connection keeps its rights); the next connections send it too, unless the token comes
        from a function. The new token's rights apply to the subscriptions already made."""
        await self._call({"op": "auth", "token": token})
        self._tokens.replace(token)

    async def request(self, op: str, **fields: Any) -> dict[str, Any]:
        """Sends one request (`create`, `list`, `stats`, `delete`, `complete`, `error`, `ping`...)
        and returns its reply; RunnelError when the server refused it."""
        if op in ("sub", "unsub", "auth"):
            raise ValueError(f"{op}: use subscribe(), Subscription.unsubscribe() or authenticate()")
        return await self._call({"op": op, **fields})

    async def subscribe(self, subject: str, options: SubscribeOptions | None = None,
                        on_value: Callable[[Event], None] | None = None, *,
                        on_end: Callable[[RunnelError | None], None] | None = None) -> Subscription:
        """Subscribes to `subject` (a name or a pattern) once the server has accepted it (else
        RunnelError: `bad_expr` with its `stage`, `unauthorized`...). Without `on_value`, iterate
        over the subscription; with it, `on_value` is called with each event and `on_end` (if
        given) with None at completion or the error that ended it."""
        options = options or {}
        ops: list[dict[str, Any]] = []
        if "filter" in options:
            ops.append({"op": "filter", "expr": options["filter"]})
        if "map" in options:
            ops.append({"op": "map", "expr": options["map"]})
        if "throttle" in options:
            ops.append({"op": "throttle", "seconds": options["throttle"]})
        ops += options.get("ops", [])
        subscription = Subscription(self, f"s{next(self._sids)}", subject, ops, options.get("from"), on_value, on_end)
        if subscription.pattern and "from" in options:
            raise ValueError("a pattern subscription has no position to start from")
        # Registered once connected, so that a reconnect under way does not subscribe it too.
        await self._wait_ready()
        self._subscriptions[subscription.sid] = subscription
        try:
            await self._call(subscription._request(), subscription._answered, ready=False)
        except RunnelError:
            self._subscriptions.pop(subscription.sid, None)
            raise
        return subscription

    async def close(self) -> None:
        """Closes the connection, which disposes every subscription in the server; subscriptions
        here end, requests still waiting fail with `closed`."""
        if self._final is not None:
            return
        self._final = RunnelError("closed", "the client was closed")
        self._ready.set()
        for subscription in list(self._subscriptions.values()):
            subscription._end(None)
        if self._supervisor is not None:
            self._supervisor.cancel()
            await asyncio.gather(self._supervisor, return_exceptions=True)
        for task in list(self._tasks):
            task.cancel()
        self._fail_pending(self._final)

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exception: object) -> None:
        await self.close()

    async def _start(self) -> None:
        """The first connection: its failure is the caller's."""
        reader = await self._open()
        self._supervisor = asyncio.create_task(self._supervise(reader))

    async def _open(self) -> asyncio.Task[RunnelError]:
        """Connects, authenticates (or pings), resubscribes every subscription from its position,
        and returns the task reading the connection."""
        transport = await open_transport(self.url, self._ssl, self._server_hostname, self._timeout)
        self._transport = transport
        reader = asyncio.create_task(self._read(transport))
        try:
            token = await asyncio.wait_for(self._tokens.current(), self._timeout)
            hello = {"op": "auth", "token": token} if token is not None else {"op": "ping"}
            await asyncio.wait_for(self._call(hello, ready=False), self._timeout)
            subscriptions = list(self._subscriptions.values())
            await asyncio.gather(*(self._call(s._request(), s._answered, ready=False, check=False)
                                   for s in subscriptions))
        except BaseException:
            reader.cancel()
            await asyncio.gather(reader, return_exceptions=True)
            await transport.close()
            raise
        self._ready.set()
        self._refresh_later(token)
        return reader

    def _refresh_later(self, token: str | None) -> None:
        """When `token` came from a function and is a JWT with `exp`: gets a new one and sends it
        as `auth` before it expires (a failure is logged; the expiry then closes the connection,
        and the reconnect asks the function again)."""
        if self._refresher is not None:
            self._refresher.cancel()
            self._refresher = None
        delay = refresh_delay(token, time.time()) if token is not None and self._tokens.refreshes else None
        if delay is None:
            return

        async def refresh() -> None:
            await asyncio.sleep(delay)
            try:
                fresh = await asyncio.wait_for(self._tokens.current(), self._timeout)
                await self._call({"op": "auth", "token": fresh})
            except asyncio.CancelledError:
                raise
            except Exception as error:  # noqa: BLE001: whatever the function raised, logged
                log.warning("runnel: the token's refresh failed: %s", error)
                return
            self._refresher = None
            self._refresh_later(fresh)

        self._refresher = asyncio.create_task(refresh())
        self._tasks.add(self._refresher)
        self._refresher.add_done_callback(self._tasks.discard)

    async def _supervise(self, reader: asyncio.Task[RunnelError]) -> None:
        """Waits for the connection to end; then reconnects with backoff (doubling from the first
        delay to the second, each drawn from its upper half), unless the reason is final."""
        try:
            while True:
                reason = await reader
                self._ready.clear()
                if self._transport is not None:
                    await self._transport.close()
                self.last_disconnect = reason
                if self._on_disconnect is not None:
                    _call_back(self._on_disconnect, reason)
                # A token refused now is refused again, unless a function hands out new ones.
                if not self._reconnect or (reason.code == "unauthorized" and not self._tokens.refreshes):
                    self._give_up(reason)
                    return
                delay = self._backoff[0]
                while True:
                    await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                    try:
                        reader = await self._open()
                        break
                    except RunnelError as error:
                        if error.code == "unauthorized":
                            self._give_up(error)
                            return
                        log.info("runnel: reconnecting to %s: %s", self.url, error)
                    except (OSError, asyncio.TimeoutError) as error:
                        log.info("runnel: reconnecting to %s: %s", self.url, error)
                    delay = min(delay * 2, self._backoff[1])
        finally:
            if self._transport is not None:
                await self._transport.close()

    async def _receive(self, transport: Transport) -> list[bytes]:
        """The connection's next lines. After `keepalive` seconds without a byte from the server,
        a `ping`: when nothing at all comes within `timeout` seconds more, the connection is taken
        for dead (a peer gone without a word, a network that dropped it, leaves a socket open
        that would never be read from again) and ConnectionError ends it, so the client
        reconnects."""
        if not self._keepalive:
            return await transport.receive()
        receiving = asyncio.ensure_future(transport.receive())
        try:
            return await asyncio.wait_for(asyncio.shield(receiving), self._keepalive)
        except asyncio.TimeoutError:
            pass
        self._send_soon({"op": "ping"})
        try:
            return await asyncio.wait_for(receiving, self._timeout)
        except asyncio.TimeoutError:
            raise ConnectionError(f"no answer to a keep-alive ping within {self._timeout:g} s") from None

    def _give_up(self, reason: RunnelError) -> None:
        self._final = reason
        self._ready.set()
        for subscription in list(self._subscriptions.values()):
            subscription._end(reason)

    async def _read(self, transport: Transport) -> RunnelError:
        """Reads the connection until it ends; fails what waits for a reply on it and returns why
        it ended (its `closing` line's reason when it had one)."""
        closing = None
        try:
            while True:
                lines = await self._receive(transport)
                if not lines:
                    reason = closing or RunnelError("connection_lost", "the server closed the connection")
                    break
                for raw in lines:
                    if not raw.strip():
                        continue
                    line = _decode(raw.decode())
                    if "ok" in line:
                        self._reply(line)
                    elif line.get("ev") == "closing":
                        closing = RunnelError.of(line)
                    elif (subscription := self._subscriptions.get(line.get("sid"))) is not None:
                        if self._overflow == "wait":
                            await subscription._room_made()
                        subscription._event(line)
        except (OSError, ValueError) as error:
            reason = closing or RunnelError("connection_lost", str(error) or type(error).__name__)
        self._fail_pending(reason)
        return reason

    def _reply(self, line: dict[str, Any]) -> None:
        if "ref" not in line:
            # Only a `pub` without `ref` is answered without one, and only when it failed.
            error = RunnelError.of(line)
            if self._on_error is not None:
                _call_back(self._on_error, error)
            else:
                log.warning("runnel: a publish failed: %s", error)
            return
        waiting = self._pending.pop(line["ref"], None)
        if waiting is None:
            return
        future, hook = waiting
        if hook is not None:
            hook(line)
        if not future.done():
            future.set_result(line)

    def _fail_pending(self, reason: RunnelError) -> None:
        pending, self._pending = self._pending, {}
        for future, _ in pending.values():
            if not future.done():
                future.set_exception(reason)

    async def _wait_ready(self) -> None:
        await self._ready.wait()
        if self._final is not None:
            raise self._final

    async def _call(self, body: dict[str, Any], hook: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
                    ready: bool = True, check: bool = True) -> dict[str, Any]:
        """Sends `body` with a fresh `ref` and returns the reply (raising its error when `check`);
        `hook` sees the reply first, as the reader handles it. Waits for the connection unless
        `ready` is False (the requests that set a new connection up)."""
        if ready:
            await self._wait_ready()
        ref = next(self._refs)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ref] = (future, (lambda reply: hook(reply, body)) if hook else None)
        try:
            await self._send({**body, "ref": ref})
        except BaseException:
            self._pending.pop(ref, None)
            raise
        reply = await future
        if check and not reply["ok"]:
            raise RunnelError.of(reply)
        return reply

    async def _send(self, body: Mapping[str, Any]) -> None:
        line = _encode(body).encode()
        if self._transport is None:
            raise RunnelError("connection_lost", "not connected")
        try:
            await self._transport.send(line)
        except OSError as error:
            raise RunnelError("connection_lost", str(error)) from error

    def _send_soon(self, body: dict[str, Any]) -> None:
        """Sends `body` without waiting (from the reader, which must not wait on its own writes)."""
        task = asyncio.create_task(self._call(body, check=False))
        self._tasks.add(task)
        task.add_done_callback(self._sent_soon)

    def _sent_soon(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("runnel: %s", task.exception())


async def connect(url: str = "runnel://127.0.0.1:7455", *, token: Token = None,
                  ssl: ssl_module.SSLContext | None = None, server_hostname: str | None = None,
                  reconnect: bool = True, backoff: tuple[float, float] = (0.1, 5.0), timeout: float = 10.0,
                  keepalive: float | None = 30.0,
                  buffer: int = 1000, overflow: Literal["drop", "wait"] = "drop",
                  on_disconnect: Callable[[RunnelError], None] | None = None,
                  on_error: Callable[[RunnelError], None] | None = None) -> Client:
    """Connects to runneld at `url` and authenticates with `token` (or pings without one): returns
    the client once the server has answered, or raises RunnelError (`unauthorized`, `limit`...),
    OSError, ssl.SSLError or asyncio.TimeoutError. `token` may be a function (plain or async)
    returning one, called for every connection; a JWT it returns is refreshed (the function called
    again, its token sent as `auth`) when 80% of the time it had left has passed. Then, when the
    connection is lost, it reconnects (unless `reconnect` is False, or the server said
    `unauthorized` to a token that is not a function's) and resumes each subscription;
    `on_disconnect` is called with each loss's reason. A connection silent for `keepalive` seconds
    gets a `ping`; one that then stays silent for `timeout` seconds is taken for lost (None turns
    that off). Each subscription buffers at
    most `buffer` events its consumer has not taken; past that, `overflow` `drop` drops the newest
    (reported as a `Gap`), `wait` stops reading the connection until the consumer takes one."""
    client = Client(url, token, ssl, server_hostname, reconnect, backoff, timeout, keepalive, buffer, overflow,
                    on_disconnect, on_error)
    await client._start()
    return client
