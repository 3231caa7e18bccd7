"""The ways to reach runneld: its line protocol over TCP or TLS (the standard library's asyncio
streams), and over a WebSocket (`GET /ws`, through `websockets`, the optional extra). Each gives
the client whole lines, one JSON object each, and takes one request at a time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl as ssl_module
from typing import Any, Protocol
from urllib.parse import urlsplit

DEFAULT_PORT = 7455
# The longest line accepted from the server: a stage such as `collect` may send a value much
# larger than any one published, and runneld holds at most 64 MiB for a connection.
MAX_LINE_BYTES = 64 * 1024 * 1024
# Requests sent in one turn of the event loop are written together, up to this many bytes.
WRITE_BATCH_BYTES = 64 * 1024


class WrongPort(ConnectionError):
    """The server at the URL speaks the other protocol: a `runnel://` URL reached runneld's HTTP
    port (which answers a JSON line with `HTTP/1.1 400 Bad Request`), or a `ws://` URL its line
    port (which answers the upgrade request's lines with `bad_json`). Its message names the URL
    to use instead; the client raises it as RunnelError `wrong_port`, and does not retry."""


def speaks_http(url: str) -> WrongPort:
    """The WrongPort of `url` (`runnel://` or `runnels://`), whose server answered in HTTP."""
    parts = urlsplit(url)
    address = _address(parts.hostname or "", parts.port or DEFAULT_PORT)
    if parts.scheme == "runnels":
        return WrongPort(f"{url}: this port speaks HTTPS; use wss://{address}/ws (runneld's line protocol over "
                         "TLS, runnels://, is on its tls_listen port)")
    return WrongPort(f"{url}: this port speaks HTTP; use ws://{address}/ws (runneld's line protocol, runnel://, "
                     f"is on its listen port, {DEFAULT_PORT} by default)")


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class Transport(Protocol):
    def would_wait(self, line: bytes) -> bool:
        """Whether `send(line)` may wait (for room to write): when False, it returns at once."""

    async def send(self, line: bytes) -> None:
        """Sends one request (its JSON, without a line end); ConnectionError when it cannot."""

    async def receive(self) -> list[bytes]:
        """The next whole lines (at least one), or [] once the server has closed the connection."""

    async def close(self) -> None:
        """Closes the connection, cleanly where it can (close_notify, a WebSocket close frame)."""


async def open_transport(url: str, ssl: ssl_module.SSLContext | None, server_hostname: str | None,
                         timeout: float) -> Transport:
    """Connects to `url`: `runnel://host[:port]` (TCP, port 7455 by default), `runnels://host:port`
    (TLS: `ssl`, or the system's trusted CAs), `ws://host:port/ws` or `wss://host:port/ws`."""
    parts = urlsplit(url)
    if parts.scheme in ("runnel", "runnels"):
        if parts.path not in ("", "/") or not parts.hostname:
            raise ValueError(f"{url}: expected {parts.scheme}://HOST:PORT")
        if parts.scheme == "runnels" and parts.port is None:
            raise ValueError(f"{url}: a runnels:// URL names its port (runneld's tls_listen)")
        context = _context(parts.scheme == "runnels", ssl, url)
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(parts.hostname, parts.port or DEFAULT_PORT, ssl=context,
                                    server_hostname=server_hostname if context else None),
            timeout)
        return _StreamTransport(reader, writer)
    if parts.scheme in ("ws", "wss"):
        try:
            from websockets.asyncio.client import connect as websocket_connect
            from websockets.exceptions import InvalidMessage, InvalidStatus
        except ImportError as error:
            raise ImportError("ws:// and wss:// need the websocket extra: "
                              "pip install './clients/python[websocket]'") from error
        context = _context(parts.scheme == "wss", ssl, url)
        options: dict[str, Any] = {"ssl": context, "server_hostname": server_hostname} if context else {}
        try:
            socket = await websocket_connect(url, max_size=MAX_LINE_BYTES, open_timeout=timeout,
                                             **options)
        except (InvalidMessage, InvalidStatus) as error:
            # runneld's line port answers an HTTP request with one `400` naming its HTTP port (older
            # servers with a `bad_json` line per header line, not HTTP at all): a `ping` tells.
            port = parts.port or (443 if parts.scheme == "wss" else 80)
            if parts.hostname and await _speaks_lines(parts.hostname, port, context, server_hostname, timeout):
                address = _address(parts.hostname, port)
                scheme, listen = ("runnels", "https_listen") if context else ("runnel", "http_listen")
                raise WrongPort(f"{url}: this port speaks runnel's line protocol, not HTTP; use {scheme}://{address} "
                                f"(WebSockets are on runneld's {listen} port)") from error
            raise
        return _WebSocketTransport(socket)
    raise ValueError(f"{url}: the scheme is runnel://, runnels://, ws:// or wss://")


async def _speaks_lines(host: str, port: int, context: ssl_module.SSLContext | None, server_hostname: str | None,
                        timeout: float) -> bool:
    """Whether the server at `host`:`port` answers a `ping` line with a JSON reply (runneld's line
    port): asked on a connection of its own, after a WebSocket handshake there failed."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context, server_hostname=server_hostname if context else None),
            timeout)
    except (OSError, asyncio.TimeoutError):
        return False
    try:
        writer.write(b'{"op":"ping","ref":0}\n')
        line = await asyncio.wait_for(reader.readline(), timeout)
        return isinstance(reply := json.loads(line), dict) and "ok" in reply
    except (OSError, ValueError, asyncio.TimeoutError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(writer.wait_closed(), timeout)


def _context(secure: bool, ssl: ssl_module.SSLContext | None, url: str) -> ssl_module.SSLContext | None:
    if not secure:
        if ssl is not None:
            raise ValueError(f"{url}: ssl options need runnels:// or wss://")
        return None
    return ssl or ssl_module.create_default_context()


class _StreamTransport:
    """TCP or TLS: lines split out of what each read returns; requests gathered into one write
    per turn of the event loop (a write each is a system call each), or per 64 KiB."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._partial = b""
        self._out: list[bytes] = []
        self._out_bytes = 0

    def would_wait(self, line: bytes) -> bool:
        return self._out_bytes + len(line) + 1 >= WRITE_BATCH_BYTES

    async def send(self, line: bytes) -> None:
        if self._writer.is_closing():
            raise ConnectionError("the connection is closed")
        self._out.append(line)
        self._out_bytes += len(line) + 1
        if self._out_bytes >= WRITE_BATCH_BYTES:
            self._write()
            await self._writer.drain()
        elif len(self._out) == 1:
            asyncio.get_running_loop().call_soon(self._write)

    def _write(self) -> None:
        if self._out and not self._writer.is_closing():
            self._out.append(b"")
            self._writer.write(b"\n".join(self._out))
        self._out.clear()
        self._out_bytes = 0

    async def receive(self) -> list[bytes]:
        while True:
            chunk = await self._reader.read(1 << 16)
            if not chunk:
                return []
            lines = (self._partial + chunk).split(b"\n")
            self._partial = lines.pop()
            if len(self._partial) > MAX_LINE_BYTES:
                raise ConnectionError(f"a line from the server is longer than {MAX_LINE_BYTES} bytes")
            if lines:
                return lines

    async def close(self) -> None:
        self._writer.close()
        with contextlib.suppress(OSError, asyncio.TimeoutError):
            await asyncio.wait_for(self._writer.wait_closed(), 5)


class _WebSocketTransport:
    """A WebSocket: one text message each way per line."""

    def __init__(self, socket: Any) -> None:
        from websockets.exceptions import ConnectionClosed
        from websockets.protocol import State

        self._socket = socket
        self._closed = ConnectionClosed
        self._open = State.OPEN

    def would_wait(self, line: bytes) -> bool:
        # websockets waits while its flow control has paused writing, or the connection closes.
        return getattr(self._socket, "paused", True) or self._socket.state is not self._open

    async def send(self, line: bytes) -> None:
        try:
            await self._socket.send(line.decode())
        except self._closed as error:
            raise ConnectionError(str(error)) from error

    async def receive(self) -> list[bytes]:
        try:
            return [await self._socket.recv(decode=False)]
        except self._closed as error:
            if error.rcvd is not None and error.rcvd.code in (1000, 1001):
                return []
            raise ConnectionError(str(error)) from error

    async def close(self) -> None:
        await self._socket.close()
