"""Who is calling, asked of the hub without blocking the service: a short, bounded cache of token answers.

JupyterHub's ``HubAuth.get_user`` blocks the caller until the hub answers,
and its own cache keeps every token it was ever shown for five minutes. The
service instead awaits the hub (the event loop serves others meanwhile) and
keeps each answer — a user, or "no such token" — for ``ttl`` seconds, at
most ``size`` answers, keyed by the token's SHA-256 (the token itself is
never kept). Concurrent requests with the same unknown token share one
round trip to the hub.

Example::

    >>> import asyncio
    >>> calls = []
    >>> async def ask(token):
    ...     calls.append(token)
    ...     return {"name": "ana"} if token == "good" else None
    >>> cache = TokenCache(ttl=30, size=2)
    >>> async def twice():
    ...     return [await cache.user(t, ask) for t in ("good", "good", "bad", "bad")]
    >>> asyncio.run(twice()), calls
    ([{'name': 'ana'}, {'name': 'ana'}, None, None], ['good', 'bad'])
"""

from __future__ import annotations

import asyncio
import hashlib
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable

from grader.limits import TOKEN_TTL  # seconds a hub answer is trusted (grader.limits says why)

TOKEN_CACHE_SIZE = 4096  # answers kept; the oldest go first (a flood of random tokens cannot grow it)


def token_key(token: str) -> str:
    """The cache's key of a token: its SHA-256, so a memory dump shows no token.

    >>> token_key("abc")[:12]
    'ba7816bf8f01'
    """
    return hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()


class TokenCache:
    """Hub answers about tokens: ``ttl`` seconds each, at most ``size``, one hub round trip per token at a time."""

    def __init__(
        self, ttl: float = TOKEN_TTL, size: int = TOKEN_CACHE_SIZE, clock: Callable[[], float] = time.monotonic
    ):
        self.ttl, self.size, self.clock = ttl, max(1, size), clock
        self._answers: OrderedDict[str, tuple[float, dict | None]] = OrderedDict()
        self._asking: dict[str, asyncio.Future] = {}

    def __len__(self) -> int:
        return len(self._answers)

    def cached(self, token: str) -> tuple[bool, dict | None]:
        """``(True, answer)`` when a fresh answer is kept for ``token``, else ``(False, None)``."""
        key = token_key(token)
        kept = self._answers.get(key)
        if kept is None or kept[0] < self.clock():
            self._answers.pop(key, None)
            return False, None
        return True, kept[1]

    def keep(self, token: str, answer: dict | None) -> None:
        key = token_key(token)
        self._answers.pop(key, None)
        self._answers[key] = (self.clock() + self.ttl, answer)
        while len(self._answers) > self.size:
            self._answers.popitem(last=False)

    async def user(self, token: str, ask: Callable[[str], Awaitable[dict | None]]) -> dict | None:
        """The user model of ``token`` (None: the hub knows no such token), asking ``ask(token)`` only on a miss."""
        found, answer = self.cached(token)
        if found:
            return answer
        key = token_key(token)
        if key in self._asking:  # the same token is being asked about now: wait for that answer
            return await asyncio.shield(self._asking[key])
        future = asyncio.get_running_loop().create_future()
        self._asking[key] = future
        try:
            answer = await ask(token)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: a failed lookup no one else waited for is not logged twice
            raise
        finally:
            del self._asking[key]
        self.keep(token, answer)
        future.set_result(answer)
        return answer
