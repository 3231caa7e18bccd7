"""Strings in published values (docs/protocol.md, "Error codes"): every kind of byte a string's scan
must stop at, at the places where its steps begin and end, over real sockets.

An optimised runneld scans a string sixteen bytes at a time, then sixty-four, then sixteen and
eight again near the end of the line; a debug build eight at a time. The verdicts must not
depend on where a byte falls: `.ci/run` runs this suite against the release build as well as
the debug one.

    python3 -m pytest Tests/blackbox/test_strings.py [--runneld PATH]
"""

import json

import pytest

from runneld_process import LineClient, assert_clean_stop

# What may stand at a place in a string's content: its bytes, and whether the value is JSON
# (else the `bad_json` error the place earns).
PIECES = [
    (b"\x00", "unescaped control character"),
    (b"\x1f", "unescaped control character"),
    (b"\\q", "invalid escape"),
    (b"\xc3", "invalid UTF-8"),  # a lead byte without its continuation ("b" follows)
    (b"\xff", "invalid UTF-8"),
    (b"\x80", "invalid UTF-8"),
    (b"\\n", None),
    (b'\\"', None),
    (b"\\u00e9", None),
    ("é".encode(), None),
    ("€".encode(), None),
    ("😀".encode(), None),
    (b"\x7f", None),
]

# Each `pub` line up to its value's content, and where that content starts.
PUB_PREFIX = b'{"op":"pub","subject":"strings","value":"'
CONTENT_AT = len(PUB_PREFIX)


def places(length):
    """The places tried in a string of `length` plain bytes: each end, the middle, and the
    edges of the sixteen- and sixty-four-byte steps."""
    edges = {0, 1, 7, 8, 9, 15, 16, 17, 79, 80, 81, 143, 144, 145, length // 2, length - 1, length}
    return sorted(place for place in edges if 0 <= place <= length)


@pytest.mark.daemon("")
class TestStrings:
    def test_every_byte_that_needs_attention_gets_its_verdict_wherever_it_falls(self, d):
        subscriber = LineClient(d.port)
        assert subscriber.request({"op": "sub", "subject": "strings", "sid": "s"})["ok"]
        publisher = LineClient(d.port, no_delay=True)
        for length in range(0, 200):
            lines, expected = [], []
            for place in places(length):
                for piece, error in PIECES:
                    content = b"a" * place + piece + b"b" * (length - place)
                    ref = len(lines)
                    lines.append(PUB_PREFIX + content + b'","ref":%d}\n' % ref)
                    expected.append((content, error, place))
            publisher.socket.sendall(b"".join(lines))
            for ref, (content, error, place) in enumerate(expected):
                # Replies come in request order; a line that is not JSON has no `ref` to echo.
                reply = publisher.line()
                if error is None:
                    assert (reply.get("ok"), reply.get("ref")) == (True, ref), (length, place, content, reply)
                    assert subscriber.next_value() == json.loads(b'"' + content + b'"'), (length, place)
                else:
                    message = f"invalid JSON: {error} in string at byte {CONTENT_AT + place}"
                    assert (reply.get("ok"), reply.get("code"), reply.get("message")) == (False, "bad_json", message), (
                        length, place, content, reply)
        subscriber.close()
        publisher.close()

    def test_clean_stop(self, d):
        assert_clean_stop(d)
