"""Learner ids: safe as file names on every system, unique and stable between runs.

The batch gives each submission an id (a folder's or file's name); the class
outputs name files after it and the LMS roster is matched on it, so the rules
live here, below both.

Ids keep Unicode letters (NFC), are unique and stable: when two entries
would get the same id, each one that is not a folder named exactly that id
gets a suffix derived from its own name (never from its position), so a
learner's feedback file does not change hands between runs.

Example::

    >>> sanitize_learner_id("bob smith"), sanitize_learner_id("김민준")
    ('bob_smith', '김민준')
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

from grader.limits import LEARNER_ID_BYTES

ID_MAX_BYTES = LEARNER_ID_BYTES  # UTF-8 bytes (grader.limits says why)


def sanitize_learner_id(raw: str) -> str:
    """A learner id that is safe as a file name on every system: letters and digits of any script, ``._-``.

    NFC first, so the same name typed on macOS (NFD) and elsewhere is one id.

    >>> sanitize_learner_id("Ana María/../x y"), sanitize_learner_id("Jose\u0301")
    ('Ana_María_.._x_y', 'José')
    """
    text = unicodedata.normalize("NFC", str(raw))
    # \w is Unicode letters, digits and "_"; everything else (separators, controls, shell and
    # Markdown punctuation) becomes "_".
    cleaned = re.sub(r"[^\w.-]", "_", text).lstrip(".") or "learner"
    encoded = cleaned.encode("utf-8")[:ID_MAX_BYTES]
    return encoded.decode("utf-8", "ignore")


def _suffix(key: str) -> str:
    return hashlib.sha256(unicodedata.normalize("NFC", key).encode("utf-8", "surrogateescape")).hexdigest()[:8]


def unique_ids(raw_ids: list[str], keys: list[str] | None = None) -> list[str]:
    """Sanitised ids, unique and independent of order: colliding entries get a suffix from their ``keys``.

    ``keys`` name the entries (a folder's or a file's name, a matched path);
    the entry whose key is exactly its id (a folder named ``ana``) keeps the
    plain id. Ids that differ only in case collide too (macOS, Windows).

    >>> unique_ids(["a b", "a_b"], ["a b", "a_b"])
    ['a_b-c8687a08', 'a_b']
    >>> unique_ids(["a_b", "a b"], ["a_b", "a b"])
    ['a_b', 'a_b-c8687a08']
    """
    keys = list(raw_ids) if keys is None else list(keys)
    base = [sanitize_learner_id(raw) for raw in raw_ids]
    groups: dict[str, list[int]] = {}
    for index, name in enumerate(base):
        groups.setdefault(name.casefold(), []).append(index)
    result = list(base)
    for members in groups.values():
        if len(members) == 1:
            continue
        plain = [i for i in members if keys[i] == base[i]]  # exactly, not once normalised: one winner at most
        for i in members:
            if not (len(plain) == 1 and i == plain[0]):
                result[i] = f"{base[i]}-{_suffix(keys[i])}"
    # Two keys with the same suffix is a hash collision of 32 bits: numbered, deterministically by key.
    seen: dict[str, int] = {}
    for i in sorted(range(len(result)), key=lambda i: keys[i]):
        folded = result[i].casefold()
        if folded in seen:
            seen[folded] += 1
            result[i] = f"{result[i]}-{seen[folded]}"
        else:
            seen[folded] = 1
    return result
