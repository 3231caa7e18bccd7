"""The asyncio client: one connection to runneld at a time, its requests matched to their replies
by `ref`, and its subscriptions, each with its own bounded buffer and its last position, resumed
from that position after a reconnect; a map subject's subscription keeps its table (docs/clients.md)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import math
import random
import ssl as ssl_module
import time
import types
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Literal, TypedDict, TypeVar, Union

from .tokens import Token, TokenSource, refresh_delay
from .transport import Transport, WrongPort, open_transport, speaks_http

log = logging.getLogger("runnel")
T = TypeVar("T")
S = TypeVar("S", bound="Subscription")
_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
_decode = json.JSONDecoder().decode


class RunnelError(Exception):
    """A failure with the protocol's `code` (`bad_expr`, `unauthorized`, `slow_consumer`...), its
    `message`, and `stage` when a stage of a subscription caused it; or one of the client's own
    codes: `connection_lost` (the connection ended before the answer came), `timeout` (a call
    past its deadline, `call_timeout` or its own `timeout`), `wrong_port` (the URL's port speaks
    the other protocol: its message names the URL to use) and `closed` (the client was closed)."""

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
    subject, such as `startWith`'s), `ts` the server's clock at its publish in Unix milliseconds,
    for a subscription made with `ts` (None otherwise, and for a value a stage made from a
    constant; version 1.3), `key` the key it was written to, for a map subject's (None otherwise;
    version 1.3)."""

    value: Any
    subject: str
    pos: str | None
    ts: int | None = None
    key: str | None = None


@dataclass(frozen=True)
class Removed:
    """A key gone from a map subscription's table (version 1.3): `reason` `deleted` (a `delete_key`),
    `expired` (not written for the map's `ttl_s`) or `not_resumed` (absent from the snapshot the
    table was rebuilt from after a reconnect that could not resume: removed meanwhile, how is not
    known); `pos` and `ts` as a `Value`'s (None for `not_resumed`)."""

    key: str
    reason: str
    subject: str
    pos: str | None = None
    ts: int | None = None


@dataclass(frozen=True)
class Synced:
    """A map subscription's table is complete and current: after its snapshot, and again after
    each resubscription, once the changes it missed (or a new snapshot's differences) have come
    (version 1.3)."""


@dataclass(frozen=True)
class Gap:
    """Values this subscription will never get, in place of where they would have been: `reason`
    is `dropped` (the server dropped `count` events: its slow-consumer policy `drop`, or values a
    newer one replaced while a `conflate` subscription lagged; or, in a
    cluster, missed `count` values of other nodes, None when it does not know how many), `overflow`
    (the subscription's buffer in this client was full and `count` events were dropped) or
    `not_resumed` (after a reconnect, or with a `from` the server could not continue from, or a
    `since` some of whose values the server no longer holds, values may have been missed: `count`
    is None; `cause` says why the connection was lost)."""

    reason: Literal["dropped", "overflow", "not_resumed"]
    count: int | None = None
    cause: RunnelError | None = None


Event = Union[Value, Gap]
# What a map subscription yields: the changes of its table (a `Value` with its `key` for a write, a
# `Removed`), `Synced` once it is complete, and `Gap`s.
MapEvent = Union[Value, Removed, Synced, Gap]
# A time as `since` and `until` take it: Unix milliseconds, an RFC 3339 string, or an aware datetime.
Time = Union[int, str, datetime]

SubscribeOptions = TypedDict("SubscribeOptions", {
    "filter": str,  # an expression: a `filter` stage
    "map": str,  # an expression: a `map` stage, after the filter
    "throttle": float,  # seconds: a `throttle` stage, after both
    "ops": list[dict[str, Any]],  # more stages, after those
    "from": str,  # a position: continue right after it
    "conflate": bool,  # when this reader lags, the server keeps only the latest value (version 1.3)
    "since": Time,  # a replay or behavior subject's values published at or after this, then live ones (version 1.3)
    "until": Time,  # the subscription completes once the subject's time passes this (version 1.3)
    "ts": bool,  # each Value carries `ts`, its publish time in Unix milliseconds (version 1.3)
}, total=False)


