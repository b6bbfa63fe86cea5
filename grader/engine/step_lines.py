"""Reading and checking what a step child writes on its result pipe: one class, :class:`StepLines`.

The step child writes one JSON message per line (the kinds of
:mod:`grader.engine.protocol`). The fork server trusts none of it: every
line is size-capped, parsed (never unpickled), nonce-checked and refused if
it breaks the order ``imported``, ``obs`` 0..n-1, ``done`` (or a lone
``import_error``/``fatal``). A refused line becomes a *channel error* of the
step, never a message. The body-run trace (``run`` lines) is counted here,
and an observation that claims fewer tool runs than were traced is replaced
by a ``trace_mismatch`` probe error.

:class:`StepLines` holds the messages of the step child's current step;
:class:`grader.engine.step_process.StepProcess` (the step child's life cycle)
builds on it and is told, through two hooks, when the import is over and when
a probe is over (its deadlines follow them).

Example (only the bookkeeping, no process)::

    >>> lines = StepLines()
    >>> lines.begin_lines("n1", n_probes=0)
    >>> lines.accept(b'{"type": "imported", "nonce": "n1"}')
    >>> lines.accept(b'{"type": "obs", "index": 0, "obs": {}, "nonce": "n1"}')
    >>> [m["type"] for m in lines.messages], lines.channel_errors
    (['imported'], ['an observation of unknown shape was refused'])
"""

from __future__ import annotations

import errno
import json
import os
import time
from collections.abc import Callable
from typing import cast

from grader.engine.lines import Received, forget_line, plain_run
from grader.engine.protocol import (
    CHANGED,
    DONE,
    FINAL_TYPES,
    FRAGMENT_TAG_BYTES,
    IMPORTED,
    MAX_MESSAGE_BYTES,
    MAX_OPEN_FRAGMENTS,
    MAX_TOTAL_MESSAGE_BYTES,
    MESSAGE_TYPES,
    OBS,
    RUN,
    TRACE_MISMATCH,
    Message,
    claimed_runs,
)
from grader.engine.wire import JsonDict

MAX_CHANNEL_ERRORS = 20  # a step's channel errors kept (the first ones say what went wrong)
MAX_TRACED_TOOLS = 64  # distinct tool names counted from ``run`` lines


