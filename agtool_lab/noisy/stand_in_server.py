"""A stand-in OpenAI-compatible chat-completions server on loopback, answering like the seeded model.

It speaks the protocol a real endpoint speaks (``POST /v1/chat/completions``
with ``messages`` and ``tools``; an answer with ``choices[0].message`` holding
``tool_calls`` or ``content``, and ``usage``), so the capstone's endpoint path
(:class:`agtool_lab.noisy.endpoint.Endpoint`, over ``httpx``) runs end to end
without a network. Its answers come from :class:`agtool_lab.noisy.chat.SeededChat`
on the conversation it is sent: the user's sentence picks the task, the
request's ``seed`` the trial, and the last tool message (the learner's
``explain`` message and suggestion) steers a retry.

``fault`` makes it misbehave the ways real endpoints do, one way at a time:

==============  ==============================================================
``timeout``     holds the request open until the server stops
``rate_limit``  answers ``429`` with ``Retry-After: <retry_after>``; with
                ``fault_count`` only to the first that many requests
``malformed``   a tool call whose ``arguments`` are not JSON
``prose``       a sentence instead of a tool call
==============  ==============================================================

Usage tokens are counted as words (a stand-in, not a tokenizer).

Example::

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import Endpoint
    >>> tasks = draw_tasks(load_module("solutions/tools.py"), 2)
    >>> with StandInServer(tasks, error_rate=0.0) as server:
    ...     reply = Endpoint(server.url, "stand-in").complete(
    ...         [{"role": "user", "content": tasks[0].text}], [], seed=0)
    >>> reply.call.name, reply.tokens > 0
    ('stock_lookup', True)
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from agtool_lab.noisy.chat import SeededChat, Task, ToolCall

__all__ = ["FAULTS", "StandInServer"]

FAULTS = ("timeout", "rate_limit", "malformed", "prose")


def _words(value) -> int:
    return len(json.dumps(value, default=str).split())


class StandInServer:
    """The server, on ``127.0.0.1`` and a free port, in a thread; ``url`` ends in ``/v1``.

    ``requests`` holds every request body it was sent (a test reads what the model was shown).
    """

    def __init__(
        self,
        tasks: Sequence[Task],
        *,
        error_rate: float = 0.09,
        fault: str | None = None,
        fault_count: int | None = None,
        retry_after: str = "1",
        model: str = "agtool-stand-in",
    ) -> None:
        if fault is not None and fault not in FAULTS:
            raise ValueError(f"fault must be one of {FAULTS}, got {fault!r}")
        self.chat = SeededChat(tasks, error_rate=error_rate)
        self.fault, self.fault_count, self.retry_after, self.model = fault, fault_count, retry_after, model
        self.requests: list[dict] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="stand-in-model", daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> StandInServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()  # releases requests held open by the timeout fault
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def _faulty(self) -> str | None:
        with self._lock:
            number = len(self.requests)
        if self.fault is None or (self.fault_count is not None and number > self.fault_count):
            return None
        return self.fault

    def answer(self, body: dict) -> tuple[int, dict, dict]:
        """``(status, headers, json body)`` for one request body."""
        with self._lock:
            self.requests.append(body)
        fault = self._faulty()
        if fault == "rate_limit":
            return 429, {"Retry-After": self.retry_after}, {"error": {"message": "rate limited", "type": "rate_limit"}}
        if fault == "timeout":
            self._stopping.wait(60)
            return 503, {}, {"error": {"message": "stopped"}}
        messages = body.get("messages")
        if not isinstance(messages, list) or not isinstance(body.get("model"), str):
            return 400, {}, {"error": {"message": "model and messages are required", "type": "invalid_request"}}
        seed = body.get("seed") if isinstance(body.get("seed"), int) else 0
        answer = self.chat.reply(messages, body.get("tools") or [], seed=seed)
        if fault == "prose" or isinstance(answer, str):
            text = answer if isinstance(answer, str) else "There are plenty of those in stock, I think."
            message: dict = {"role": "assistant", "content": text}
            finish = "stop"
        else:
            assert isinstance(answer, ToolCall)
            arguments = json.dumps(answer.arguments)
            if fault == "malformed":
                arguments = arguments[:-1].replace('"', "'")  # single quotes and no closing brace
            call = {
                "id": f"call_{len(self.requests)}",
                "type": "function",
                "function": {"name": answer.name, "arguments": arguments},
            }
            message = {"role": "assistant", "content": None, "tool_calls": [call]}
            finish = "tool_calls"
        prompt, completion = _words(messages) + _words(body.get("tools") or []), _words(message)
        return (
            200,
            {},
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "model": self.model,
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {
                    "prompt_tokens": prompt,
                    "completion_tokens": completion,
                    "total_tokens": prompt + completion,
                },
            },
        )

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body leave in one write, at once: without these a kept-alive connection waits out
            # the client's delayed ACK (about 40 ms) on every answer.
            disable_nagle_algorithm = True
            wbufsize = 1 << 16

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {}, {"error": {"message": f"no route {self.path}"}})
                    return
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {}, {"error": {"message": "the body is not JSON"}})
                    return
                status, headers, payload = server.answer(body if isinstance(body, dict) else {})
                self._send(status, headers, payload)

            def _send(self, status: int, headers: dict, payload: dict) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:  # the client gave up (its time-out): nothing to answer
                    pass

            def log_message(self, format, *args) -> None:  # quiet: tests and notebooks read their own output
                pass

        return Handler
