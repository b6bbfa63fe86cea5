"""The tool's own RSA key pair: made once, kept root-only (mode 0600), its public half published as a key set.

The LMS checks the tool's signed token requests (AGS, NRPS) with this key
set; it is served at ``lti/jwks.json`` under the service's prefix. The private
key never leaves the file: a key file readable by others is refused, naming
the fix, rather than used.

Example::

    >>> import tempfile, os, stat
    >>> folder = tempfile.mkdtemp()
    >>> key = load_or_create(os.path.join(folder, "tool-key.pem"))
    >>> stat.S_IMODE(os.stat(key.path).st_mode) == 0o600, key.kid == load_or_create(key.path).kid
    (True, True)
    >>> sorted(key.jwks()["keys"][0])
    ['alg', 'e', 'kid', 'kty', 'n', 'use']
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from dataclasses import dataclass
from pathlib import Path

KEY_FILE = "lti-tool-key.pem"  # in the service's data folder unless the LTI file names one
KEY_BITS = 2048


class KeyFileError(RuntimeError):
    """The key file is unusable (readable by others, or not a private key): the message says what to do."""


@dataclass(frozen=True)
class ToolKey:
    """The private key (PEM) and its public JWK, with the RFC 7638 thumbprint as ``kid``."""

    path: str
    private_pem: str
    public_jwk: dict

    @property
    def kid(self) -> str:
        return self.public_jwk["kid"]

    def jwks(self) -> dict:
        """The public key set the LMS fetches: ``{"keys": [jwk]}`` (no private part)."""
        return {"keys": [dict(self.public_jwk)]}

    def public_pem(self) -> str:
        from cryptography.hazmat.primitives import serialization

        private = serialization.load_pem_private_key(self.private_pem.encode(), password=None)
        return (
            private.public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def public_jwk(private_pem: str) -> dict:
    """The public JWK of a PEM private key, ``kid`` its RFC 7638 thumbprint (the same key, the same kid)."""
    from cryptography.hazmat.primitives import serialization

    private = serialization.load_pem_private_key(private_pem.encode(), password=None)
    numbers = private.public_key().public_numbers()
    core = {"e": _b64(numbers.e), "kty": "RSA", "n": _b64(numbers.n)}
    thumb = hashlib.sha256(json.dumps(core, separators=(",", ":"), sort_keys=True).encode()).digest()
    kid = base64.urlsafe_b64encode(thumb).rstrip(b"=").decode("ascii")
    return {**core, "alg": "RS256", "use": "sig", "kid": kid}


def load_or_create(path: str | Path) -> ToolKey:
    """The key pair in ``path``, made there first if absent (created 0600 in one step: never readable by others)."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    path = Path(path)
    if not path.exists():
        private = rsa.generate_private_key(public_exponent=65537, key_size=KEY_BITS)
        pem = private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        try:  # O_EXCL: two starts at once cannot both write a key; the mode is set at creation, not after
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass
        else:
            with os.fdopen(fd, "wb") as f:
                f.write(pem)
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o077:
        raise KeyFileError(
            f"{path}: the tool's private key is readable by others (mode {mode:04o}); "
            f"run chmod 600 {path}, or delete it and register the new key set with the LMS"
        )
    text = path.read_text(encoding="ascii")
    try:
        jwk = public_jwk(text)
    except (ValueError, TypeError) as exc:
        raise KeyFileError(f"{path}: not a PEM private key ({exc})") from None
    return ToolKey(str(path), text, jwk)
