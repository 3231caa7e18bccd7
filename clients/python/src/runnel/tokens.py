"""Where a client's token comes from: a string, the same for every connection, or a function
(plain or async) called for every connection, so that a program can hand out short-lived tokens
its app mints (JWTs). A function's token that is a JWT with `exp` is replaced before it expires:
the client calls the function again and sends the new token as `auth` on the live connection
(docs/protocol.md, "JWTs minted by web apps")."""

from __future__ import annotations

import base64
import binascii
import inspect
import json
from collections.abc import Awaitable, Callable
from typing import Union

TokenGetter = Callable[[], Union[str, Awaitable[str]]]
Token = Union[str, TokenGetter, None]

# Of the time a token has left when the client gets it, the part after which it is refreshed.
REFRESH_AT = 0.8


class TokenSource:
    """A client's token: `current()` for a new connection; `refreshes` when it comes from a
    function, whose JWTs the client refreshes before they expire."""

    def __init__(self, token: Token) -> None:
        self._token = token

    @property
    def refreshes(self) -> bool:
        return callable(self._token)

    async def current(self) -> str | None:
        if not callable(self._token):
            return self._token
        token = self._token()
        if inspect.isawaitable(token):
            token = await token
        return str(token)

    def replace(self, token: str) -> None:
        """A token given to `Client.authenticate`: the next connections send it (a function stays)."""
        if not callable(self._token):
            self._token = token


def refresh_delay(token: str, now: float) -> float | None:
    """Seconds from `now` until `token` is refreshed: `REFRESH_AT` of the time it has left; None
    when it is not a JWT with a numeric `exp`."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        payload = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    expiry = payload.get("exp") if isinstance(payload, dict) else None
    if not isinstance(expiry, (int, float)) or isinstance(expiry, bool):
        return None
    return max(0.0, (expiry - now) * REFRESH_AT)
