"""The LMS's key set as the hub checks launches with it: cached, fetched in a thread, refetched at a bounded rate.

``ltiauthenticator`` fetches the key set (``jwt.PyJWKClient``) on the hub's
event loop, with no cache, for every callback POST: anyone who can reach the
hub, without an account, makes it wait for the LMS once per POST, and every
login, spawn and proxied request waits behind it. :class:`KeySet` keeps the
keys by ``kid``; a launch signed with a known key costs no request at all. A
``kid`` it does not know (the LMS rotated its key, or a forged token) makes
it fetch again, in a worker thread, at most once every ``refetch_seconds``
(one fetch at a time, shared by every launch waiting for it); the keys are
also refreshed when older than ``max_age`` seconds, so a key the LMS
withdrew stops verifying launches.

Example::

    >>> import asyncio, jwt
    >>> from cryptography.hazmat.primitives.asymmetric import rsa
    >>> private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    >>> jwk = {**json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key())), "kid": "k1"}
    >>> fetched = []
    >>> keys = KeySet("https://lms.example.edu/jwks", fetch=lambda url: fetched.append(url) or {"keys": [jwk]})
    >>> token = jwt.encode({"sub": "1"}, private, algorithm="RS256", headers={"kid": "k1"})
    >>> key = asyncio.run(keys.key_for(token))
    >>> jwt.decode(token, key.key, algorithms=["RS256"]), len(fetched)
    ({'sub': '1'}, 1)
    >>> other = jwt.encode({"sub": "1"}, private, algorithm="RS256", headers={"kid": "unknown"})
    >>> asyncio.run(keys.key_for(other)) is None, len(fetched)  # a second fetch only after refetch_seconds
    (True, 1)
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable

from grader.limits import LTI_KEY_SET_CONNECT_TIMEOUT, LTI_KEY_SET_MAX_AGE, LTI_KEY_SET_READ_TIMEOUT

log = logging.getLogger("agtool.lti.keyset")
REFETCH_SECONDS = 30.0  # an unknown kid refetches at most this often: a burst of forged launches costs one fetch
MAX_AGE = (
    LTI_KEY_SET_MAX_AGE  # keys older than this are fetched again at the next launch (a withdrawn key stops working)
)
FETCH_TIMEOUT = (
    LTI_KEY_SET_CONNECT_TIMEOUT,
    LTI_KEY_SET_READ_TIMEOUT,
)  # a silent LMS holds one worker thread, never the event loop


def fetch_json(url: str) -> dict:
    """GET ``url`` and return its JSON (a worker thread runs this, never the event loop)."""
    import requests

    answer = requests.get(url, timeout=FETCH_TIMEOUT, headers={"Accept": "application/json"})
    answer.raise_for_status()
    return answer.json()


class KeySet:
    """The keys of the key set at ``url`` by ``kid``; :meth:`key_for` is the one entry point."""

    def __init__(
        self,
        url: str,
        *,
        refetch_seconds: float = REFETCH_SECONDS,
        max_age: float = MAX_AGE,
        fetch: Callable[[str], dict] = fetch_json,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.url, self.refetch_seconds, self.max_age = url, refetch_seconds, max_age
        self._fetch, self._clock = fetch, clock
        self._keys: dict[str | None, object] = {}
        self._fetched_at: float | None = None  # when the keys were fetched (None: never)
        self._tried_at: float | None = None  # when a fetch was last started, answered or not
        self._running: asyncio.Future | None = None
        self.fetches = 0

    def _may_fetch(self) -> bool:
        return self._tried_at is None or self._clock() - self._tried_at >= self.refetch_seconds

    async def key_for(self, token: str):
        """The ``jwt.PyJWK`` that should have signed ``token`` (by its header's ``kid``), or None: no such key.

        A malformed token raises ``jwt.DecodeError`` without any fetch.
        """
        import jwt

        kid = jwt.get_unverified_header(token).get("kid")
        stale = self._fetched_at is not None and self._clock() - self._fetched_at > self.max_age
        if self._find(kid) is None or stale:
            if self._may_fetch():
                await self._refresh()
            elif self._running is not None:  # a fetch under way (another launch's): its answer may have the kid
                await asyncio.shield(self._running)
        return self._find(kid)

    def _find(self, kid):
        if kid is None and len(self._keys) == 1:  # a key set of one key may sign without a kid
            return next(iter(self._keys.values()))
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        if self._running is None:
            self._tried_at = self._clock()
            self.fetches += 1
            self._running = asyncio.ensure_future(asyncio.get_running_loop().run_in_executor(None, self._load))
            self._running.add_done_callback(lambda _future: setattr(self, "_running", None))
        await asyncio.shield(self._running)

    def _load(self) -> None:
        """Fetch and parse the key set (in a worker thread); a failure keeps the keys already known."""
        import jwt

        try:
            data = self._fetch(self.url)
            keys = {}
            for item in data.get("keys", []) if isinstance(data, dict) else []:
                try:
                    keys[item.get("kid")] = jwt.PyJWK.from_dict(item)
                except (jwt.PyJWKError, jwt.InvalidKeyError, TypeError, ValueError):
                    continue  # a key of another type or use: not one that signs launches
        except Exception as exc:  # the LMS down or answering garbage: launches with known keys still work
            log.warning("LTI: the LMS's key set at %s could not be fetched: %s", self.url, exc)
            return
        if keys:
            self._keys, self._fetched_at = keys, self._clock()
        else:
            log.warning("LTI: the LMS's key set at %s has no usable key: %s", self.url, json.dumps(data)[:200])
