"""The WebSocket endpoint (GET /ws) against a real runneld, with a real WebSocket client no one
here wrote (websockets) and, for what a well-behaved client never sends, raw sockets.

    python3 -m pytest Tests/blackbox/test_websocket.py [--runneld PATH]

Starts its own runneld processes on free loopback ports (the protocol and HTTP both), one per
configuration, and checks docs/protocol.md's "The HTTP front door", WebSocket rules (RFC 6455):
the handshake (101 and its accept value, 426, 400, 405), authentication (401 before the upgrade,
`auth` as the first message, a token in the header or the query) and origins (403
`forbidden_origin`); then groups named after the Autobahn testsuite's: 1 framing (text messages
of 0 to 262144 bytes, whole and in small TCP writes), 2 pings and pongs, 3 reserved bits,
4 opcodes, 5 fragmentation, 6 UTF-8 (a table of valid and invalid sequences, whole, split
across fragments, cut short), 7 close handling (every close code, the server's echo, 1002 and
1007), 9 limits (max_line_bytes, 1009, length fields not in shortest form), 12 and 13
permessage-deflate (RFC 7692: 12, Autobahn's message sizes from 16 B to 128 KiB compressed both
ways, with and without context takeover, and through websockets' own implementation; 13, every
combination of the four parameters, its answer and the windows kept to; offers declined, RSV1
misplaced, a decompression bomb refused with 1009 and the RSS bound, `compression = false`);
disposal of a
WebSocket's subscriptions however it ends; the slow-consumer policy (the `closing` line, then
1008); and a hostile group (10,000 WebSockets opened and dropped, garbage after a good
handshake, a WebSocket that never reads), after which the same daemon still serves a
WebSocket, an SSE and a TCP client without loss and its RSS stays under a stated bound. Needs
websockets (PyPI, version 13 or later: Debian 12's python3-websockets is 10.4; `make test`
installs it) and httpx (Debian: python3-httpx).
"""

import base64
import hashlib
import json
import os
import random
import resource
import socket
import struct
import time
import zlib

import httpx
import pytest
from runneld_process import LineClient, assert_clean_stop, poll_until
from websockets.exceptions import ConnectionClosed, InvalidStatus
from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
from websockets.sync.client import connect

TOKEN = "s3cret"
ALLOWED = "https://dash.example"
GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


AUTH = {"Authorization": f"Bearer {TOKEN}"}


def stats(d):
    return httpx.get(d.url + "/stats", headers=AUTH).json()


def wait_for_stats(d, predicate, what, seconds=5):
    """Polls /stats (for up to `seconds`) until `predicate` holds; returns those stats."""
    return poll_until(lambda: stats(d), predicate, what, seconds)


def quiet_stats(d):
    """/stats once every earlier check's connections have closed: only the /stats request."""
    return wait_for_stats(d, lambda s: s["connections"] == 1, "the earlier checks' connections did not close")


# WebSocket frames, written and read by hand (RFC 6455, 5.2).

TEXT, BINARY, CLOSE, PING, PONG, CONTINUATION = 1, 2, 8, 9, 10, 0


