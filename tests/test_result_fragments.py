"""Long result messages cross the pipe as fragments no other writer can split (the forked_writer case).

A step child's copy that the module forked keeps the result pipe and can write
at any moment; a write of more than PIPE_BUF bytes is not atomic, so a long
message written in one piece could be cut by the copy's lines and lost. The
step child writes such a message as fragment lines of at most PIPE_BUF bytes
(grader.engine.protocol.FRAGMENT_LINE_BYTES), each in one write, and the reader
puts them together whatever comes between.
"""

from __future__ import annotations

import json
import random

from grader.engine.child import _ResultChannel
from grader.engine.protocol import FRAGMENT_LINE_BYTES, MAX_OPEN_FRAGMENTS
from grader.engine.step_lines import StepLines

JUNK = b'{"type": "obs", "index": 0, "obs": {"forged": true}}'


def _written(message: dict) -> list[bytes]:
    writes: list[bytes] = []
    channel = _ResultChannel(99, None, json.dumps, lambda fd, data: writes.append(bytes(data)) or len(data))
    channel.begin("nonce-1")
    channel.send(message)
    return writes


def test_a_long_message_goes_in_writes_of_at_most_pipe_buf_and_a_short_one_in_one():
    short = _written({"type": "imported"})
    assert len(short) == 1 and short[0].endswith(b"\n") and short[0][:1] == b"{"
    long = _written({"type": "obs", "index": 0, "obs": "x" * 50_000})
    assert len(long) > 10 and all(len(w) <= FRAGMENT_LINE_BYTES and w.endswith(b"\n") for w in long)
    assert {w[:13] for w in long} == {long[0][:13]} and long[-1][13:14] == b"." and long[0][13:14] == b"+"


def test_junk_between_the_fragments_is_refused_alone_and_the_message_arrives():
    rng = random.Random(7)
    writes = [*_written({"type": "imported"}), *_written({"type": "obs", "index": 0, "obs": {"value": "y" * 30_000}})]
    stream = b""
    for write in writes:
        # The kernel keeps a write of at most PIPE_BUF bytes whole; a longer one may be cut anywhere by
        # another writer's lines. Those lines come between writes too.
        while len(write) > FRAGMENT_LINE_BYTES:
            cut = rng.randrange(1, FRAGMENT_LINE_BYTES)
            stream, write = stream + write[:cut] + JUNK + b"\n", write[cut:]
        stream += write + (JUNK + b"\n" if rng.random() < 0.5 else b"") + (b"~zz\n" if rng.random() < 0.2 else b"")
    lines = StepLines()
    lines.begin_lines("nonce-1", 1)
    for line in stream.split(b"\n")[:-1]:
        lines.accept(line)
    kept = [m for m in lines.messages if m.get("nonce") == "nonce-1"]
    assert [m["type"] for m in kept] == ["imported", "obs"] and kept[1]["obs"] == {"value": "y" * 30_000}
    assert lines.channel_errors  # the junk was seen and refused, not taken


def test_fragments_that_never_end_are_bounded_and_a_fragment_of_fragments_is_refused():
    lines = StepLines()
    lines.begin_lines("n", 1)
    for tag in range(MAX_OPEN_FRAGMENTS * 3):
        lines.accept(b"~" + f"{tag:012x}".encode() + b"+" + b"z" * 100)
    assert len(lines._fragments) <= MAX_OPEN_FRAGMENTS
    assert "a result message that never ended was refused" in lines.channel_errors
    lines.accept(b"~" + b"a" * 12 + b"." + b"~" + b"b" * 12 + b"." + b"{}")
    assert lines.channel_errors[-1] == "a result fragment of unknown shape was refused"
