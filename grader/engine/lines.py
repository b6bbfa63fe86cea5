"""The fork server's lines: reading the step child's, writing the engine client's.

The step child writes one JSON message per line on its result pipe; the fork
server parses each (it checks type, nonce, order and what a step claims), and
sends each finished step to the engine client as one ``result`` line. Two
shortcuts keep that cheap without trusting the step child more: a ``run``
line in exactly the form the step child writes is read without JSON
(:func:`plain_run`), and a message goes into the result line as the very
line it came on, unless it was changed since (:class:`Received`).

Example::

    >>> plain_run(b'{"type": "run", "tool": "stock_lookup", "nonce": "n1"}', "n1")
    {'type': 'run', 'nonce': 'n1', 'tool': 'stock_lookup'}
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from grader.engine.protocol import RUN, StepResult
from grader.engine.wire import JsonDict

# How the step child writes a ``run`` line (grader.engine.child.run_steps), up to the tool's name.
_RUN_HEAD = b'{"type": "run", "tool": "'
_PLAIN_TOOL = re.compile(rb"[A-Za-z0-9_.-]{1,100}")


def plain_run(line: bytes, nonce: str) -> JsonDict | None:
    """A ``run`` line exactly as the step child writes it for a plain tool name, read without JSON; else None.

    A third of a step's lines are these (one per tool-body run). Any other
    form, a wrong nonce included, is left to the JSON parser and the checks.

    >>> plain_run(b'{"type": "run", "tool": "a\\"b", "nonce": "n1"}', "n1") is None
    True
    >>> plain_run(b'{"type": "run", "tool": "stock_lookup", "nonce": "n2"}', "n1") is None
    True
    """
    tail = f'", "nonce": "{nonce}"}}'.encode()
    if not (line.startswith(_RUN_HEAD) and line.endswith(tail)):
        return None
    tool = line[len(_RUN_HEAD) : -len(tail)]
    if not _PLAIN_TOOL.fullmatch(tool):
        return None
    return {"type": RUN, "nonce": nonce, "tool": tool.decode("ascii")}


class Received(dict[str, Any]):
    """A message as parsed, with the line it came on while that line still says exactly it.

    A step's result carries its messages to the engine client: their lines
    are copied into the result line instead of being encoded again (that
    encoding was an eighth of the fork server's time). A line is kept only
    when it is ASCII, as the step child writes them, so the result line
    stays one encoding; whoever changes the message calls :func:`forget_line`.

    >>> message = Received({"type": "done"}, b'{"type":"done"}'); forget_line(message); message.line is None
    True
    """

    __slots__ = ("line",)

    def __init__(self, message: JsonDict, line: bytes):
        super().__init__(message)
        self.line = line if line.isascii() else None


def forget_line(message: Mapping[str, object]) -> None:
    """(``message`` is about to change.) Encode it anew when it is sent on."""
    if isinstance(message, Received):
        message.line = None


def result_line(request_id: object, index: int, result: StepResult) -> bytes:
    """``{"type": "result", "request": ..., "index": ..., "result": result.to_json()}`` as one line of bytes.

    >>> line = result_line(3, 0, StepResult(messages=(Received({"type": "done"}, b'{"type":"done"}'),)))
    >>> json.loads(line)["result"]["messages"]
    [{'type': 'done'}]
    """
    wire = result.to_json()
    messages = wire.pop("messages", [])
    head = json.dumps({"type": "result", "request": request_id, "index": index, "result": wire}, ensure_ascii=True)
    # ``result`` is the outer object's last key: its messages go in before the two closing braces.
    lines = [getattr(m, "line", None) or json.dumps(m, ensure_ascii=True).encode("ascii") for m in messages]
    return head[:-2].encode("ascii") + b', "messages": [' + b", ".join(lines) + b"]}}\n"


def write_line(fd: int, message: JsonDict) -> None:
    """Write ``message`` as one line of ASCII JSON on ``fd``, all of it."""
    write_bytes(fd, json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")


def write_bytes(fd: int, line: bytes) -> None:
    """Write all of ``line`` on ``fd`` (a pipe may take it in pieces)."""
    data = memoryview(line)
    while data:
        data = data[os.write(fd, data) :]