class Subscription:
    """One `sub`: an async iterable of `Value` and `Gap` events (or, given `on_value`, a callback
    for them), which ends when the subscription completes, raises RunnelError when it fails, and
    ends quietly after `unsubscribe()` or the client's `close()`. Leaving an `async for` over it
    early (`break`, `return`, an exception) unsubscribes; `anext(subscription)` takes one event
    and unsubscribes nothing."""

    def __init__(self, client: Client, sid: str, subject: str, ops: list[dict[str, Any]], start: str | None,
                 on_value: Callable[[Event], None] | None,
                 on_end: Callable[[RunnelError | None], None] | None, conflate: bool = False,
                 since: int | str | None = None, until: int | str | None = None, ts: bool = False) -> None:
        self.sid = sid
        self.subject = subject
        self.conflate = conflate
        self.since = since
        self.until = until
        self.ts = ts
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
        # A map's snapshot: from a reply that did not resume until `synced`, one may come (`syncing`);
        # once a keyed value of it has (`in_snapshot`), the newest position among its values waits
        # for `synced` to become the subscription's (a position in the middle of a snapshot
        # resumes nothing: the keys not sent yet would be missing).
        self._syncing = False
        self._in_snapshot = False
        self._snapshot_pos: str | None = None
        self._queue: deque[Any] = deque()
        self._overflowed = 0
        self._room = asyncio.Event()
        self._waiter: asyncio.Future[None] | None = None
        self._ended = False
        self._error: RunnelError | None = None

    @property
    def position(self) -> str | None:
        """The position of the newest value of a one-subject subscription (or its `from`): give it
        as `from` to a later subscription to continue after it. None for a pattern."""
        if self.pattern or self._in_snapshot:
            return None
        return self._positions.get(self.subject)

    def __aiter__(self) -> AsyncIterator[Event]:
        """An iterator over the events that unsubscribes when left before the subscription ended:
        an async generator, closed (and so unsubscribed) as soon as the `async for` that made it
        lets it go, which in CPython is at once. `contextlib.aclosing(aiter(subscription))` closes
        it where it is left, whatever the interpreter."""
        return self._events()

    async def _events(self) -> AsyncGenerator[Event, None]:
        try:
            while True:
                try:
                    event = await self.__anext__()
                except StopAsyncIteration:
                    return
                yield event
        finally:
            if not self._ended:
                await self._leave()

    async def _leave(self) -> None:
        """`unsubscribe()` for an iteration left early (run by the event loop's finalizer too:
        nothing may escape). When the task running it is being cancelled (a consumer task
        cancelled, or `asyncio.run` ending, which cancels every task, the client's reader
        included, and the generators' finalizers with them), it waits for nothing: it ends here,
        and the `unsub` goes out without waiting for its answer while the client still reads its
        connection (else the connection's close takes the server's subscription with it)."""
        if _cancelling(asyncio.current_task()):
            self._end(None)
            self._queue.clear()
            if self._client._reading and self._client.connected:
                self._client._send_soon({"op": "unsub", "sid": self.sid})
            return
        try:
            await self.unsubscribe()
        except RunnelError as error:
            log.info("runnel: unsubscribing from %s: %s", self.subject, error)

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

    async def unsubscribe(self, *, timeout: float | None = None) -> None:
        """Ends the subscription: in the server (`unsub`) and here (what it buffered is dropped).
        RunnelError `timeout` when the server has not answered the `unsub` within `timeout`
        seconds (None: the client's `call_timeout`); it has ended here all the same."""
        deadline = self._client._deadline(timeout)
        if self._ended:
            return
        self._end(None)
        self._queue.clear()
        if self._client.connected:
            # A connection lost meanwhile took the server's subscription with it.
            try:
                await self._client._call({"op": "unsub", "sid": self.sid}, deadline=deadline)
            except RunnelError as error:
                if error.code == "timeout":
                    raise

    def _request(self) -> dict[str, Any]:
        """The `sub` request: from the last position when there is one, else from `since` (the
        server refuses both together: once a value has come, a resubscription continues after
        it); `until`, `conflate` and `ts` every time."""
        body: dict[str, Any] = {"op": "sub", "subject": self.subject, "sid": self.sid, "positions": True}
        if self._ops:
            body["ops"] = self._ops
        if self.position:
            body["from"] = self.position
        elif self.since is not None:
            body["since"] = self.since
        if self.until is not None:
            body["until"] = self.until
        if self.conflate:
            body["conflate"] = True
        if self.ts:
            body["ts"] = True
        return body

    def _answered(self, reply: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
        """The reply to this subscription's `sub` (handled before any of its events)."""
        if not reply.get("ok"):
            self._end(RunnelError.of(reply))
            return
        if self._ended:  # unsubscribed while a resubscription was under way
            self._client._send_soon({"op": "unsub", "sid": self.sid})
            return
        # A resubscription with neither `from` nor `since` may have missed values; with `since`,
        # `resumed` says whether the server still held every value since then.
        resubscribed_blind = self._subscribed_before and "from" not in sent and "since" not in sent
        if reply.get("resumed") is False or resubscribed_blind:
            self._skip = {subject: _split(pos) for subject, pos in self._positions.items()}
            self._put(Gap("not_resumed", cause=self._client.last_disconnect))
        self._subscribed_before = True
        self._syncing = not self.pattern and reply.get("resumed") is not True
        self._in_snapshot = False
        self._snapshot_pos = None

    def _seen(self, subject: str, pos: str | None, keyed: bool) -> bool:
        """Notes the position of an event about to be delivered (a map's snapshot's apart, until
        `synced`); False for a value to skip: one at or before the last position shown, after a
        resubscription that could not resume (a snapshot is never skipped: it is the table)."""
        if keyed and self._syncing:
            self._in_snapshot = True
            if pos and (self._snapshot_pos is None or _split(pos)[1] > _split(self._snapshot_pos)[1]):
                self._snapshot_pos = pos
            return True
        if not pos:
            return True
        if not keyed and subject in self._skip:
            epoch, seq = _split(pos)
            shown_epoch, shown_seq = self._skip[subject]
            if epoch == shown_epoch and seq <= shown_seq:
                return False
            del self._skip[subject]
        self._positions[subject] = pos
        return True

    def _synced_at(self, line: Mapping[str, Any]) -> None:
        """A map's `synced`: after a snapshot, the subscription's position is the snapshot's (its
        `pos` when it has one, else its newest value's; none for an empty snapshot)."""
        if self._syncing:
            pos = line.get("pos") if isinstance(line.get("pos"), str) else self._snapshot_pos
            if pos:
                self._positions[self.subject] = pos
            else:
                self._positions.pop(self.subject, None)
            self._skip.pop(self.subject, None)
        self._syncing = self._in_snapshot = False
        self._snapshot_pos = None

    def _lost(self) -> None:
        """The connection is lost (the client reconnects)."""

    def _event(self, line: Mapping[str, Any]) -> None:
        kind = line.get("ev")
        if kind == "next":
            subject = line.get("subject", self.subject)
            pos = line.get("pos")
            key = line.get("key")
            if not self._seen(subject, pos, isinstance(key, str)):
                return
            ts = line.get("ts")
            self._put(Value(line.get("value"), subject, pos, ts if isinstance(ts, int) else None,
                            key if isinstance(key, str) else None))
        elif kind == "synced":
            self._synced_at(line)
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

    def _put(self, event: MapEvent) -> None:
        if self._on_value is not None:
            _call_back(self._on_value, event)  # type: ignore[arg-type]
            return
        if isinstance(event, (Value, Removed)) and len(self._queue) >= self._client._buffer:
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


class MapSubscription(Subscription):
    """A subscription to a map subject (version 1.3) that keeps its table: `table`, the key -> value
    of the map as this subscription sees it (after its stages), complete once `synced`. Iterated
    (or given `on_change`), it yields the table's changes as they are made to it: a `Value` with
    its `key` for a write, a `Removed` for a removal, `Synced` each time the table is complete and
    current, and `Gap`s. The table is updated as the lines are read, whatever the consumer takes:
    past the buffer, changes are dropped from the stream (a `Gap` `overflow`), never from the
    table. After a reconnect it resumes from its position: `resumed: true` applies the changes it
    missed to the table it kept; otherwise (a `Gap` `not_resumed` first) the new snapshot is built
    apart and swapped in whole at `synced`, its differences from the old table yielded then, so the
    table is never seen half built."""

    def __init__(self, *arguments: Any, **keywords: Any) -> None:
        super().__init__(*arguments, **keywords)
        self._table: dict[str, Any] = {}
        # The table a snapshot is building (its entries, with their positions), None when changes
        # go to `_table` itself (live, or resumed).
        self._fresh: dict[str, Value] | None = None
        self._is_synced = False
        self._settled = asyncio.Event()  # synced, or ended

    @property
    def table(self) -> Mapping[str, Any]:
        """The table now, read-only: empty until the first `synced`; replaced by a new one at a
        `synced` that ends a rebuild (read it through this property, not a reference kept)."""
        return types.MappingProxyType(self._table)

    @property
    def synced(self) -> bool:
        """Whether the table is complete and current: from each `synced` until the connection is
        lost."""
        return self._is_synced

    async def wait_synced(self, *, timeout: float | None = None) -> None:
        """Returns once the table is synced (at once when it is); raises the RunnelError that ended
        the subscription before that, or `timeout` past `timeout` seconds (None: the client's
        `call_timeout`). A subscription ended quietly (unsubscribed, the client closed) returns."""
        deadline = self._client._deadline(timeout)
        if not self._settled.is_set():
            try:
                await deadline.bound(self._settled.wait())
            except asyncio.TimeoutError:
                raise RunnelError("timeout", f"sub {self.subject}: not synced within {deadline.seconds:g} s") from None
        if not self._is_synced and self._error is not None:
            raise self._error

    def __aiter__(self) -> AsyncIterator[MapEvent]:  # type: ignore[override]
        return self._events()  # type: ignore[return-value]

    async def __anext__(self) -> MapEvent:  # type: ignore[override]
        return await super().__anext__()

    def _answered(self, reply: Mapping[str, Any], sent: Mapping[str, Any]) -> None:
        super()._answered(reply, sent)
        if self._ended:
            return
        # Resumed: the changes missed come, applied to the table kept; else a snapshot, built apart.
        self._fresh = None if reply.get("resumed") is True else {}
        self._lost()

    def _lost(self) -> None:
        self._is_synced = False
        if not self._ended:
            self._settled.clear()

    def _event(self, line: Mapping[str, Any]) -> None:
        kind = line.get("ev")
        key = line.get("key")
        if kind not in ("next", "removed", "synced"):
            super()._event(line)
            return
        if kind == "synced":
            self._synced_at(line)
            self._swap()
            self._is_synced = True
            self._settled.set()
            self._put(Synced())
            return
        if not isinstance(key, str):
            return
        pos = line.get("pos") if isinstance(line.get("pos"), str) else None
        ts = line.get("ts") if isinstance(line.get("ts"), int) else None
        self._seen(self.subject, pos, True)
        if kind == "next":
            value = Value(line.get("value"), self.subject, pos, ts, key)
            if self._fresh is not None:
                self._fresh[key] = value
                return
            self._table[key] = value.value
            self._put(value)
        else:
            if self._fresh is not None:
                self._fresh.pop(key, None)
                return
            self._table.pop(key, None)
            self._put(Removed(key, str(line.get("reason")), self.subject, pos, ts))

    def _swap(self) -> None:
        """The end of a snapshot: its table replaces the one kept, and what differs is yielded,
        once the new table is in place."""
        if self._fresh is None:
            return
        fresh, self._fresh = self._fresh, None
        old, self._table = self._table, {key: value.value for key, value in fresh.items()}
        for key, value in fresh.items():
            if key not in old or not _same(old[key], value.value):
                self._put(value)
        for key in old:
            if key not in fresh:
                self._put(Removed(key, "not_resumed", self.subject))

    def _end(self, error: RunnelError | None) -> None:
        self._settled.set()
        super()._end(error)


def _same(a: Any, b: Any) -> bool:
    """Whether two JSON values are the same (`1`, `1.0` and `true` are not)."""
    return a == b and _encode(a) == _encode(b)


def _call_back(callback: Callable[[T], None], argument: T) -> None:
    """Calls one of the caller's callbacks: one that raises is logged, and stops nothing."""
    try:
        callback(argument)
    except Exception:  # noqa: BLE001 - the connection and its other subscriptions go on
        log.exception("runnel: a callback raised")


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


def _time(name: str, when: Time) -> int | str:
    """`since` or `until` as `sub` takes it: Unix milliseconds (an int as it is; an aware datetime
    converted, rounded down to its millisecond), or an RFC 3339 string as it is (the server checks
    it). A naive datetime is ValueError: it names no one instant."""
    if isinstance(when, datetime):
        if when.utcoffset() is None:
            raise ValueError(f"{name}: a naive datetime ({when.isoformat()}) names no one instant: give it a time zone "
                             "(datetime.now(timezone.utc), or .astimezone() for local time), or Unix milliseconds")
        return (when - _EPOCH) // timedelta(milliseconds=1)
    if isinstance(when, bool) or not isinstance(when, (int, str)):
        raise TypeError(f"{name} is Unix milliseconds (an int), an RFC 3339 string or an aware datetime, not {when!r}")
    return when


def _cancelling(task: asyncio.Task[Any] | None) -> bool:
    """Whether `task` has been asked to cancel and has not finished: `Task.cancelling()` (Python
    3.11); before it, not known (False)."""
    cancelling = getattr(task, "cancelling", None)
    return cancelling is not None and cancelling() > 0


def _split(pos: str) -> tuple[str, int]:
    epoch, _, seq = pos.rpartition(":")
    return epoch, int(seq)


# asyncio.timeout_at (Python 3.11 and later) bounds a wait without a task of its own.
_timeout_at = getattr(asyncio, "timeout_at", None)


class _Deadline:
    """When a call gives up: `seconds` after it began (None: never)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._at = None if seconds is None else time.monotonic() + seconds

    def left(self) -> float | None:
        return None if self._at is None else max(0.0, self._at - time.monotonic())

    async def bound(self, awaitable: Awaitable[T]) -> T:
        """`awaitable`, or asyncio.TimeoutError once the deadline has passed."""
        if self._at is None:
            return await awaitable
        if _timeout_at is None:  # Python 3.10: a task of its own
            return await asyncio.wait_for(awaitable, self.left())
        loop = asyncio.get_running_loop()
        async with _timeout_at(loop.time() + (self._at - time.monotonic())):
            return await awaitable


def _named(body: Mapping[str, Any]) -> str:
    """A request as a timeout's message names it: its op, and its subject or sid."""
    target = body.get("subject", body.get("sid"))
    return f"{body['op']} {target}" if target is not None else str(body["op"])


class Client:
    """A connection to runneld (see `connect`)."""

    def __init__(self, url: str, token: Token, ssl: ssl_module.SSLContext | None, server_hostname: str | None,
                 reconnect: bool, backoff: tuple[float, float], timeout: float, keepalive: float | None,
                 call_timeout: float | None, buffer: int,
                 overflow: Literal["drop", "wait"], on_disconnect: Callable[[RunnelError], None] | None,
                 on_error: Callable[[RunnelError], None] | None) -> None:
        if buffer < 1 or overflow not in ("drop", "wait"):
            raise ValueError("buffer is at least 1, and overflow is 'drop' or 'wait'")
        if call_timeout is not None and not call_timeout > 0:
            raise ValueError("call_timeout is a number of seconds above 0, or None")
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
        self._call_timeout = call_timeout
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

    @property
    def _reading(self) -> bool:
        """Whether the task that reads the connection and reconnects runs, and is not being
        cancelled."""
        return self._supervisor is not None and not self._supervisor.done() and not _cancelling(self._supervisor)

    async def publish(self, subject: str, value: Any = None, reply: bool = False, *, key: str | None = None,
                      timeout: float | None = None) -> int | None:
        """Publishes `value` (any JSON value) to `subject`; to a map subject, as the value of `key`
        (version 1.3). With `reply`, waits for the server's
        answer and returns how many subscriptions received the value; without, returns once the
        line is written, and a failure (the server answers only those) goes to `on_error`. Either
        waits for a connection while the client reconnects, and raises RunnelError `timeout` past
        `timeout` seconds (None: the client's `call_timeout`; `math.inf`: no deadline)."""
        body: dict[str, Any] = {"op": "pub", "subject": subject, "value": value}
        if key is not None:
            body["key"] = key
        return await self._publish(body, reply, timeout)

    async def delete_key(self, subject: str, key: str, reply: bool = False, *,
                         timeout: float | None = None) -> int | None:
        """Removes `key` from the map subject `subject` (a `pub` with `delete`, version 1.3; a key
        it does not hold is no error); `reply` and `timeout` as `publish`'s. To delete a subject
        itself: `request("delete", subject=...)`."""
        return await self._publish({"op": "pub", "subject": subject, "key": key, "delete": True}, reply, timeout)

    async def _publish(self, body: dict[str, Any], reply: bool, timeout: float | None) -> int | None:
        deadline = self._deadline(timeout)
        if reply:
            return int((await self._call(body, deadline=deadline))["receivers"])
        await self._wait_ready(body, deadline)
        try:
            await self._send(body, deadline)
        except asyncio.TimeoutError:
            raise self._timed_out(body, deadline, "written") from None
        return None

    async def authenticate(self, token: str, *, timeout: float | None = None) -> None:
        """Sends `token` as `auth` on the live connection (RunnelError when refused: the
        connection keeps its rights); the next connections send it too, unless the token comes
        from a function. The new token's rights apply to the subscriptions already made.
        `timeout` as `publish`'s."""
        await self._call({"op": "auth", "token": token}, deadline=self._deadline(timeout))
        self._tokens.replace(token)

    async def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        """Sends one request (`create`, `list`, `stats`, `delete`, `complete`, `error`, `ping`...)
        and returns its reply; RunnelError when the server refused it. `timeout` (the client's,
        not a field of the request) as `publish`'s."""
        if op in ("sub", "unsub", "auth"):
            raise ValueError(f"{op}: use subscribe(), Subscription.unsubscribe() or authenticate()")
        return await self._call({"op": op, **fields}, deadline=self._deadline(timeout))

    async def subscribe(self, subject: str, options: SubscribeOptions | None = None,
                        on_value: Callable[[Event], None] | None = None, *,
                        on_end: Callable[[RunnelError | None], None] | None = None,
                        timeout: float | None = None) -> Subscription:
        """Subscribes to `subject` (a name or a pattern) once the server has accepted it (else
        RunnelError: `bad_expr` with its `stage`, `unauthorized`...). Without `on_value`, iterate
        over the subscription; with it, `on_value` is called with each event and `on_end` (if
        given) with None at completion or the error that ended it. `timeout` as `publish`'s: a
        `sub` the server accepts after it is unsubscribed when its reply comes."""
        return await self._subscribe(Subscription, subject, options, on_value, on_end, timeout)

    async def subscribe_map(self, subject: str, options: SubscribeOptions | None = None,
                            on_change: Callable[[MapEvent], None] | None = None, *,
                            on_end: Callable[[RunnelError | None], None] | None = None,
                            timeout: float | None = None) -> MapSubscription:
        """Subscribes to the map subject `subject` (version 1.3) and keeps its table (see
        `MapSubscription`): returns once the server has accepted the `sub`, before the table is
        synced (`await wait_synced()`). `options` as `subscribe`'s but `from` (the subscription
        resumes from its own position) and `since`/`until` (not for a map); `on_change` and
        `on_end` as `subscribe`'s `on_value` and `on_end`. A pattern is ValueError."""
        if any(token in ("*", ">") for token in subject.split(".")):
            raise ValueError(f"subscribe_map takes a map subject's name, not a pattern: {subject!r}")
        if options and "from" in options:
            raise ValueError("a map subscription starts from a snapshot, and resumes from its own position: no from")
        return await self._subscribe(MapSubscription, subject, options, on_change, on_end, timeout)

    async def _subscribe(self, kind: type[S], subject: str, options: SubscribeOptions | None,
                         on_value: Callable[[Any], None] | None, on_end: Callable[[RunnelError | None], None] | None,
                         timeout: float | None) -> S:
        deadline = self._deadline(timeout)
        options = options or {}
        ops: list[dict[str, Any]] = []
        if "filter" in options:
            ops.append({"op": "filter", "expr": options["filter"]})
        if "map" in options:
            ops.append({"op": "map", "expr": options["map"]})
        if "throttle" in options:
            ops.append({"op": "throttle", "seconds": options["throttle"]})
        ops += options.get("ops", [])
        since = _time("since", options["since"]) if "since" in options else None
        until = _time("until", options["until"]) if "until" in options else None
        subscription = kind(self, f"s{next(self._sids)}", subject, ops, options.get("from"), on_value, on_end,
                            conflate=options.get("conflate", False), since=since, until=until,
                            ts=options.get("ts", False))
        if subscription.pattern and "from" in options:
            raise ValueError("a pattern subscription has no position to start from")
        if "from" in options and "since" in options:
            raise ValueError("a subscription starts from a position (from) or a time (since), not both")
        # Registered once connected, so that a reconnect under way does not subscribe it too.
        request = subscription._request()
        await self._wait_ready(request, deadline)
        self._subscriptions[subscription.sid] = subscription
        try:
            await self._call(request, subscription._answered, ready=False, deadline=deadline,
                             late=lambda reply: self._unsubscribe_late(reply, subscription.sid))
        except BaseException:
            self._subscriptions.pop(subscription.sid, None)
            raise
        return subscription

    async def while_watched(self, subject: str, start: Callable[[], None], stop: Callable[[], None], *,
                            timeout: float | None = None) -> Subscription:
        """Calls `start()` when `subject` gets its first subscription and `stop()` when its last
        goes (protocol 1.3: its occupancy, `$sys.occupancy.SUBJECT`), only on those transitions:
        not `stop()` first when nobody watches yet, never either twice in a row, across
        reconnects too. On the client's reading task, as `on_value`: keep them quick (start a
        task for a feed). Returns the occupancy subscription: `unsubscribe()` ends the watch.
        `subject` is a name, not a pattern nor one of the server's `$` names (ValueError)."""
        tokens = subject.split(".")
        if subject.startswith("$") or "*" in tokens or ">" in tokens:
            raise ValueError(f"while_watched needs a subject name, not a pattern or a '$' name: {subject!r}")
        watched = False

        def counted(event: Event) -> None:
            nonlocal watched
            if not isinstance(event, Value):
                return
            now = event.value["subscribers"] > 0
            if now != watched:
                watched = now
                transition = start if now else stop
                _call_back(lambda _: transition(), None)

        return await self.subscribe(f"$sys.occupancy.{subject}", None, counted, timeout=timeout)

    def _unsubscribe_late(self, reply: Mapping[str, Any], sid: str) -> None:
        """The reply to a `sub` that its caller gave up on: a subscription it made is undone."""
        if reply.get("ok"):
            self._send_soon({"op": "unsub", "sid": sid})

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
            # The reader may not see that cancellation: `asyncio.wait_for` (Python 3.11) drops a
            # cancellation that comes as the data it waits for does. Closing the connection
            # ends the reader either way, and the supervisor then finds the client closed.
            if self._transport is not None:
                await self._transport.close()
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
        try:
            transport = await open_transport(self.url, self._ssl, self._server_hostname, self._timeout)
        except WrongPort as error:
            raise RunnelError("wrong_port", str(error)) from None
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
                await self._call({"op": "auth", "token": fresh}, deadline=self._deadline(None))
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
                if self._final is not None:  # closed: `close` ended the reader
                    return
                self._ready.clear()
                if self._transport is not None:
                    await self._transport.close()
                for subscription in list(self._subscriptions.values()):
                    subscription._lost()
                self.last_disconnect = reason
                if self._on_disconnect is not None:
                    _call_back(self._on_disconnect, reason)
                # A token refused now is refused again, unless a function hands out new ones.
                if not self._reconnect or reason.code == "wrong_port" or (
                        reason.code == "unauthorized" and not self._tokens.refreshes):
                    self._give_up(reason)
                    return
                delay = self._backoff[0]
                while True:
                    await asyncio.sleep(delay * random.uniform(0.5, 1.0))
                    try:
                        reader = await self._open()
                        break
                    except RunnelError as error:
                        if error.code in ("unauthorized", "wrong_port"):
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
                    try:
                        line = _decode(raw.decode())
                    except ValueError:
                        if raw.startswith(b"HTTP/"):  # runneld's HTTP port, answering with 400
                            raise speaks_http(self.url) from None
                        raise
                    if "ok" in line:
                        self._reply(line)
                    elif line.get("ev") == "closing":
                        closing = RunnelError.of(line)
                    elif (subscription := self._subscriptions.get(line.get("sid"))) is not None:
                        if self._overflow == "wait":
                            await subscription._room_made()
                        subscription._event(line)
        except WrongPort as error:
            reason = RunnelError("wrong_port", str(error))
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

    def _deadline(self, timeout: float | None) -> _Deadline:
        """The deadline of a call given `timeout` (None: `call_timeout`; `math.inf`: none)."""
        seconds = self._call_timeout if timeout is None else timeout
        if seconds is not None and not seconds > 0:
            raise ValueError(f"timeout is a number of seconds above 0, not {timeout!r}")
        return _Deadline(None if seconds is None or math.isinf(seconds) else seconds)

    def _timed_out(self, body: Mapping[str, Any], deadline: _Deadline, missing: str) -> RunnelError:
        """The `timeout` of a call: what it did not get in time (`connected`, `written`, `answered`)."""
        within = f"within {deadline.seconds:g} s"
        if missing == "connected":
            lost = f" (the connection was lost: {self.last_disconnect})" if self.last_disconnect else ""
            text = f"not sent {within}: the client was disconnected, reconnecting to {self.url}{lost}"
        elif missing == "written":
            text = (f"not written {within} (the client was connected, but runneld is not reading: it is written "
                    "when runneld reads again)")
        else:
            later = "a subscription it makes is undone" if body["op"] == "sub" else "its reply is ignored"
            text = f"no reply {within} (the client was connected: the request was sent; runneld may yet carry it out, {later})"
        return RunnelError("timeout", f"{_named(body)}: {text}")

    async def _wait_ready(self, body: Mapping[str, Any], deadline: _Deadline) -> None:
        """Waits for a connection (RunnelError `timeout` past `deadline`, or the final error)."""
        if not self._ready.is_set():
            try:
                await deadline.bound(self._ready.wait())
            except asyncio.TimeoutError:
                raise self._timed_out(body, deadline, "connected") from None
        if self._final is not None:
            raise self._final

    async def _call(self, body: dict[str, Any], hook: Callable[[dict[str, Any], dict[str, Any]], None] | None = None,
                    ready: bool = True, check: bool = True, deadline: _Deadline | None = None,
                    late: Callable[[dict[str, Any]], None] | None = None) -> dict[str, Any]:
        """Sends `body` with a fresh `ref` and returns the reply (raising its error when `check`);
        `hook` sees the reply first, as the reader handles it. Waits for the connection unless
        `ready` is False (the requests that set a new connection up). Past `deadline` (waiting
        for the connection, writing, waiting for the reply), RunnelError `timeout`; then, or when
        the caller is cancelled, the ref is forgotten: its reply, should it come, goes to `late`
        (else nowhere)."""
        deadline = deadline or _Deadline(None)
        if ready:
            await self._wait_ready(body, deadline)
        ref = next(self._refs)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[ref] = (future, (lambda reply: hook(reply, body)) if hook else None)
        try:
            await self._send({**body, "ref": ref}, deadline)
            await asyncio.wait((future,), timeout=deadline.left())
        except asyncio.TimeoutError:
            self._abandon(ref, future, late)
            raise self._timed_out(body, deadline, "written") from None
        except RunnelError:  # not sent
            self._pending.pop(ref, None)
            raise
        except BaseException:
            self._abandon(ref, future, late)
            raise
        if not future.done():
            self._abandon(ref, future, late)
            raise self._timed_out(body, deadline, "answered")
        reply = future.result()
        if check and not reply["ok"]:
            raise RunnelError.of(reply)
        return reply

    def _abandon(self, ref: int, future: asyncio.Future[dict[str, Any]],
                 late: Callable[[dict[str, Any]], None] | None) -> None:
        """Forgets the call `ref` its caller gave up on: a reply to it goes to `late`."""
        waiting = self._pending.get(ref)
        if waiting is not None and waiting[0] is future:
            if late is None:
                del self._pending[ref]
            else:
                self._pending[ref] = (future, late)
        elif late is not None and future.done() and not future.cancelled() and future.exception() is None:
            late(future.result())  # answered as the caller gave up
        if future.done() and not future.cancelled():
            future.exception()  # retrieved: the caller has its own error
        future.cancel()

    async def _send(self, body: Mapping[str, Any], deadline: _Deadline | None = None) -> None:
        """Writes `body` (RunnelError `connection_lost` when it cannot); asyncio.TimeoutError past
        `deadline` (timed only when the transport may wait, which it seldom does)."""
        line = _encode(body).encode()
        transport = self._transport
        if transport is None:
            raise RunnelError("connection_lost", "not connected")
        if deadline is not None and transport.would_wait(line):
            await deadline.bound(self._send_on(transport, line))
        else:
            await self._send_on(transport, line)

    @staticmethod
    async def _send_on(transport: Transport, line: bytes) -> None:
        try:
            await transport.send(line)
        except OSError as error:
            raise RunnelError("connection_lost", str(error)) from error

    def _send_soon(self, body: dict[str, Any]) -> None:
        """Sends `body` without waiting (from the reader, which must not wait on its own writes)."""
        task = asyncio.create_task(self._call(body, check=False, deadline=self._deadline(None)))
        self._tasks.add(task)
        task.add_done_callback(self._sent_soon)

    def _sent_soon(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.info("runnel: %s", task.exception())


async def connect(url: str = "runnel://127.0.0.1:7455", *, token: Token = None,
                  ssl: ssl_module.SSLContext | None = None, server_hostname: str | None = None,
                  reconnect: bool = True, backoff: tuple[float, float] = (0.1, 5.0), timeout: float = 10.0,
                  keepalive: float | None = 30.0, call_timeout: float | None = 30.0,
                  buffer: int = 1000, overflow: Literal["drop", "wait"] = "drop",
                  on_disconnect: Callable[[RunnelError], None] | None = None,
                  on_error: Callable[[RunnelError], None] | None = None) -> Client:
    """Connects to runneld at `url` and authenticates with `token` (or pings without one): returns
    the client once the server has answered, or raises RunnelError (`unauthorized`, `limit`...),
    OSError, ssl.SSLError or asyncio.TimeoutError; `wrong_port` when the URL's port speaks the other
    protocol (runneld's HTTP port for a `runnel://` URL, its line port for a `ws://` one: the
    message names the URL to use). `token` may be a function (plain or async)
    returning one, called for every connection; a JWT it returns is refreshed (the function called
    again, its token sent as `auth`) when 80% of the time it had left has passed. Then, when the
    connection is lost, it reconnects (unless `reconnect` is False, or the server said
    `unauthorized` to a token that is not a function's) and resumes each subscription;
    `on_disconnect` is called with each loss's reason. A connection silent for `keepalive` seconds
    gets a `ping`; one that then stays silent for `timeout` seconds is taken for lost (None turns
    that off). Every call (`publish`, `request`, `subscribe`, `authenticate`, `unsubscribe`) gives up
    after `call_timeout` seconds, waiting for a connection and its reply included, with
    RunnelError `timeout`; each takes a `timeout` of its own (None here: calls wait as long as it
    takes). Each subscription buffers at
    most `buffer` events its consumer has not taken; past that, `overflow` `drop` drops the newest
    (reported as a `Gap`), `wait` stops reading the connection until the consumer takes one."""
    client = Client(url, token, ssl, server_hostname, reconnect, backoff, timeout, keepalive, call_timeout, buffer,
                    overflow, on_disconnect, on_error)
    await client._start()
    return client
