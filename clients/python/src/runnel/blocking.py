"""The client for scripts that do not use asyncio: the same client, running its event loop on a
thread of its own; each call blocks until it is done there, within the same deadlines
(`call_timeout`, each call's `timeout`). Callbacks (`on_value`, `on_end`, `on_disconnect`,
`on_error`) run on that thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, TypeVar

from .client import Client, Event, MapEvent, MapSubscription, RunnelError, SubscribeOptions, Subscription
from .client import connect as connect_async

T = TypeVar("T")


class BlockingSubscription:
    """A subscription to iterate over with `for`: the iteration ends when the subscription
    completes, is unsubscribed or the client closed, and raises RunnelError when it fails.
    Leaving a `for` loop over it early unsubscribes; `next(subscription)` takes one event and
    unsubscribes nothing."""

    def __init__(self, subscription: Subscription, loop: asyncio.AbstractEventLoop) -> None:
        self._subscription = subscription
        self._loop = loop

    @property
    def position(self) -> str | None:
        return self._subscription.position

    def __iter__(self) -> Iterator[Event]:
        return self._events()

    def _events(self) -> Iterator[Event]:
        """The events; a generator, closed (at once in CPython) when the `for` lets it go."""
        try:
            while True:
                try:
                    event = next(self)
                except StopIteration:
                    return
                yield event
        finally:
            # Possibly run by the garbage collector, on any thread, the client's too: the
            # `unsub` is handed to the client's thread, not waited for; it goes out before any
            # call made after it.
            if not self._subscription._ended and self._loop.is_running():
                asyncio.run_coroutine_threadsafe(self._subscription._leave(), self._loop)

    def __next__(self) -> Event:
        try:
            return _run(self._loop, self._subscription.__anext__())
        except StopAsyncIteration:
            raise StopIteration from None

    def unsubscribe(self, *, timeout: float | None = None) -> None:
        _run(self._loop, self._subscription.unsubscribe(timeout=timeout))


class BlockingMapSubscription(BlockingSubscription):
    """A `MapSubscription` for scripts: iterated with `for`, its changes (as `MapSubscription`'s)."""

    def __init__(self, subscription: MapSubscription, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(subscription, loop)
        self._map = subscription

    @property
    def table(self) -> dict[str, Any]:
        """A copy of the table, taken on the client's thread (where it changes)."""

        async def copy() -> dict[str, Any]:
            return dict(self._map.table)

        return _run(self._loop, copy())

    @property
    def synced(self) -> bool:
        return self._map.synced

    def wait_synced(self, *, timeout: float | None = None) -> None:
        _run(self._loop, self._map.wait_synced(timeout=timeout))

    def __iter__(self) -> Iterator[MapEvent]:  # type: ignore[override]
        return self._events()  # type: ignore[return-value]


class BlockingClient:
    """A `Client` whose methods block (see `connect`)."""

    def __init__(self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: Client) -> None:
        self._loop = loop
        self._thread = thread
        self._client = client

    def publish(self, subject: str, value: Any = None, reply: bool = False, *, key: str | None = None,
                timeout: float | None = None) -> int | None:
        return _run(self._loop, self._client.publish(subject, value, reply, key=key, timeout=timeout))

    def delete_key(self, subject: str, key: str, reply: bool = False, *, timeout: float | None = None) -> int | None:
        return _run(self._loop, self._client.delete_key(subject, key, reply, timeout=timeout))

    def authenticate(self, token: str, *, timeout: float | None = None) -> None:
        _run(self._loop, self._client.authenticate(token, timeout=timeout))

    def request(self, op: str, *, timeout: float | None = None, **fields: Any) -> dict[str, Any]:
        return _run(self._loop, self._client.request(op, timeout=timeout, **fields))

    def subscribe(self, subject: str, options: SubscribeOptions | None = None,
                  on_value: Callable[[Event], None] | None = None, *,
                  on_end: Callable[[RunnelError | None], None] | None = None,
                  timeout: float | None = None) -> BlockingSubscription:
        subscription = _run(self._loop, self._client.subscribe(subject, options, on_value, on_end=on_end,
                                                               timeout=timeout))
        return BlockingSubscription(subscription, self._loop)

    def subscribe_map(self, subject: str, options: SubscribeOptions | None = None,
                      on_change: Callable[[MapEvent], None] | None = None, *,
                      on_end: Callable[[RunnelError | None], None] | None = None,
                      timeout: float | None = None) -> BlockingMapSubscription:
        """`Client.subscribe_map`: `on_change` and `on_end` run on the client's thread."""
        subscription = _run(self._loop, self._client.subscribe_map(subject, options, on_change, on_end=on_end,
                                                                   timeout=timeout))
        return BlockingMapSubscription(subscription, self._loop)

    def while_watched(self, subject: str, start: Callable[[], None], stop: Callable[[], None], *,
                      timeout: float | None = None) -> BlockingSubscription:
        """`Client.while_watched`: `start` and `stop` run on the client's thread."""
        subscription = _run(self._loop, self._client.while_watched(subject, start, stop, timeout=timeout))
        return BlockingSubscription(subscription, self._loop)

    def close(self) -> None:
        """Closes the client and stops its thread."""
        if self._loop.is_closed():
            return
        _run(self._loop, self._client.close())
        _stop(self._loop, self._thread)

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(self, *exception: object) -> None:
        self.close()


def connect(url: str = "runnel://127.0.0.1:7455", **options: Any) -> BlockingClient:
    """`runnel.connect` for scripts, with the same arguments (`call_timeout` too: each call
    blocks at most that long, or its own `timeout`); raises what it raises."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="runnel", daemon=True)
    thread.start()
    try:
        client = _run(loop, connect_async(url, **options))
    except BaseException:
        _stop(loop, thread)
        raise
    return BlockingClient(loop, thread, client)


def _run(loop: asyncio.AbstractEventLoop, coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run_coroutine_threadsafe(coroutine, loop).result()


def _stop(loop: asyncio.AbstractEventLoop, thread: threading.Thread) -> None:
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    loop.close()
