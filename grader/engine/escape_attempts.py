"""The escape attempts of the fork server's start-up self-test, run as a submission would be.

Never imported by the grader: :mod:`grader.engine.selftest` reads this file's
bytes and sends them as the *source* of an ordinary step job, so each
function below runs as learner code, under exactly the walls a learner's
step child has. Each one tries one way out and returns (the way is open) or
raises (it was refused). Where a refusal must be told from an error of
another kind (a syscall the kernel ran and answered), the function raises
only for the refusal's own errno and returns otherwise.

Learner code can neither import nor read this file: it lies in the grader's
package, which the import wall and the audit hook refuse (and
:func:`own_file` checks exactly that).

Example (in an ordinary process every door is open)::

    >>> code_object()
    'a code object was rebuilt with code.replace'
"""

import ctypes
import errno
import importlib
import socket

_REFUSED_ERRNOS = (errno.EPERM, errno.ENOSYS)  # what the syscall filter answers


def code_object() -> str:
    """Rebuild a code object (``code.replace``): the audit hook refuses it in a step."""
    (lambda: None).__code__.replace(co_name="rebuilt")
    return "a code object was rebuilt with code.replace"


def grader_import(name: str) -> str:
    """Import one of the grader's modules by a spelling other than ``import``: the import wall refuses it."""
    importlib.import_module(name)
    return f"{name} was imported"


def read_file(path: str) -> str:
    """Open ``path`` for reading: refused (or absent) when it is outside what a step may read."""
    with open(path, "rb") as fh:
        fh.read(1)
    return f"{path} was read"


def own_file(path: str) -> str:
    """Open this very file (``path``): the grader's files are not the submission's to read."""
    return read_file(path)


def read_memory(pid: int) -> str:
    """Open the memory of process ``pid`` (the fork server, which holds a grading's hidden cases): not the step's to read."""
    with open(f"/proc/{pid}/mem", "rb"):
        return f"the memory of process {pid} was opened"


def write_file(path: str) -> str:
    """Create ``path``, outside the step's scratch folder: read-only mounts or the grading account refuse it."""
    with open(path, "xb") as fh:
        fh.write(b"x")
    return f"{path} was written"


def connect(port: int) -> str:
    """Connect to the fork server's listener on the loopback: a step's own network namespace has no way there."""
    with socket.create_connection(("127.0.0.1", port), timeout=2.0):
        return f"a connection to 127.0.0.1:{port} was made"


def keyring(number: int) -> str:
    """Ask the kernel for the session keyring's id (``keyctl`` syscall ``number``): the syscall filter refuses keyrings."""
    libc = ctypes.CDLL(None, use_errno=True)
    keyctl_get_keyring_id, key_spec_session_keyring = 0, -3
    if libc.syscall(number, keyctl_get_keyring_id, key_spec_session_keyring, 0) == -1:
        code = ctypes.get_errno()
        if code in _REFUSED_ERRNOS:
            raise OSError(code, f"keyctl refused ({errno.errorcode.get(code, code)})")
        return f"keyctl reached the kernel (it answered {errno.errorcode.get(code, code)})"
    return "keyctl reached the kernel"


def namespace_clone(flag: int) -> str:
    """Make a user namespace (``unshare(flag)``): the syscall filter refuses every namespace a step could make."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(flag) == -1:
        code = ctypes.get_errno()
        if code in _REFUSED_ERRNOS:
            raise OSError(code, f"unshare refused ({errno.errorcode.get(code, code)})")
        return f"unshare reached the kernel (it answered {errno.errorcode.get(code, code)})"
    return "a new user namespace was made"