class StepLines:
    """The result lines of a step child's current step: read, checked, kept as messages.

    Reads return the number of bytes read: 0 = nothing right now, -1 = stop reading.
    """

    # Set by begin_lines() (here for objects the tests build without it).
    imported_at: float | None = None
    step_over = False
    _resumed = False
    _results_over = False  # the result pipe ended or was refused: read no more
    _result_fd = -1

    def begin_lines(self, nonce: str, n_probes: int) -> None:
        """Start keeping the messages of a new step (its ``nonce``, its number of probes)."""
        self.nonce, self.n_probes = nonce, n_probes
        self.messages: list[Message] = []
        self.channel_errors: list[str] = []
        self._pending = bytearray()
        self._fragments: dict[bytes, bytearray] = {}  # tag -> the message's pieces so far
        self._total = 0
        # The step child's messages come in one order: imported, obs 0..n-1,
        # done (or a lone import_error / fatal). Anything else is refused.
        self._last_type = ""
        self._next_index = 0
        # The body-run trace since the last observation, counted here: the
        # step child's own counts can be wound back by the module, these cannot.
        self._runs: dict[str, int] = {}
        self.imported_at = None
        self.step_over = self._resumed = False
        self.resume_at = 0  # a fresh probe changed the step child: probes from here go to a new one

    def carry_lines(self, messages: tuple[Message, ...], channel_errors: tuple[str, ...], next_index: int) -> None:
        """Go on from the messages an earlier step child sent of this step (it resumes at ``next_index``)."""
        self.messages = list(messages)
        self.channel_errors = list(channel_errors)
        self._next_index = next_index
        self._resumed = True

    # -- hooks of the step child's life cycle (StepProcess): deadlines follow the messages

    def _import_over(self, said: bool) -> None:
        """The import is over (``said``: the step child said ``imported``; else refused bytes came first)."""

    def _probe_over(self) -> None:
        """An observation arrived: the next probe begins."""

    def _more_steps(self) -> bool:
        """Whether the step child was given further steps after this one (a ``done`` then ends only the step)."""
        return False

    # -- reading

    def read_results(self) -> None:
        """Read what the step child wrote on its result pipe so far (a bounded amount)."""
        if not self._results_over:
            drain(self._read_result)

    def _read_result(self) -> int:
        data = read_some(self._result_fd)
        if not data:
            if data is not None:
                self._results_over = True
            return 0 if data is None else -1
        self._total += len(data)
        if self._total > MAX_TOTAL_MESSAGE_BYTES:
            return self._refuse_channel(f"the step sent more than {MAX_TOTAL_MESSAGE_BYTES} bytes of results")
        self._pending += data
        while (cut := self._pending.find(b"\n")) >= 0:
            line = bytes(self._pending[:cut])
            del self._pending[: cut + 1]
            self.accept(line)
        if len(self._pending) > MAX_MESSAGE_BYTES:
            self._pending.clear()
            return self._refuse_channel(f"a result message longer than {MAX_MESSAGE_BYTES} bytes was refused")
        return len(data)

    def _refuse_channel(self, text: str) -> int:
        """Stop reading a result pipe that broke a size cap; the step's processes are killed."""
        self._channel_error(text)
        self._kill_group()
        self._results_over = True
        return -1

    def _kill_group(self) -> None:
        """Kill the step's processes (StepProcess does; nothing to kill without a process)."""

    def accept_pending(self) -> None:
        """(The step child ended.) Take a last line it wrote without its newline."""
        if self._pending:
            self.accept(bytes(self._pending))

    def accept(self, line: bytes) -> None:
        """Take one line: refused (a channel error), counted (``run``) or kept as a message."""
        if line[:1] == b"~":
            return self._fragment(line)
        if len(line) > MAX_MESSAGE_BYTES:
            return self._channel_error(f"a result message longer than {MAX_MESSAGE_BYTES} bytes was refused")
        message = plain_run(line, self.nonce)
        if message is None:
            try:
                message = json.loads(line)
            except ValueError:
                return self._channel_error("a result line that is not JSON was refused")
            if type(message) is dict:
                message = Received(message, line)
        problem = self._shape_problem(message)
        if problem:
            return self._channel_error(problem)
        if message["type"] == RUN:  # counted, not kept: the observation carries the counts
            tool = str(message.get("tool", ""))[:100]
            if len(self._runs) < MAX_TRACED_TOOLS or tool in self._runs:
                self._runs[tool] = self._runs.get(tool, 0) + 1
            return None
        self._last_type = message["type"]
        if message["type"] == CHANGED:
            self.resume_at = message["next"]
            return None
        if message["type"] == IMPORTED:
            self.imported_at = time.monotonic()
            self._import_over(True)
            if self._resumed:  # the step said so once already
                return None
        if message["type"] == DONE and self._more_steps():
            self._more = message.get("more") is True
            self.step_over = True  # the scheduler ends the step and begins the next (end_step)
        if message["type"] == OBS:
            self._next_index += 1
            self._check_trace(message)
            self._probe_over()
        self.messages.append(cast(Message, message))  # its shape checked above (_shape_problem)

    def _check_trace(self, message: JsonDict) -> None:
        """Replace an observation that accounts for fewer tool runs than the trace showed."""
        runs, self._runs = self._runs, {}
        claimed = claimed_runs(message["obs"])
        hidden = {tool: n for tool, n in runs.items() if n > claimed.get(tool, 0)}
        if hidden:
            said = ", ".join(
                f"{tool} {n} time(s), the step's own counts say {claimed.get(tool, 0)}"
                for tool, n in sorted(hidden.items())
            )
            forget_line(message)
            message["obs"] = {
                "probe_error": TRACE_MISMATCH,
                "message": f"the tool body ran {said}: the module wound back the grader's counts",
            }

    def _shape_problem(self, message: object) -> str:
        if not isinstance(message, dict) or message.get("type") not in MESSAGE_TYPES:
            return "a result message of unknown shape was refused"
        if message.get("nonce") != self.nonce:
            return "a result message with a wrong nonce was refused (forged?)"
        kind = message["type"]
        if self._last_type in FINAL_TYPES:
            return f"a {kind!r} message after the step had ended was refused"
        if kind == RUN:
            return "" if self._last_type in (IMPORTED, OBS) else "a 'run' message before the import was refused"
        if kind == OBS:
            index = message.get("index")
            if type(index) is not int or not 0 <= index < self.n_probes or not isinstance(message.get("obs"), dict):
                return "an observation of unknown shape was refused"
            if index != self._next_index or self._last_type not in (IMPORTED, OBS):
                return f"an observation for probe {index} out of order was refused"
        elif kind == IMPORTED and self._last_type:
            return "a second 'imported' message was refused"
        elif kind == CHANGED and (
            self._last_type != OBS or message.get("next") != self._next_index or self._next_index >= self.n_probes
        ):
            return "a 'changed' message out of place was refused"
        elif kind == DONE and (self._next_index != self.n_probes or self._last_type not in (IMPORTED, OBS)):
            return "a 'done' message before every observation was refused"
        elif kind == DONE and type(message.get("more", False)) is not bool:
            return "a 'done' message of unknown shape was refused"
        return ""

    def _fragment(self, line: bytes) -> None:
        """One fragment line of a long message (protocol's FRAGMENT_LINE_BYTES): kept, or the message whole.

        >>> lines = StepLines(); lines.begin_lines("n", 1)
        >>> lines._fragment(b"~" + b"a" * 12 + b"+" + b'{"type": ')
        >>> lines._fragment(b"~" + b"b" * 12 + b"." + b"junk")  # another writer's: refused alone
        >>> lines._fragment(b"~" + b"a" * 12 + b"." + b'"imported", "nonce": "n"}')
        >>> [m["type"] for m in lines.messages], lines.channel_errors
        (['imported'], ['a result line that is not JSON was refused'])
        """
        fragments = self.__dict__.setdefault("_fragments", {})
        tag, mark, piece = (
            line[1 : 1 + FRAGMENT_TAG_BYTES],
            line[1 + FRAGMENT_TAG_BYTES : 2 + FRAGMENT_TAG_BYTES],
            line[2 + FRAGMENT_TAG_BYTES :],
        )
        if len(tag) != FRAGMENT_TAG_BYTES or mark not in (b"+", b"."):
            return self._channel_error("a result fragment of unknown shape was refused")
        held = fragments.pop(tag, bytearray())
        held += piece
        if len(held) > MAX_MESSAGE_BYTES:
            return self._channel_error(f"a result message longer than {MAX_MESSAGE_BYTES} bytes was refused")
        if mark == b".":
            if held[:1] == b"~":  # a fragment of fragments: never unwrapped again
                return self._channel_error("a result fragment of unknown shape was refused")
            return self.accept(bytes(held))
        if len(fragments) >= MAX_OPEN_FRAGMENTS:  # begun by junk and never ended: the oldest goes
            fragments.pop(next(iter(fragments)))
            self._channel_error("a result message that never ended was refused")
        fragments[tag] = held
        return None

    def _channel_error(self, text: str) -> None:
        if self.imported_at is None:
            # Refused bytes before "imported": the module wrote on the result
            # pipe, maybe over our own "imported" line. Its import is then
            # over; from here its probes' bounds apply (the scheduler lets it
            # start, else it would wait for a start byte that never comes).
            self.imported_at = time.monotonic()
            self._import_over(False)
        if len(self.channel_errors) < MAX_CHANNEL_ERRORS:
            self.channel_errors.append(text)


def drain(reader: Callable[[], int]) -> None:
    """Call ``reader`` until it has nothing more (at most 64 times: a writer outside the group could go on forever)."""
    for _ in range(64):
        if reader() <= 0:
            break


def read_some(fd: int, size: int = 65536) -> bytes | None:
    """Up to ``size`` bytes from the non-blocking ``fd``: ``None`` if nothing now, ``b""`` at its end.

    >>> r, w = os.pipe(); os.set_blocking(r, False)
    >>> read_some(r) is None, os.write(w, b"x"), read_some(r)
    (True, 1, b'x')
    >>> os.close(w); read_some(r); os.close(r)
    b''
    """
    try:
        return os.read(fd, size)
    except BlockingIOError:
        return None
    except OSError as exc:
        if exc.errno == errno.EINTR:
            return None
        return b""