def mask(payload, key):
    if not payload:
        return b""
    repeated = (key * (len(payload) // 4 + 1))[:len(payload)]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(repeated, "big")).to_bytes(len(payload), "big")


def frame(opcode, payload=b"", fin=True, rsv=0, masked=True, length_bytes=None, length=None):
    """One frame's bytes. `length_bytes` (0, 2 or 8) forces a length form; `length` a length
    field that is not the payload's."""
    if isinstance(payload, str):
        payload = payload.encode()
    first = (0x80 if fin else 0) | (rsv << 4) | opcode
    n = len(payload) if length is None else length
    if length_bytes is None:
        length_bytes = 0 if n < 126 else 2 if n < 65536 else 8
    mask_bit = 0x80 if masked else 0
    if length_bytes == 0:
        head = bytes([first, mask_bit | n])
    elif length_bytes == 2:
        head = bytes([first, mask_bit | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([first, mask_bit | 127]) + n.to_bytes(8, "big")
    if masked:
        key = os.urandom(4)
        return head + key + mask(payload, key)
    return head + payload


def close_payload(code, reason=b""):
    return struct.pack("!H", code) + reason


def new_key():
    return base64.b64encode(os.urandom(16)).decode()


def accept_of(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def upgrade_request(d, key=None, fields=None, path="/ws", method="GET"):
    """An upgrade request's bytes: the usual fields, `fields` replacing or (value None) removing them."""
    head = {"Host": f"127.0.0.1:{d.http_port}", "Upgrade": "websocket", "Connection": "Upgrade",
            "Sec-WebSocket-Key": key or new_key(), "Sec-WebSocket-Version": "13"}
    for name, value in (fields or {}).items():
        head.pop(name, None)
        if value is not None:
            head[name] = value
    lines = [f"{method} {path} HTTP/1.1"] + [f"{name}: {value}" for name, value in head.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


def read_head(sock):
    """(status, {lowercased name: value}, body, bytes after the head and body)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise EOFError(f"closed before a response head: {data!r}")
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    fields = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        fields[name.strip().lower()] = value.strip()
    body = b""
    if status != 101:
        length = int(fields.get("content-length", "0"))
        while len(rest) < length:
            chunk = sock.recv(65536)
            if not chunk:
                break
            rest += chunk
        body, rest = rest[:length], rest[length:]
    return status, fields, body, rest


def raw_answer(d, request):
    """Sends an HTTP request on a new socket; its response's status, fields and body."""
    with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as sock:
        sock.sendall(request)
        status, fields, body, _ = read_head(sock)
        return status, fields, body


class ProtocolViolation(AssertionError):
    pass


class RawWS:
    """A WebSocket on a raw socket: what the server sends is checked frame by frame against
    RFC 6455 (unmasked, no reserved bits or opcodes, shortest lengths, short unfragmented
    control frames, UTF-8 text)."""

    def __init__(self, d, fields=None, rcvbuf=None, path="/ws", nodelay=True):
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.socket.settimeout(10)
        self.socket.connect(("127.0.0.1", d.http_port))
        if nodelay:
            self.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        key = new_key()
        self.socket.sendall(upgrade_request(d, key, fields, path))
        status, self.fields, body, self.buffer = read_head(self.socket)
        assert status == 101, (status, self.fields, body)
        assert self.fields.get("sec-websocket-accept") == accept_of(key), self.fields
        assert self.fields.get("upgrade", "").lower() == "websocket", self.fields
        assert "upgrade" in self.fields.get("connection", "").lower(), self.fields
        self.eof = False

    def send(self, data, chunk=None):
        """Sends bytes, in writes of `chunk` bytes when given; False when the server had
        already closed (a hostile client may be cut off mid-write)."""
        try:
            if chunk is None:
                self.socket.sendall(data)
            else:
                for start in range(0, len(data), chunk):
                    self.socket.sendall(data[start:start + chunk])
            return True
        except (BrokenPipeError, ConnectionResetError):
            return False

    def send_frame(self, *arguments, **keywords):
        return self.send(frame(*arguments, **keywords))

    def text(self, request):
        return self.send_frame(TEXT, json.dumps(request))

    def _take(self, count):
        while len(self.buffer) < count:
            try:
                chunk = self.socket.recv(1 << 20)
            except ConnectionResetError:
                chunk = b""
            if not chunk:
                self.eof = True
                raise EOFError(f"the server closed the TCP connection (buffered: {self.buffer[:60]!r})")
            self.buffer += chunk
        data, self.buffer = self.buffer[:count], self.buffer[count:]
        return data

    def frame(self):
        """The next frame the server sent: (fin, opcode, payload)."""
        first, second = self._take(2)
        fin, rsv, opcode = first >> 7, (first >> 4) & 7, first & 15
        if second & 0x80:
            raise ProtocolViolation(f"a masked server frame: {first:02x} {second:02x}")
        if rsv:
            raise ProtocolViolation(f"reserved bits set by the server: {first:02x}")
        if opcode not in (CONTINUATION, TEXT, BINARY, CLOSE, PING, PONG):
            raise ProtocolViolation(f"reserved opcode {opcode} from the server")
        length = second & 0x7F
        if length == 126:
            length = int.from_bytes(self._take(2), "big")
            if length < 126:
                raise ProtocolViolation(f"16-bit length {length} not in shortest form")
        elif length == 127:
            length = int.from_bytes(self._take(8), "big")
            if length < 65536 or length >> 63:
                raise ProtocolViolation(f"64-bit length {length} not in shortest form")
        if opcode >= 8 and (length > 125 or not fin):
            raise ProtocolViolation(f"bad control frame from the server: opcode {opcode}, {length} bytes, fin {fin}")
        return fin, opcode, self._take(length)

    def message(self):
        """The next message or control frame: (opcode, payload), text decoded; fragments joined."""
        fin, opcode, payload = self.frame()
        if opcode >= 8:
            return opcode, payload
        if opcode == CONTINUATION:
            raise ProtocolViolation("a continuation frame from the server with no message started")
        while not fin:
            fin, more, part = self.frame()
            if more >= 8:
                raise ProtocolViolation("control frames between the server's fragments are not expected here")
            if more != CONTINUATION:
                raise ProtocolViolation(f"opcode {more} in the middle of the server's fragmented message")
            payload += part
        if opcode == TEXT:
            try:
                return TEXT, payload.decode("utf-8")
            except UnicodeDecodeError as error:
                raise ProtocolViolation(f"a text message from the server that is not UTF-8: {error}") from None
        return opcode, payload

    def reply(self):
        """The next text message, as JSON (pongs skipped)."""
        while True:
            opcode, payload = self.message()
            if opcode == TEXT:
                return json.loads(payload)
            assert opcode == PONG, (opcode, payload)

    def request(self, request):
        self.text(dict(request, ref=1))
        while True:
            line = self.reply()
            if line.get("ref") == 1:
                return line

    def expect_close(self, code, timeout=5):
        """Reads until the server's close frame, which must carry `code` (None: no payload or
        1000), then until the server closes the TCP connection. The text messages before it."""
        self.socket.settimeout(timeout)
        texts = []
        try:
            while True:
                opcode, payload = self.message()
                if opcode == CLOSE:
                    break
                if opcode == TEXT:
                    texts.append(payload)
        except EOFError:
            raise AssertionError(f"the server closed TCP without a close frame (expected {code}); "
                                 f"texts {texts[-3:]}") from None
        except socket.timeout:
            raise AssertionError(f"no close frame within {timeout} s (expected {code}); texts {texts[-3:]}") from None
        got = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
        if code is None:
            assert got in (None, 1000), f"close code {got}, expected none or 1000 (payload {payload!r})"
        else:
            assert got == code, f"close code {got}, expected {code} (payload {payload!r}); texts {texts[-3:]}"
        payload[2:].decode("utf-8")  # the server's own reason is UTF-8
        self.close_payload = payload
        try:
            extra = self._take(1)
            raise AssertionError(f"bytes after the server's close frame: {extra + self.buffer!r}")
        except EOFError:
            pass
        except socket.timeout:
            raise AssertionError(f"the server did not close TCP within {timeout} s of its close frame") from None
        return texts

    def close(self):
        self.socket.close()

    def drop(self, reset=False):
        """Closes the TCP connection without a close frame; with `reset`, by an RST."""
        if reset:
            self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.socket.close()


def ws_connect(d, **keywords):
    """The well-behaved client: websockets' own, offering permessage-deflate as it does."""
    keywords.setdefault("open_timeout", 10)
    keywords.setdefault("legacy", True)  # used with and without `with`
    return connect(d.ws_url if "uri" not in keywords else keywords.pop("uri"), proxy=None,
                   max_size=4 << 20, **keywords)


def ws_request(ws, request, ref=1):
    ws.send(json.dumps(dict(request, ref=ref)))
    while True:
        reply = json.loads(ws.recv(timeout=10))
        if reply.get("ref") == ref:
            return reply


def ping_of_length(length):
    """A ping request exactly `length` bytes long (>= 22), and its reply."""
    pad = "x" * (length - 22)
    request = '{"op":"ping","ref":"' + pad + '"}'
    assert len(request) == length
    return request, {"ok": True, "ref": pad}


def expect_refused(d, request, status, code):
    got, fields, body = raw_answer(d, request)
    assert got == status, (got, fields, body)
    parsed = json.loads(body)
    assert parsed["ok"] is False and parsed["code"] == code and isinstance(parsed["message"], str), parsed
    return fields


# Group 1: framing.

LENGTHS = [0, 125, 126, 127, 128, 65535, 65536, 200000, 262144]


# Groups 12 and 13: permessage-deflate (RFC 7692), message sizes and parameter combinations.

class DeflateRawWS(RawWS):
    """A raw WebSocket that offers `offer` in Sec-WebSocket-Extensions: server frames may have
    RSV1 on a message's first frame; `message()` inflates those (zlib, raw, 00 00 ff ff added
    back) with a window of `window_bits` (the agreed server_max_window_bits: a reference
    farther back fails), one window across messages unless `fresh` (server_no_context_takeover)."""

    def __init__(self, d, offer="permessage-deflate", fresh=False, window_bits=15):
        super().__init__(d, {"Sec-WebSocket-Extensions": offer})
        self.fresh = fresh
        self.window_bits = window_bits
        self.inflater = zlib.decompressobj(-window_bits)
        self.compressed = []  # whether each text message was compressed, in order
        self.payloads = []  # each compressed text message's payload as received, in order

    def frame(self):
        # RSV1 is read here and cleared, so RawWS's check of the other bits still applies.
        first = self._take(1)[0]
        self.buffer = bytes([first & ~0x40]) + self.buffer
        fin, opcode, payload = super().frame()
        self.frame_rsv1 = bool(first & 0x40)
        if self.frame_rsv1 and opcode >= 8:
            raise ProtocolViolation(f"RSV1 on a control frame, opcode {opcode}")
        return fin, opcode, payload

    def message(self):
        fin, opcode, payload = self.frame()
        compressed = self.frame_rsv1
        if opcode >= 8:
            return opcode, payload
        while not fin:
            fin, more, part = self.frame()
            assert more == CONTINUATION and not self.frame_rsv1, (more, self.frame_rsv1)
            payload += part
        if compressed:
            self.payloads.append(payload)
            if self.fresh:
                self.inflater = zlib.decompressobj(-self.window_bits)
            payload = self.inflater.decompress(payload + TAIL)
        self.compressed.append(compressed)
        return opcode, payload.decode("utf-8") if opcode == TEXT else payload


def deflated(text, compressor=None):
    """A client's compressed message payload: raw deflate, sync flush, 00 00 ff ff taken off."""
    compressor = compressor or zlib.compressobj(wbits=-15)
    data = compressor.compress(text.encode() if isinstance(text, str) else text) + compressor.flush(zlib.Z_SYNC_FLUSH)
    assert data.endswith(b"\x00\x00\xff\xff")
    return data[:-4]


def metrics_value(i, width):
    """A dashboard-like JSON value of about `width` bytes, repetitive as metrics are."""
    return {"host": f"web-{i % 7}", "cpu": round(i * 0.37 % 1, 3), "mem": 1000 + i,
            "tags": ["prod", "eu-west", "metrics"] * max(1, width // 30)}


# Group 12 (Autobahn's 12.x): messages of the testsuite's sizes, compressed both ways, several of
# each in a row, with and without context takeover. Group 13 (Autobahn's 13.x): the parameter
# combinations a client offers, each with the answer it must get and messages that show the
# windows were kept to.

AUTOBAHN_SIZES = [16, 64, 256, 1024, 4096, 8192, 16384, 32768, 65536, 131072]
WORDS = ("cpu mem disk net rx tx host web db cache prod eu-west us-east load p99 latency error ok "
         "requests queue depth 0.93 17 4096 1024 up down").split()
TAIL = b"\x00\x00\xff\xff"


def sized_value(size, i):
    """A JSON object of exactly `size` bytes (16 or more; `i` under 10): text of a small
    vocabulary, as metrics and logs are, different for each `i`."""
    words = random.Random(size * 31 + i)
    head = f'{{"n":{i},"t":"'
    room = size - len(head) - 2
    text = ""
    while len(text) < room:
        text += words.choice(WORDS) + " "
    value = head + text[:room] + '"}'
    assert len(value) == size, (size, len(value))
    return value


def inflates_alone(payload, window_bits=15):
    """Whether a compressed message inflates without the window of the messages before it."""
    try:
        zlib.decompressobj(-window_bits).decompress(payload + TAIL)
        return True
    except zlib.error:
        return False


class ClientDeflater:
    """The client's side of permessage-deflate: raw deflate with a `window_bits` window, the
    window kept from one message to the next unless not `takeover` (client_no_context_takeover)."""

    def __init__(self, window_bits=15, takeover=True):
        self.window_bits, self.takeover = window_bits, takeover
        self.compressor = zlib.compressobj(wbits=-window_bits)

    def message(self, text):
        if not self.takeover:
            self.compressor = zlib.compressobj(wbits=-self.window_bits)
        return deflated(text, self.compressor)


def extension_parameters(answer):
    """The answer's `Sec-WebSocket-Extensions`, one permessage-deflate: its parameters, a set."""
    name, *parameters = [part.strip() for part in answer.split(";")]
    assert name == "permessage-deflate", answer
    assert "," not in answer, answer
    return set(parameters)


def round_trip_sizes(d, offer, takeover):
    """Group 12's run for one offer: a publisher and a subscriber on raw WebSockets, each message
    of each size published compressed (the publisher's window kept when `takeover`) and received
    compressed, byte for byte as published. The server's compressed messages, in order."""
    publisher = DeflateRawWS(d, offer, fresh=not takeover)
    subscriber = DeflateRawWS(d, offer, fresh=not takeover)
    assert publisher.fields.get("sec-websocket-extensions") == offer, publisher.fields
    subject = f"a12.{int(takeover)}"
    assert subscriber.request({"op": "sub", "subject": subject, "sid": "s"})["ok"]
    deflater = ClientDeflater(takeover=takeover)
    for size in AUTOBAHN_SIZES:
        for i in range(4):
            value = sized_value(size, i)
            payload = deflater.message('{"op":"pub","subject":"' + subject + '","value":' + value + "}")
            if takeover and i > 0 and size <= 4096:
                # The publisher's message needs its window: the server kept it too.
                assert not inflates_alone(payload), (size, i)
            publisher.send_frame(TEXT, payload, rsv=4)
            opcode, text = subscriber.message()
            assert opcode == TEXT and text == '{"ev":"next","sid":"s","value":' + value + "}", (size, i, text[:80])
    assert subscriber.compressed == [True] * (1 + 4 * len(AUTOBAHN_SIZES)), subscriber.compressed
    publisher.close()
    subscriber.close()
    return subscriber.payloads


# Group 6: UTF-8.

VALID_UTF8 = {
    "greek kosme": "κόσμε".encode(),
    "U+0080 first 2-byte": b"\xc2\x80",
    "U+07FF last 2-byte": b"\xdf\xbf",
    "U+0800 first 3-byte": b"\xe0\xa0\x80",
    "U+D7FF before surrogates": b"\xed\x9f\xbf",
    "U+E000 after surrogates": b"\xee\x80\x80",
    "U+FDD0 noncharacter": b"\xef\xb7\x90",
    "U+FEFF BOM inside": b"\xef\xbb\xbf",
    "U+FFFD replacement": b"\xef\xbf\xbd",
    "U+FFFE noncharacter": b"\xef\xbf\xbe",
    "U+FFFF last 3-byte": b"\xef\xbf\xbf",
    "U+10000 first 4-byte": b"\xf0\x90\x80\x80",
    "U+1F600 emoji": b"\xf0\x9f\x98\x80",
    "U+10FFFF last code point": b"\xf4\x8f\xbf\xbf",
    "mixed": "aé€😀z".encode(),
}

INVALID_UTF8 = {
    "lone continuation 0x80": b"\x80",
    "lone continuation 0xBF": b"\xbf",
    "continuation after ASCII": b"a\x80b",
    "2-byte overlong NUL C0 80": b"\xc0\x80",
    "2-byte overlong C1 BF": b"\xc1\xbf",
    "3-byte overlong E0 80 80": b"\xe0\x80\x80",
    "3-byte overlong U+07FF E0 9F BF": b"\xe0\x9f\xbf",
    "4-byte overlong U+FFFF F0 8F BF BF": b"\xf0\x8f\xbf\xbf",
    "4-byte overlong NUL F0 80 80 80": b"\xf0\x80\x80\x80",
    "surrogate U+D800": b"\xed\xa0\x80",
    "surrogate U+DBFF": b"\xed\xaf\xbf",
    "surrogate U+DC00": b"\xed\xb0\x80",
    "surrogate U+DFFF": b"\xed\xbf\xbf",
    "surrogate pair (CESU-8) U+1F600": b"\xed\xa0\xbd\xed\xb8\x80",
    "U+110000 beyond Unicode": b"\xf4\x90\x80\x80",
    "F5 lead byte": b"\xf5\x80\x80\x80",
    "F7 BF BF BF (U+1FFFFF)": b"\xf7\xbf\xbf\xbf",
    "5-byte sequence": b"\xf8\x88\x80\x80\x80",
    "6-byte sequence": b"\xfc\x84\x80\x80\x80\x80",
    "FE byte": b"\xfe",
    "FF byte": b"\xff",
    "truncated 2-byte": b"\xc3",
    "truncated 3-byte": b"\xe2\x82",
    "truncated 4-byte": b"\xf0\x9f\x98",
    "lead byte then ASCII": b"\xe2a\x82",
    "two lead bytes": b"\xc3\xc3\xa9",
}


def ping_with_bytes(raw):
    return b'{"op":"ping","ref":"' + raw + b'"}'


# Group 7: close handling.

SENDABLE = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 3000, 3999, 4000, 4999]
NOT_SENDABLE = [0, 999, 1004, 1005, 1006, 1012, 1013, 1014, 1015, 1016, 1100, 2000, 2999, 5000, 65535]


# Group 9-like: limits (max_line_bytes = 262144 here).

MAX_LINE = 262144


MAIN_CONFIG = f"""
http_allowed_origins = ["{ALLOWED}"]
max_line_bytes = {MAX_LINE}
log_level = "notice"
"""


AUTH_CONFIG = f"""
auth_tokens = ["{TOKEN}"]
slow_consumer = "drop"
max_pending_bytes = 65536
log_level = "notice"
"""


# Hostile clients and a slow consumer, then the survivors, against one daemon.

HOSTILE_MAX_CONNECTIONS = 2000
HOSTILE_MAX_PENDING = 65536
CHURN = 10000
BATCH = 500
# The bound: 32 MiB for a debug runneld at rest (it starts near 15 MiB), plus every connection
# max_connections allows holding a full max_pending_bytes of unsent output (2000 x 64 KiB =
# 125 MiB) and a read buffer up to max_line_bytes (most stay small; 16 KiB each = 31 MiB):
# 188 MiB, rounded to 200 MiB. None of that is held once the connections are gone, so a leak of
# about 20 KiB per dropped WebSocket (10,000 of them) would pass it.
RSS_BOUND = 200 << 20


def raise_open_files():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = min(hard, max(soft, 2 * BATCH + 1000))
    if wanted > soft:
        resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


HOSTILE_CONFIG = f"""
slow_consumer = "disconnect"
max_pending_bytes = {HOSTILE_MAX_PENDING}
max_connections = {HOSTILE_MAX_CONNECTIONS}
max_line_bytes = 65536
log_level = "notice"
"""


@pytest.mark.daemon(MAIN_CONFIG)
class TestMain:
    """The handshake, the groups named after the Autobahn testsuite's, disposal."""

    # The handshake.

    def test_handshake_101(self, d):
        ws = RawWS(d)
        assert ws.request({"op": "ping"}) == {"ok": True, "ref": 1}
        assert "sec-websocket-extensions" not in ws.fields, ws.fields
        ws.close()
        # Header values are case-insensitive tokens; Connection may list others.
        ws = RawWS(d, {"Upgrade": "WebSocket", "Connection": "keep-alive, Upgrade"})
        assert ws.request({"op": "ping"})["ok"]
        ws.close()
        # The well-behaved client offers permessage-deflate, and gets it (group 12 below).
        with ws_connect(d) as client:
            assert client.response.headers.get("Sec-WebSocket-Extensions") == "permessage-deflate", \
                client.response.headers
            assert ws_request(client, {"op": "ping"}) == {"ok": True, "ref": 1}

    def test_handshake_426(self, d):
        fields = expect_refused(d, b"GET /ws HTTP/1.1\r\nHost: x\r\n\r\n", 426, "bad_request")
        assert fields.get("sec-websocket-version") == "13", fields
        for changed in [{"Sec-WebSocket-Version": "8"}, {"Sec-WebSocket-Version": None}, {"Upgrade": None},
                        {"Connection": "keep-alive"}, {"Upgrade": "h2c"}, {"Sec-WebSocket-Version": "14"}]:
            fields = expect_refused(d, upgrade_request(d, fields=changed), 426, "bad_request")
            assert fields.get("sec-websocket-version") == "13", (changed, fields)
        # With httpx too: a plain GET /ws.
        response = httpx.get(d.url + "/ws")
        assert response.status_code == 426 and response.headers["sec-websocket-version"] == "13", response
        assert response.json()["code"] == "bad_request", response.text

    def test_handshake_bad_key_400(self, d):
        for key in [None, "", "dGhlIHNhbXBsZSBub25jZQ", "dGhlIHNhbXBsZSBub25j", base64.b64encode(b"x" * 15).decode(),
                    base64.b64encode(b"x" * 17).decode(), "dGhlIHNhbXBsZSBub25jZQ=!", "!GhlIHNhbXBsZSBub25jZQ=="]:
            expect_refused(d, upgrade_request(d, fields={"Sec-WebSocket-Key": key}), 400, "bad_request")
        # RFC 6455's own example key is fine, and its accept value is the RFC's.
        with socket.create_connection(("127.0.0.1", d.http_port), timeout=5) as sock:
            sock.sendall(upgrade_request(d, key="dGhlIHNhbXBsZSBub25jZQ=="))
            status, fields, _, _ = read_head(sock)
            assert status == 101 and fields["sec-websocket-accept"] == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=", fields

    def test_handshake_other_method_405(self, d):
        fields = expect_refused(d, upgrade_request(d, method="POST").replace(b"\r\n\r\n",
                                                                             b"\r\nContent-Length: 0\r\n\r\n"),
                                405, "method_not_allowed")
        assert "GET" in fields.get("allow", ""), fields

    def test_handshake_origins(self, d):
        evil = upgrade_request(d, fields={"Origin": "https://evil.example"})
        expect_refused(d, evil, 403, "forbidden_origin")
        # Another port of the same host is another origin; so is another host on the same port.
        expect_refused(d, upgrade_request(d, fields={"Origin": f"http://127.0.0.1:{d.http_port + 1}"}), 403,
                       "forbidden_origin")
        expect_refused(d, upgrade_request(d, fields={"Origin": f"http://evil.example:{d.http_port}"}), 403,
                       "forbidden_origin")
        expect_refused(d, upgrade_request(d, fields={"Origin": "null"}), 403, "forbidden_origin")
        try:
            ws_connect(d, origin="https://evil.example").close()
            raise AssertionError("an upgrade from another origin was accepted")
        except InvalidStatus as error:
            assert error.response.status_code == 403, error.response
            assert json.loads(error.response.body)["code"] == "forbidden_origin", error.response.body
        # The allowed origin, the server's own (same host:port as Host), and no Origin at all.
        for fields in [{"Origin": ALLOWED}, {"Origin": f"http://127.0.0.1:{d.http_port}"},
                       {"Host": f"localhost:{d.http_port}", "Origin": f"http://localhost:{d.http_port}"}, {}]:
            ws = RawWS(d, fields)
            assert ws.request({"op": "ping"})["ok"], fields
            ws.close()
        with ws_connect(d, origin=ALLOWED) as client:
            assert ws_request(client, {"op": "ping"})["ok"]

    # Group 1: framing.

    def test_1_text_lengths_websockets(self, d):
        with ws_connect(d) as client:
            for length in LENGTHS:
                if length == 0:
                    # An empty message is a blank line: ignored, the next request answered.
                    client.send("")
                    assert ws_request(client, {"op": "ping"}, ref="after-empty") == {"ok": True, "ref": "after-empty"}
                    continue
                request, reply = ping_of_length(length)
                client.send(request)
                got = json.loads(client.recv(timeout=10))
                assert got == reply, (length, str(got)[:80])

    def test_1_text_lengths_raw_whole_and_chopped(self, d):
        ws = RawWS(d)
        for length in LENGTHS:
            for chunk in [None, 1 if length < 1000 else 997]:
                if length == 0:
                    ws.send(frame(TEXT, b""), chunk=1 if chunk else None)
                    ws.text({"op": "ping", "ref": "after-empty"})
                    assert ws.reply() == {"ok": True, "ref": "after-empty"}
                    continue
                request, reply = ping_of_length(length)
                data = frame(TEXT, request)
                if chunk:
                    ws.send(data[:14], chunk=1)  # the head byte by byte
                    ws.send(data[14:], chunk=chunk)
                else:
                    ws.send(data)
                got = ws.reply()
                assert got == reply, (length, chunk, str(got)[:80])
        # Many messages in one TCP write, answered in order.
        ws.send(b"".join(frame(TEXT, json.dumps({"op": "ping", "ref": n})) for n in range(100)))
        assert [ws.reply()["ref"] for _ in range(100)] == list(range(100))
        ws.close()

    def test_1_replies_are_frames_in_shortest_form(self, d):
        # RawWS.frame refuses a server frame that is masked, has reserved bits, or a longer length
        # form than needed; replies of 125/126/65535/65536 bytes test each boundary of the server's side.
        ws = RawWS(d)
        for reply_length in [125, 126, 65535, 65536]:
            pad = "x" * (reply_length - len('{"ok":true,"ref":""}'))
            ws.text({"op": "ping", "ref": pad})
            fin, opcode, payload = ws.frame()
            assert fin and opcode == TEXT and len(payload) == reply_length, (fin, opcode, len(payload))
            assert not payload.endswith(b"\n"), "a text message without its newline"
        ws.close()

    # Group 2: pings and pongs.

    def test_2_ping_pong(self, d):
        ws = RawWS(d)
        for payload in [b"", b"hello", os.urandom(125), bytes(range(125))]:
            ws.send_frame(PING, payload)
            assert ws.message() == (PONG, payload), payload
        # Chopped into 1-byte writes.
        ws.send(frame(PING, b"slow ping"), chunk=1)
        assert ws.message() == (PONG, b"slow ping")
        # Ten pings at once: ten pongs, in order.
        ws.send(b"".join(frame(PING, str(n).encode()) for n in range(10)))
        assert [ws.message() for _ in range(10)] == [(PONG, str(n).encode()) for n in range(10)]
        # An unsolicited pong is ignored.
        ws.send_frame(PONG, b"unsolicited")
        ws.send_frame(PONG, b"")
        assert ws.request({"op": "ping"}) == {"ok": True, "ref": 1}
        ws.close()
        with ws_connect(d) as client:
            assert client.ping(b"lib").wait(5)

    def test_2_ping_payload_126_is_1002(self, d):
        ws = RawWS(d)
        ws.send_frame(PING, b"x" * 126)
        ws.expect_close(1002)
        ws = RawWS(d)
        ws.send_frame(PONG, b"x" * 126)
        ws.expect_close(1002)
        # A control frame whose 7-bit length field is 126 with a 16-bit length under 126.
        ws = RawWS(d)
        ws.send_frame(PING, b"x" * 10, length_bytes=2)
        ws.expect_close(1002)

    def test_2_fragmented_ping_is_1002(self, d):
        for opcode in [PING, PONG, CLOSE]:
            ws = RawWS(d)
            payload = close_payload(1000) if opcode == CLOSE else b"frag"
            ws.send_frame(opcode, payload, fin=False)
            ws.expect_close(1002)

    # Group 3: reserved bits.

    def test_3_rsv_bits_are_1002(self, d):
        for rsv in range(1, 8):
            ws = RawWS(d)
            ws.send_frame(TEXT, '{"op":"ping"}', rsv=rsv)
            ws.expect_close(1002)
        # On a ping, on a continuation; and after a good message, which is answered first.
        ws = RawWS(d)
        ws.send_frame(PING, b"p", rsv=4)
        ws.expect_close(1002)
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(CONTINUATION, '"ref":2}', rsv=2))
        ws.expect_close(1002)
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping","ref":7}') + frame(TEXT, '{"op":"ping","ref":8}', rsv=1)
                + frame(PING, b"never"))
        texts = ws.expect_close(1002)
        assert texts == ['{"ok":true,"ref":7}'], texts

    # Group 4: opcodes.

    def test_4_reserved_opcodes_are_1002(self, d):
        for opcode in [3, 4, 5, 6, 7, 0xB, 0xC, 0xD, 0xE, 0xF]:
            ws = RawWS(d)
            ws.send_frame(opcode, b"" if opcode % 2 else b"reserved")
            ws.expect_close(1002)
        # After a good message, which is answered first.
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping","ref":5}') + frame(0xB, b"") + frame(PING, b"never"))
        assert ws.expect_close(1002) == ['{"ok":true,"ref":5}']

    def test_4_binary_is_1003(self, d):
        ws = RawWS(d)
        ws.send_frame(BINARY, b'{"op":"ping"}')
        ws.expect_close(1003)
        ws = RawWS(d)
        ws.send_frame(BINARY, b"")
        ws.expect_close(1003)
        ws = RawWS(d)
        ws.send(frame(BINARY, b'{"op":', fin=False) + frame(CONTINUATION, b'"ping"}'))
        ws.expect_close(1003)
        with ws_connect(d) as client:
            client.send(b'{"op":"ping"}')
            try:
                client.recv(timeout=5)
                raise AssertionError("a binary message was answered")
            except ConnectionClosed:
                pass
            assert client.close_code == 1003, client.close_code

    def test_line_breaks_published_over_a_websocket(self, d):
        # A WebSocket message may hold line breaks where a TCP line cannot (JSON whitespace): a
        # value published with them reaches a TCP subscriber on one line, the same JSON; a raw
        # line break inside a string is not JSON, as on TCP.
        tcp = LineClient(d.port)
        assert tcp.request({"op": "sub", "subject": "nl.a", "sid": "n"})["ok"]
        with ws_connect(d) as client:
            client.send('{"op":"pub",\r\n"subject":"nl.a","value":{"a":\n[1,\n2],"s":"x\\ny"}}')
            assert tcp.line() == {"ev": "next", "sid": "n", "value": {"a": [1, 2], "s": "x\ny"}}
            client.send('{"op":"pub","subject":"nl.a","value":"a\nb","ref":1}')
            assert json.loads(client.recv(timeout=5))["code"] == "bad_json"
        tcp.close()

    # Group 5: fragmentation.

    def test_5_fragments_reassembled(self, d):
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(CONTINUATION, '"ref":"two"}'))
        assert ws.reply() == {"ok": True, "ref": "two"}
        # One byte per fragment, each in its own TCP write.
        message = b'{"op":"ping","ref":"bytes"}'
        parts = [frame(TEXT if i == 0 else CONTINUATION, message[i:i + 1], fin=i == len(message) - 1)
                 for i in range(len(message))]
        for part in parts:
            ws.send(part)
        assert ws.reply() == {"ok": True, "ref": "bytes"}
        # Empty fragments, first and last.
        ws.send(frame(TEXT, b"", fin=False) + frame(CONTINUATION, '{"op":"ping","ref":"e"}', fin=False)
                + frame(CONTINUATION, b""))
        assert ws.reply() == {"ok": True, "ref": "e"}
        # Fragments chopped into 1-byte writes.
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(CONTINUATION, '"ref":"chop"}'), chunk=1)
        assert ws.reply() == {"ok": True, "ref": "chop"}
        # Large fragments with 16- and 64-bit lengths.
        pad = "y" * 100000
        whole = json.dumps({"op": "ping", "ref": pad}, separators=(",", ":")).encode()
        ws.send(frame(TEXT, whole[:300], fin=False) + frame(CONTINUATION, whole[300:70300], fin=False)
                + frame(CONTINUATION, whole[70300:]))
        assert ws.reply() == {"ok": True, "ref": pad}
        ws.close()

    def test_5_pings_between_fragments(self, d):
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(PING, b"p1")
                + frame(CONTINUATION, '"ref":', fin=False) + frame(PING, b"p2") + frame(PONG, b"ignored")
                + frame(CONTINUATION, '"between"}'))
        assert ws.message() == (PONG, b"p1")
        assert ws.message() == (PONG, b"p2")
        assert ws.message() == (TEXT, '{"ok":true,"ref":"between"}')
        # The same, each frame in its own write and the pong awaited before the next fragment.
        ws.send_frame(TEXT, '{"op":"ping",', fin=False)
        ws.send_frame(PING, b"p3")
        assert ws.message() == (PONG, b"p3")
        ws.send_frame(CONTINUATION, '"ref":"awaited"}')
        assert ws.reply() == {"ok": True, "ref": "awaited"}
        ws.close()

    def test_5_continuation_without_start_is_1002(self, d):
        for fin in [True, False]:
            ws = RawWS(d)
            ws.send_frame(CONTINUATION, '{"op":"ping"}', fin=fin)
            ws.expect_close(1002)
        # After a complete message: nothing is started any more.
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping","ref":1}') + frame(CONTINUATION, b"more"))
        assert ws.expect_close(1002) == ['{"ok":true,"ref":1}']

    def test_5_new_message_inside_fragmented_is_1002(self, d):
        for opcode in [TEXT, BINARY]:
            for fin in [True, False]:
                ws = RawWS(d)
                ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(opcode, '{"op":"ping"}', fin=fin))
                ws.expect_close(1002)

    def test_5_websockets_fragmented_send(self, d):
        with ws_connect(d) as client:
            client.send(iter(['{"op":"ping",', '"ref":', '"lib"}']))
            assert json.loads(client.recv(timeout=5)) == {"ok": True, "ref": "lib"}

    # Group 6: UTF-8.

    def test_6_valid_utf8_accepted(self, d):
        ws = RawWS(d)
        for name, raw in VALID_UTF8.items():
            ws.send_frame(TEXT, ping_with_bytes(raw))
            reply = ws.reply()
            assert reply == {"ok": True, "ref": raw.decode()}, (name, reply)
            # Split inside every character, across fragments, each fragment in its own write.
            message = ping_with_bytes(raw)
            start = len(b'{"op":"ping","ref":"')
            for cut in range(start + 1, start + len(raw)):
                ws.send_frame(TEXT, message[:cut], fin=False)
                ws.send_frame(CONTINUATION, message[cut:])
                reply = ws.reply()
                assert reply == {"ok": True, "ref": raw.decode()}, (name, cut, reply)
        # Valid UTF-8 that is not JSON is bad_json, and the connection stays.
        ws.send_frame(TEXT, "κόσμε")
        assert ws.reply()["code"] == "bad_json"
        assert ws.request({"op": "ping"})["ok"]
        ws.close()

    def test_6_invalid_utf8_is_1007(self, d):
        failures = []
        for name, raw in INVALID_UTF8.items():
            message = ping_with_bytes(raw)
            cut = len(b'{"op":"ping","ref":"') + 1
            for how in ["whole", "split across fragments", "split, 1-byte fragments"]:
                ws = RawWS(d)
                if how == "whole":
                    ws.send_frame(TEXT, message)
                elif how == "split across fragments":
                    ws.send(frame(TEXT, message[:cut], fin=False) + frame(CONTINUATION, message[cut:]))
                else:
                    ws.send(b"".join(frame(TEXT if i == 0 else CONTINUATION, message[i:i + 1],
                                           fin=i == len(message) - 1)
                                     for i in range(len(message))))
                try:
                    ws.expect_close(1007)
                except AssertionError as error:
                    failures.append(f"{name} ({how}): {error}")
        assert not failures, f"{len(failures)} of {3 * len(INVALID_UTF8)}: " + "; ".join(failures[:6])

    def test_6_message_ending_mid_character_is_1007(self, d):
        for raw in [b"\xc3", b"\xe2\x82", b"\xf0\x9f\x98"]:
            for fragments in [1, 2]:
                ws = RawWS(d)
                message = b'{"op":"ping","ref":"x"}' + raw
                if fragments == 1:
                    ws.send_frame(TEXT, message)
                else:
                    ws.send(frame(TEXT, message[:-1], fin=False) + frame(CONTINUATION, message[-1:]))
                ws.expect_close(1007)
        # A character begun at the end of one message and "finished" in the next is still invalid.
        ws = RawWS(d)
        ws.send(frame(TEXT, b'{"op":"ping"}\xe2\x82') + frame(TEXT, b'\xac{"op":"ping"}'))
        ws.expect_close(1007)

    # Group 7: close handling.

    def test_7_close_codes_echoed(self, d):
        failures = []
        for code in SENDABLE:
            ws = RawWS(d)
            ws.send_frame(CLOSE, close_payload(code, b"bye"))
            try:
                ws.expect_close(code)
            except AssertionError as error:
                failures.append(f"{code}: {error}")
        assert not failures, failures

    def test_7_close_codes_not_sendable_are_1002(self, d):
        failures = []
        for code in NOT_SENDABLE:
            ws = RawWS(d)
            ws.send_frame(CLOSE, close_payload(code))
            try:
                ws.expect_close(1002)
            except AssertionError as error:
                failures.append(f"{code}: {error}")
        assert not failures, failures

    def test_7_close_payloads(self, d):
        # Empty: answered with a close of its own (no code, or 1000).
        ws = RawWS(d)
        ws.send_frame(CLOSE, b"")
        ws.expect_close(None)
        # One byte: 1002.
        ws = RawWS(d)
        ws.send_frame(CLOSE, b"\x03")
        ws.expect_close(1002)
        # The longest reason (123 bytes), UTF-8.
        ws = RawWS(d)
        ws.send_frame(CLOSE, close_payload(1000, ("é" * 61 + "x").encode()))
        ws.expect_close(1000)
        # A reason that is not UTF-8: 1007, also with a valid code otherwise.
        for reason in [b"\xff", b"ok\xed\xa0\x80", b"\xc3"]:
            ws = RawWS(d)
            ws.send_frame(CLOSE, close_payload(1000, reason))
            ws.expect_close(1007)

    def test_7_close_ends_the_session(self, d):
        # A message before the close is answered; one after it is not.
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping","ref":"before"}') + frame(CLOSE, close_payload(1000))
                + frame(TEXT, '{"op":"ping","ref":"after"}') + frame(PING, b"after"))
        texts = ws.expect_close(1000)
        assert texts == ['{"ok":true,"ref":"before"}'], texts
        # Chopped into 1-byte writes.
        ws = RawWS(d)
        ws.send(frame(CLOSE, close_payload(1001, b"going")), chunk=1)
        ws.expect_close(1001)
        # The close frame may come between a fragmented message's frames (it is a control frame).
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(CLOSE, close_payload(1000)))
        ws.expect_close(1000)
        # The well-behaved client's close handshake completes with the echo.
        client = ws_connect(d)
        assert ws_request(client, {"op": "ping"})["ok"]
        client.close(code=1000, reason="done")
        assert client.close_code == 1000, (client.close_code, client.close_reason)

    # Group 9-like: limits (max_line_bytes = 262144 here).

    def test_9_message_over_max_line_bytes_is_1009(self, d):
        request, reply = ping_of_length(MAX_LINE)
        ws = RawWS(d)
        ws.send_frame(TEXT, request)
        assert ws.reply() == reply
        over, _ = ping_of_length(MAX_LINE + 1)
        ws.send_frame(TEXT, over)
        ws.expect_close(1009)
        # In fragments, each small, whose total passes the limit.
        ws = RawWS(d)
        chunk = b"z" * 65536
        ws.send_frame(TEXT, b'{"op":"ping","ref":"', fin=False)
        for _ in range(4):
            ws.send_frame(CONTINUATION, chunk, fin=False)
        ws.send_frame(CONTINUATION, b'"}')
        ws.expect_close(1009)
        # A frame head announcing more than the limit: closed at once, not after the payload.
        for length in [MAX_LINE + 1, 1 << 40, (1 << 63) - 1]:
            ws = RawWS(d)
            ws.send(frame(TEXT, b"", length=length, length_bytes=8) + b"{")
            ws.expect_close(1009)
        with ws_connect(d) as client:
            client.send("x" * (MAX_LINE + 1))
            try:
                client.recv(timeout=5)
                raise AssertionError("an over-long message was answered")
            except ConnectionClosed:
                pass
            assert client.close_code == 1009, client.close_code

    def test_9_lengths_not_in_shortest_form_are_1002(self, d):
        cases = [("16-bit length of 10", dict(length_bytes=2), b'{"op":"ping"}'),
                 ("16-bit length of 125", dict(length_bytes=2), ping_of_length(125)[0].encode()),
                 ("64-bit length of 10", dict(length_bytes=8), b'{"op":"ping"}'),
                 ("64-bit length of 65535", dict(length_bytes=8), ping_of_length(65535)[0].encode())]
        failures = []
        for name, form, payload in cases:
            ws = RawWS(d)
            ws.send(frame(TEXT, payload, **form))
            try:
                ws.expect_close(1002)
            except AssertionError as error:
                failures.append(f"{name}: {error}")
        # The most significant bit of a 64-bit length must be 0.
        ws = RawWS(d)
        ws.send(bytes([0x81, 0xFF]) + (1 << 63 | 16).to_bytes(8, "big") + os.urandom(4) + b"x" * 16)
        try:
            ws.expect_close(1002)
        except AssertionError as error:
            failures.append(f"64-bit length with its top bit set: {error}")
        assert not failures, failures

    def test_9_unmasked_frames_are_1002(self, d):
        for data in [frame(TEXT, '{"op":"ping"}', masked=False), frame(PING, b"p", masked=False),
                     frame(CLOSE, close_payload(1000), masked=False), frame(TEXT, b"", masked=False)]:
            ws = RawWS(d)
            ws.send(data)
            ws.expect_close(1002)
        # After a good masked fragment, an unmasked continuation.
        ws = RawWS(d)
        ws.send(frame(TEXT, '{"op":"ping",', fin=False) + frame(CONTINUATION, '"ref":1}', masked=False))
        ws.expect_close(1002)

    def test_9_many_messages_in_order(self, d):
        # 2000 publishes over one WebSocket reach a subscriber on another, in order.
        with ws_connect(d) as subscriber, ws_connect(d) as publisher:
            assert ws_request(subscriber, {"op": "sub", "subject": "ws.order", "sid": "o"})["ok"]
            for n in range(2000):
                publisher.send(json.dumps({"op": "pub", "subject": "ws.order", "value": n}))
            assert ws_request(publisher, {"op": "ping"})["ok"]
            got = [json.loads(subscriber.recv(timeout=10))["value"] for _ in range(2000)]
            assert got == list(range(2000)), got[:10]

    # Groups 12 and 13: permessage-deflate (RFC 7692), message sizes and parameter combinations.

    def test_12_1_message_sizes_context_takeover(self, d):
        """16 B to 128 KiB, four of each, `permessage-deflate` with both windows kept: what the
        server sends refers back to its last message (a small one does not inflate alone)."""
        payloads = round_trip_sizes(d, "permessage-deflate", takeover=True)
        # The first is the sub's reply; then four of each size. Up to 4 KiB, the last message is
        # inside the server's window: the second to fourth of a size need it.
        for index, size in enumerate(AUTOBAHN_SIZES[:5]):
            for i in range(1, 4):
                assert not inflates_alone(payloads[1 + 4 * index + i]), (size, i)

    def test_12_2_message_sizes_no_context_takeover(self, d):
        """The same with `server_no_context_takeover; client_no_context_takeover`: every message of
        the server inflates alone (DeflateRawWS inflates each with a fresh window), every message of
        the publisher is compressed alone."""
        round_trip_sizes(d, "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                         takeover=False)

    def test_12_3_message_sizes_websockets(self, d):
        """websockets' default offer is taken; messages of the testsuite's sizes and at the frame
        lengths' edges go both ways compressed by its implementation, not ours."""
        with ws_connect(d) as client, ws_connect(d) as publisher:
            assert client.response.headers.get("Sec-WebSocket-Extensions") == "permessage-deflate"
            assert ws_request(client, {"op": "sub", "subject": "z12", "sid": "s"})["ok"]
            for size in [16, 125, 126, 65535, 65536, 200000] + AUTOBAHN_SIZES:
                value = sized_value(size, size % 10)
                publisher.send('{"op":"pub","subject":"z12","value":' + value + "}")
                assert client.recv(timeout=10) == '{"ev":"next","sid":"s","value":' + value + "}", size
            # Requests near the limit, compressed by the client, are still read whole.
            request, reply = ping_of_length(MAX_LINE)
            client.send(request)
            assert json.loads(client.recv(timeout=10)) == reply

    def test_12_4_fragmented_final_block_and_uncompressed_client_messages(self, d):
        """A client's compressed message in fragments (RSV1 on the first only) with a ping between
        them is read; so are messages ending in a final block (BFINAL, RFC 7692 7.2.3.3) and the
        messages after them, and an uncompressed message on a compressed WebSocket; pongs go out
        plain."""
        ws = DeflateRawWS(d)
        deflater = ClientDeflater()
        ws.send_frame(TEXT, deflater.message('{"op":"sub","subject":"r12","sid":"x","ref":1}'), rsv=4)
        assert ws.reply() == {"ok": True, "sid": "x", "ref": 1}
        for i in range(3):
            payload = deflater.message(json.dumps({"op": "pub", "subject": "r12", "value": metrics_value(i, 200)}))
            half = len(payload) // 2
            ws.send(frame(TEXT, payload[:half], fin=False, rsv=4) + frame(PING, b"p")
                    + frame(CONTINUATION, payload[half:]))
            assert ws.message() == (PONG, b"p")
            got = ws.reply()
            assert got == {"ev": "next", "sid": "x", "value": metrics_value(i, 200)}, got
        # Each a deflate stream of its own, ended by a final block; then one sync-flushed again.
        for ref in range(3):
            compressor = zlib.compressobj(wbits=-15)
            ws.send_frame(TEXT, compressor.compress(b'{"op":"ping","ref":%d}' % ref) + compressor.flush(), rsv=4)
            assert ws.reply() == {"ok": True, "ref": ref}
        ws.send_frame(TEXT, ClientDeflater().message('{"op":"ping","ref":8}'), rsv=4)
        assert ws.reply() == {"ok": True, "ref": 8}
        ws.send_frame(TEXT, '{"op":"ping","ref":9}')
        assert ws.reply() == {"ok": True, "ref": 9}
        assert all(ws.compressed), ws.compressed
        ws.send_frame(CLOSE, close_payload(1000))
        ws.expect_close(1000)

    def test_13_parameter_combinations(self, d):
        """Every combination of server_no_context_takeover, client_no_context_takeover,
        server_max_window_bits (none, 9, 15) and client_max_window_bits (none, no value, 9, 15):
        the answer names exactly the first three as offered (never client_max_window_bits); six
        messages in a row go both ways, the client compressing with its window and the server's read
        with the agreed one (a 9-bit inflater fails on a farther reference); with server takeover
        the server's messages refer back, without it each stands alone; with client takeover the
        client's messages that need their window are read, without it such a message is 1002."""
        sizes = [200, 230, 1500, 260, 3000, 290]
        for server_nct in (False, True):
            for client_nct in (False, True):
                for server_bits in (None, 9, 15):
                    for client_bits in (None, "", 9, 15):
                        offer, expected = ["permessage-deflate"], set()
                        if server_nct:
                            offer.append("server_no_context_takeover")
                            expected.add("server_no_context_takeover")
                        if client_nct:
                            offer.append("client_no_context_takeover")
                            expected.add("client_no_context_takeover")
                        if server_bits:
                            offer.append(f"server_max_window_bits={server_bits}")
                            expected.add(f"server_max_window_bits={server_bits}")
                        if client_bits is not None:
                            offer.append("client_max_window_bits" + (f"={client_bits}" if client_bits else ""))
                        offer = "; ".join(offer)
                        window = server_bits or 15
                        ws = DeflateRawWS(d, offer, fresh=server_nct, window_bits=window)
                        answer = ws.fields.get("sec-websocket-extensions", "")
                        assert extension_parameters(answer) == expected, (offer, answer)
                        assert ws.request({"op": "sub", "subject": "a13", "sid": "c"})["ok"]
                        deflater = ClientDeflater(client_bits or 15, takeover=not client_nct)
                        for i, size in enumerate(sizes):
                            value = sized_value(size, i)
                            payload = deflater.message('{"op":"pub","subject":"a13","value":' + value + "}")
                            assert inflates_alone(payload) == (client_nct or i == 0), (offer, i)
                            ws.send_frame(TEXT, payload, rsv=4)
                            opcode, text = ws.message()
                            assert text == '{"ev":"next","sid":"c","value":' + value + "}", (offer, i, text[:80])
                        # The reply to the sub, then the six: the second refers to the first unless
                        # the server compresses each alone.
                        assert inflates_alone(ws.payloads[2], window) == server_nct, offer
                        if client_nct:
                            # A message that needs the last one's window: the server reset its own.
                            sender = ClientDeflater(client_bits or 15)
                            ws.send_frame(TEXT, sender.message('{"op":"ping","ref":"a"}'), rsv=4)
                            assert ws.reply() == {"ok": True, "ref": "a"}
                            ws.send_frame(TEXT, sender.message('{"op":"ping","ref":"b"}'), rsv=4)
                            ws.expect_close(1002)
                        else:
                            ws.close()

    def test_13_shared_value_many_subscribers_no_context_takeover(self, d):
        """Subscribers with and without server_no_context_takeover on one subject, positions and
        patterns among them: every one gets every value, whole (the shared compressed value)."""
        clients = []
        for index in range(6):
            nct = index % 2 == 0
            factory = ClientPerMessageDeflateFactory(server_no_context_takeover=nct)
            client = ws_connect(d, extensions=[factory])
            subscription = {"op": "sub", "subject": "z13.s" if index < 4 else "z13.*", "sid": f"s{index}"}
            if index == 1 or index == 2:
                subscription["positions"] = True
            assert ws_request(client, subscription)["ok"]
            clients.append(client)
        raw = DeflateRawWS(d, "permessage-deflate; server_no_context_takeover", fresh=True)
        assert raw.request({"op": "sub", "subject": "z13.s", "sid": "raw"})["ok"]
        with ws_connect(d) as publisher:
            for i in range(20):
                value = metrics_value(i, 25 * i)
                publisher.send(json.dumps({"op": "pub", "subject": "z13.s", "value": value}))
                for index, client in enumerate(clients):
                    event = json.loads(client.recv(timeout=10))
                    assert event["sid"] == f"s{index}" and event["value"] == value, (index, i)
                assert raw.reply() == {"ev": "next", "sid": "raw", "value": value}
        assert all(raw.compressed), raw.compressed
        for client in clients:
            client.close()
        raw.close()

    def test_13_offers_declined_or_absent_get_plain_frames(self, d):
        """No offer, an offer with an unknown or invalid parameter, or one the server cannot keep to
        (server_max_window_bits=8): no Sec-WebSocket-Extensions, plain frames (RawWS refuses RSV1);
        the first acceptable of several offers is the one taken."""
        for offer in [None, "permessage-deflate; foo", "permessage-deflate; server_max_window_bits=8",
                      "permessage-deflate; client_max_window_bits=16", "permessage-deflate; server_no_context_takeover=1",
                      "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
                      "x-webkit-deflate-frame", "permessage-deflate; a=\"b"]:
            ws = RawWS(d, {"Sec-WebSocket-Extensions": offer} if offer else None)
            assert "sec-websocket-extensions" not in ws.fields, (offer, ws.fields)
            assert ws.request({"op": "ping"}) == {"ok": True, "ref": 1}
            # RSV1 on a connection without the extension is a protocol error.
            ws.send_frame(TEXT, deflated('{"op":"ping"}'), rsv=4)
            ws.expect_close(1002)
        ws = DeflateRawWS(d, "permessage-deflate; server_max_window_bits=8, "
                             "permessage-deflate; server_max_window_bits=10; client_max_window_bits")
        assert ws.fields["sec-websocket-extensions"] == "permessage-deflate; server_max_window_bits=10", ws.fields
        assert ws.request({"op": "ping"}) == {"ok": True, "ref": 1}
        ws.close()

    def test_13_rsv1_misplaced_and_corrupt_are_1002(self, d):
        """With the extension: RSV1 on a continuation or a control frame is 1002, and so is a
        compressed message that does not inflate; a compressed message that is not UTF-8 is 1007."""
        ws = DeflateRawWS(d)
        payload = deflated('{"op":"ping"}')
        ws.send(frame(TEXT, payload[:3], fin=False, rsv=4) + frame(CONTINUATION, payload[3:], rsv=4))
        ws.expect_close(1002)
        ws = DeflateRawWS(d)
        ws.send_frame(PING, b"p", rsv=4)
        ws.expect_close(1002)
        ws = DeflateRawWS(d)
        ws.send_frame(TEXT, b"\xff\xff\xff\xff\xff", rsv=4)
        ws.expect_close(1002)
        ws = DeflateRawWS(d)
        ws.send_frame(TEXT, deflated(b'{"op":"ping","ref":"\xc3"}'), rsv=4)
        ws.expect_close(1007)

    def test_13_decompression_bomb_is_1009_and_rss_bounded(self, d):
        """Compressed messages that inflate past max_line_bytes (by one byte; to 200 MiB from about
        200 KiB) close with 1009, and the server's RSS grows by less than 16 MiB meanwhile."""
        ws = DeflateRawWS(d)
        over, _ = ping_of_length(MAX_LINE + 1)
        ws.send_frame(TEXT, deflated(over), rsv=4)
        ws.expect_close(1009)
        ok, _ = ping_of_length(MAX_LINE)
        ws = DeflateRawWS(d)
        ws.send_frame(TEXT, deflated(ok), rsv=4)
        assert ws.reply()["ok"]
        ws.close()
        compressor = zlib.compressobj(level=9, wbits=-15)
        block = b" " * (1 << 20)
        bomb = b"".join(compressor.compress(block) for _ in range(200)) + compressor.flush(zlib.Z_SYNC_FLUSH)
        bomb = bomb[:-4]
        assert len(bomb) < MAX_LINE, len(bomb)
        before = d.rss_bytes()
        for _ in range(5):
            ws = DeflateRawWS(d)
            assert ws.request({"op": "ping"})["ok"]
            ws.send_frame(TEXT, bomb, rsv=4)
            ws.expect_close(1009)
        growth = d.rss_bytes() - before
        assert growth < 16 << 20, f"RSS grew by {growth >> 20} MiB"
        print(f"     200 MiB bomb in {len(bomb)} bytes, x5: RSS grew by {growth >> 10} KiB", flush=True)

    def test_events_reach_a_websocket(self, d):
        # A subscription over a WebSocket gets next events as text messages, one per line.
        with ws_connect(d) as client:
            assert ws_request(client, {"op": "sub", "subject": "ev.a", "sid": "s"}) == {"ok": True, "ref": 1,
                                                                                        "sid": "s"}
            tcp = LineClient(d.port)
            assert tcp.request({"op": "pub", "subject": "ev.a", "value": {"k": [1, "two"]}})["receivers"] == 1
            assert json.loads(client.recv(timeout=5)) == {"ev": "next", "sid": "s", "value": {"k": [1, "two"]}}
            assert tcp.request({"op": "complete", "subject": "ev.a"})["ok"]
            assert json.loads(client.recv(timeout=5)) == {"ev": "completed", "sid": "s"}
            tcp.close()
            # Errors keep the WebSocket open.
            client.send("{nope")
            assert json.loads(client.recv(timeout=5))["code"] == "bad_json"
            assert ws_request(client, {"op": "frobnicate"})["code"] == "unknown_op"
            assert ws_request(client, {"op": "ping"})["ok"]

    # Disposal.

    def test_disposal_on_close(self, d):
        def subscribe_three(send, receive):
            for sid, subject, ops in [("a", "disp.a", []), ("b", "disp.>", []),
                                      ("c", "disp.c", [{"op": "throttle", "seconds": 30}])]:
                send(json.dumps({"op": "sub", "subject": subject, "sid": sid, "ops": ops, "ref": sid}))
                assert json.loads(receive())["ok"], sid
            send(json.dumps({"op": "pub", "subject": "disp.c", "value": 1, "ref": "p"}))  # arms the throttle's timer
            while json.loads(receive()).get("ref") != "p":
                pass

        before = quiet_stats(d)
        ways = {}

        def clean():
            client = ws_connect(d)
            subscribe_three(client.send, lambda: client.recv(timeout=10))
            return client, lambda: client.close()

        def raw(how):
            ws = RawWS(d)
            subscribe_three(lambda text: ws.send_frame(TEXT, text), lambda: json.dumps(ws.reply()))
            if how == "fin":
                return ws, lambda: ws.drop()
            if how == "rst":
                return ws, lambda: ws.drop(reset=True)
            if how == "mid-frame":
                return ws, lambda: (ws.send(frame(TEXT, b"x" * 1000)[:500]), ws.drop())
            if how == "mid-message":
                return ws, lambda: (ws.send_frame(TEXT, b'{"op":', fin=False), ws.drop())
            if how == "close-frame":
                return ws, lambda: (ws.send_frame(CLOSE, close_payload(1000)), ws.expect_close(1000), ws.close())
            raise ValueError(how)

        ways["close handshake (websockets)"] = clean
        for how in ["fin", "rst", "mid-frame", "mid-message", "close-frame"]:
            ways[f"dropped: {how}"] = lambda how=how: raw(how)
        for name, open_one in ways.items():
            _, end = open_one()
            during = stats(d)
            assert during["connections"] == before["connections"] + 1, (name, before, during)
            assert during["subscriptions"] == before["subscriptions"] + 3, (name, before, during)
            assert during["timers"] >= before["timers"] + 1, (name, before, during)
            end()
            wait_for_stats(d, lambda s: (s["connections"], s["subscriptions"], s["timers"])
                           == (before["connections"], before["subscriptions"], before["timers"]),
                           f"{name}: not back to {before}")
        # The same figures over TCP's `stats` and a WebSocket's own.
        tcp = LineClient(d.port)
        reply = tcp.request({"op": "stats"})
        assert reply["subscriptions"] == before["subscriptions"], (reply, before)
        tcp.close()
        with ws_connect(d) as client:
            reply = ws_request(client, {"op": "stats"})
            assert reply["subscriptions"] == before["subscriptions"], (reply, before)
            assert reply["connections"] >= 1, reply

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(AUTH_CONFIG)
class TestAuth:
    """Authentication, against a daemon with a token; its `drop` slow-consumer policy."""

    def test_auth_wrong_token_401_before_upgrade(self, d):
        for fields, path in [({"Authorization": "Bearer wrong"}, "/ws"), ({}, "/ws?token=wrong"),
                             ({"Authorization": "Bearer wrong"}, "/ws?token=wrong")]:
            request = upgrade_request(d, fields=fields, path=path)
            got, headers, body = raw_answer(d, request)
            assert got == 401, (fields, path, got, body)
            assert json.loads(body)["code"] == "unauthorized", body
        # Another scheme carries no bearer token: refused, or let in unauthenticated, never authenticated.
        try:
            ws = RawWS(d, {"Authorization": "Basic " + base64.b64encode(b"user:" + TOKEN.encode()).decode()})
        except AssertionError as error:
            assert "401" in str(error), error
        else:
            assert ws.request({"op": "ping"})["code"] == "unauthorized"
            ws.close()
        try:
            ws_connect(d, additional_headers={"Authorization": "Bearer wrong"}).close()
            raise AssertionError("a wrong token was let in")
        except InvalidStatus as error:
            assert error.response.status_code == 401, error.response

    def test_auth_no_token_then_auth_message(self, d):
        with ws_connect(d) as client:
            for request in [{"op": "ping"}, {"op": "stats"}, {"op": "sub", "subject": "auth.x"},
                            {"op": "pub", "subject": "auth.x", "value": 1}]:
                reply = ws_request(client, request)
                assert reply["ok"] is False and reply["code"] == "unauthorized", (request, reply)
            assert ws_request(client, {"op": "auth", "token": "wrong"})["code"] == "unauthorized"
            assert ws_request(client, {"op": "auth", "token": TOKEN}) == {"ok": True, "ref": 1}
            assert ws_request(client, {"op": "ping"}) == {"ok": True, "ref": 1}
            assert ws_request(client, {"op": "sub", "subject": "auth.x", "sid": "x"})["ok"]

    def test_auth_right_token_works_at_once(self, d):
        with ws_connect(d, additional_headers=AUTH) as client:
            assert ws_request(client, {"op": "ping"}) == {"ok": True, "ref": 1}
        with ws_connect(d, uri=d.ws_url + "?token=" + TOKEN) as client:
            assert ws_request(client, {"op": "stats"})["ok"]
        ws = RawWS(d, path="/ws?token=" + TOKEN)
        assert ws.request({"op": "ping"})["ok"]
        ws.close()

    def test_slow_consumer_drop_reports_dropped(self, d):
        # Policy `drop`: a WebSocket that does not read loses events, and is told how many in a
        # `dropped` message before the next event that fits; it stays open.
        ws = RawWS(d, {"Authorization": f"Bearer {TOKEN}"}, rcvbuf=4096)
        assert ws.request({"op": "sub", "subject": "drop", "sid": "d"})["ok"]
        tcp = LineClient(d.port)
        assert tcp.request({"op": "auth", "token": TOKEN})["ok"]
        for n in range(1000):
            tcp.send({"op": "pub", "subject": "drop", "value": [n, "x" * 8000]})
        assert tcp.request({"op": "ping"})["ok"]
        wait_for_stats(d, lambda s: s["dropped"] > 0, "values dropped")
        ws.socket.settimeout(0.5)
        seen = []
        try:
            while True:  # what was queued before the drops
                seen.append(ws.reply())
        except socket.timeout:
            pass
        assert tcp.request({"op": "pub", "subject": "drop", "value": "end"})["ok"]
        ws.socket.settimeout(5)
        while not seen or seen[-1].get("value") != "end":
            seen.append(ws.reply())
        dropped = [line for line in seen if line.get("ev") == "dropped"]
        assert dropped and all(line["sid"] == "d" and line["count"] > 0 for line in dropped), seen[-3:]
        delivered = [line["value"][0] for line in seen if line.get("ev") == "next" and line["value"] != "end"]
        assert delivered == sorted(delivered), delivered[:20]
        assert len(delivered) + sum(line["count"] for line in dropped) == 1000, (len(delivered), dropped)
        assert ws.request({"op": "ping"})["ok"]
        ws.close()
        tcp.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon(HOSTILE_CONFIG)
class TestHostile:
    """Hostile clients and a slow consumer, then the survivors, against one daemon."""

    def test_slow_consumer_gets_closing_then_1008(self, d):
        ws = RawWS(d, rcvbuf=4096)
        assert ws.request({"op": "sub", "subject": "slow", "sid": "slow"}) == {"ok": True, "ref": 1, "sid": "slow"}
        tcp = LineClient(d.port)
        value = "v" * 4000
        count = 2000  # 8 MB for a client that reads nothing: far past max_pending_bytes and the buffers
        for n in range(count):
            tcp.send({"op": "pub", "subject": "slow", "value": [n, value]})
        assert tcp.request({"op": "ping"})["ok"]
        # The publisher was not held up or cut off; now read what the slow one was sent.
        texts = ws.expect_close(1008, timeout=10)
        assert texts, "no text message before the close"
        last = json.loads(texts[-1])
        assert last.get("ev") == "closing" and last.get("code") == "slow_consumer", texts[-1]
        values = [json.loads(text)["value"][0] for text in texts[:-1]]
        assert values == list(range(len(values))) and len(values) < count, (len(values), values[:5])
        assert tcp.request({"op": "ping"})["ok"]
        tcp.close()

    def test_hostile_10000_websockets_opened_and_dropped(self, d):
        raise_open_files()
        before = quiet_stats(d)
        started = time.monotonic()
        opened = 0
        subscribe = frame(TEXT, '{"op":"sub","subject":"churn","sid":"c"}')
        while opened < CHURN:
            batch = []
            for _ in range(min(BATCH, CHURN - opened)):
                sock = socket.create_connection(("127.0.0.1", d.http_port), timeout=10)
                sock.sendall(upgrade_request(d))
                batch.append(sock)
            for index, sock in enumerate(batch):
                status, _, body, _ = read_head(sock)
                assert status == 101, (opened + index, status, body)
                if index % 2:
                    sock.sendall(subscribe)  # half hold a subscription when dropped
                if index % 3 == 0:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            for sock in batch:
                sock.close()
            opened += len(batch)
            d.alive()
        elapsed = time.monotonic() - started
        after = wait_for_stats(d, lambda s: (s["connections"], s["subscriptions"])
                               == (before["connections"], before["subscriptions"]),
                               f"not back to {before}", seconds=15)
        assert after["subjects"] <= before["subjects"] + 1, (before, after)
        print(f"     {CHURN} WebSockets in {elapsed:.1f}s; RSS {d.rss_bytes() >> 20} MiB", flush=True)

    def test_hostile_garbage_after_handshake(self, d):
        seed = int(os.environ.get("WS_GARBAGE_SEED", random.randrange(1 << 30)))
        rng = random.Random(seed)
        allowed = {1002, 1003, 1007, 1008, 1009}
        problems = []
        outcomes = {}
        sockets = []
        for index in range(300):
            ws = RawWS(d)
            # Whether the garbage opens with a well-formed close (after well-formed pings or
            # pongs): the server then echoes it, code or none, as RFC 6455 says.
            closes_cleanly = False
            if index % 3 == 0:
                data = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 4096)))
            else:
                # Frames with the mask bit set and random opcodes, bits, lengths and payloads.
                data = b""
                leading = True
                for _ in range(rng.randrange(1, 20)):
                    n = rng.choice([0, 1, 5, 125, 126, 127, 1000, 70000])
                    first = rng.getrandbits(8)
                    length_bytes = rng.choice([0, 2, 8]) if n < 126 else (2 if n < 65536 else 8)
                    key = bytes(rng.getrandbits(8) for _ in range(4))
                    if length_bytes == 0:
                        head = bytes([first, 0x80 | n])
                    elif length_bytes == 2:
                        head = bytes([first, 0x80 | 126]) + n.to_bytes(2, "big")
                    else:
                        head = bytes([first, 0x80 | 127]) + n.to_bytes(8, "big")
                    data += head + key + mask(bytes(rng.getrandbits(8) for _ in range(n)), key)
                    if leading and length_bytes == 0 and first in (0x89, 0x8A):
                        continue
                    if leading and length_bytes == 0 and first == 0x88 and n != 1:
                        closes_cleanly = True
                    leading = False
            ws.send(data)
            sockets.append((index, ws, data, closes_cleanly))
        deadline = time.monotonic() + 10
        for index, ws, data, closes_cleanly in sockets:
            ws.socket.settimeout(max(0.05, min(2, deadline - time.monotonic())))
            try:
                while True:
                    opcode, payload = ws.message()
                    if opcode == CLOSE:
                        code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                        if code not in allowed and not closes_cleanly:
                            problems.append(f"#{index}: close code {code}")
                        outcomes[code] = outcomes.get(code, 0) + 1
                        break
            except EOFError:
                outcomes["closed without close frame"] = outcomes.get("closed without close frame", 0) + 1
            except socket.timeout:
                outcomes["still open"] = outcomes.get("still open", 0) + 1  # waiting for the rest of a frame
            except ProtocolViolation as error:
                problems.append(f"#{index}: {error}; sent {data[:40].hex()}")
            except (json.JSONDecodeError, AssertionError) as error:
                problems.append(f"#{index}: {error!r}")
            ws.drop()
        d.alive()
        assert not problems, f"seed {seed}: " + "; ".join(problems[:5])
        quiet_stats(d)
        print(f"     seed {seed} (WS_GARBAGE_SEED): {outcomes}", flush=True)

    def test_hostile_a_websocket_that_never_reads(self, d):
        # It subscribes and is sent to, never reads, and stays open while others are served.
        ws = RawWS(d, rcvbuf=4096)
        assert ws.request({"op": "sub", "subject": "after.flood", "sid": "f"})["ok"]
        tcp = LineClient(d.port)
        for n in range(500):
            tcp.send({"op": "pub", "subject": "after.flood", "value": "w" * 2000})
        assert tcp.request({"op": "ping"})["ok"]
        with ws_connect(d) as client:
            assert ws_request(client, {"op": "ping"})["ok"]
        d.alive()
        ws.drop(reset=True)
        tcp.close()

    def test_hostile_survivors_served_without_loss(self, d):
        d.alive()
        before = quiet_stats(d)
        n = 1000
        client = ws_connect(d)
        assert ws_request(client, {"op": "sub", "subject": "after", "sid": "w"})["ok"]
        tcp = LineClient(d.port)
        assert tcp.request({"op": "sub", "subject": "after", "sid": "t"})["ok"]
        http = httpx.Client(timeout=10)
        with http.stream("GET", d.url + "/events", params={"subject": "after"}) as response:
            assert response.status_code == 200, response
            wait_for_stats(d, lambda s: s["subscriptions"] == before["subscriptions"] + 3, "three subscriptions")
            publisher = LineClient(d.port)
            for value in range(n):
                publisher.send({"op": "pub", "subject": "after", "value": value})
            assert publisher.request({"op": "ping"})["ok"]
            ws_values = [json.loads(client.recv(timeout=10))["value"] for _ in range(n)]
            tcp_values = [tcp.next_value() for _ in range(n)]
            sse_values = []
            for line in response.iter_lines():
                if line.startswith("data:"):
                    sse_values.append(json.loads(line[5:]))
                    if len(sse_values) == n:
                        break
            assert ws_values == list(range(n)), ws_values[:10]
            assert tcp_values == list(range(n)), tcp_values[:10]
            assert sse_values == list(range(n)), sse_values[:10]
            publisher.close()
        http.close()
        client.close()
        tcp.close()

    def test_hostile_rss_bound(self, d):
        d.alive()
        rss = d.rss_bytes()
        assert rss < RSS_BOUND, f"VmRSS {rss >> 20} MiB over {RSS_BOUND >> 20} MiB"
        print(f"     VmRSS {rss >> 20} MiB (bound {RSS_BOUND >> 20} MiB)", flush=True)

    def test_clean_stop(self, d):
        assert_clean_stop(d)


@pytest.mark.daemon("compression = false\n")
class TestUncompressed:
    """`compression = false`."""

    def test_13_compression_off(self, d):
        """`compression = false`: websockets' offer is declined and frames are plain."""
        with ws_connect(d) as client:
            assert client.response.headers.get("Sec-WebSocket-Extensions") is None, client.response.headers
            assert ws_request(client, {"op": "ping"}) == {"ok": True, "ref": 1}
        ws = RawWS(d, {"Sec-WebSocket-Extensions": "permessage-deflate"})
        assert "sec-websocket-extensions" not in ws.fields, ws.fields
        assert ws.request({"op": "ping"}) == {"ok": True, "ref": 1}
        ws.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
