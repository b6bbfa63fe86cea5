"""The capstone's model in ``pick``: the seeded stand-in, or any OpenAI-compatible chat-completions endpoint.

Off by default. Three lab settings (:mod:`grader.settings`) point the
capstone at a real model: ``AGTOOL_MODEL_URL`` (the API's base URL, ending in
``/v1`` for vLLM, llama.cpp's server, Ollama or a hosted API),
``AGTOOL_MODEL_NAME`` and ``AGTOOL_MODEL_KEY`` (a bearer token, or empty).
:func:`backend_from_settings` gives an :class:`Endpoint` when the URL is
set and ``None`` otherwise, and the notebook then uses the seeded stand-in
(:class:`SeededBackend`), which needs nothing.

The tools offered to the model are built from the learner's own ``TOOLS``
contracts (:func:`tool_schemas`): types, required arguments, ``allowed`` as
an enum, ``min``/``max`` as bounds, nothing else accepted. Every way a call
can fail on the way is a :class:`Reply` with a ``failure`` (``timeout``,
``rate_limited``, ``endpoint_error``), never an exception: the layers table
gives it a row.

Example::

    >>> from agtool_lab.load import load_module
    >>> schema = tool_schemas(load_module("solutions/tools.py"))[0]["function"]
    >>> schema["name"], schema["parameters"]["properties"]["region"]["enum"][0]
    ('stock_lookup', 'north')
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType

from agtool_lab.noisy.chat import SeededChat, ToolCall

__all__ = [
    "Endpoint",
    "Reply",
    "SeededBackend",
    "backend_from_settings",
    "tool_schemas",
]

_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", list: "array", dict: "object"}


def _parameter(rule: Mapping) -> dict:
    schema: dict = {}
    kind = rule.get("type")
    if kind in _JSON_TYPES:
        schema["type"] = _JSON_TYPES[kind]
    allowed = rule.get("allowed")
    if allowed is not None:
        # A set has no order of its own: sorted, the same schema goes out on every run.
        values = sorted(allowed, key=repr) if isinstance(allowed, (set, frozenset)) else list(allowed)
        schema["enum"] = [value for value in values if isinstance(value, (str, int, float, bool))]
    for bound, key in (("min", "minimum"), ("max", "maximum")):
        if isinstance(rule.get(bound), (int, float)) and not isinstance(rule.get(bound), bool):
            schema[key] = rule[bound]
    return schema


def tool_schemas(module: ModuleType, *, by_product: bool = False) -> list[dict]:
    """The OpenAI ``tools`` list for the module's ``TOOLS``, read from its contracts.

    With ``by_product`` the ``sku`` argument is offered as ``product``: the
    product as the person named it, which the harness resolves with the
    learner's ``resolve_sku`` (a reference the model can honestly give).

    >>> from agtool_lab.load import load_module
    >>> tools = load_module("solutions/tools.py")
    >>> sorted(tool_schemas(tools, by_product=True)[0]["function"]["parameters"]["properties"])
    ['limit', 'product', 'region']
    """
    schemas = []
    for name, entry in module.TOOLS.items():
        contract = entry["args"]
        properties = {arg: _parameter(rule) for arg, rule in contract.items()}
        required = [arg for arg, rule in contract.items() if rule.get("required")]
        if by_product and "sku" in properties:
            properties = {
                ("product" if arg == "sku" else arg): (
                    {"type": "string", "description": "the product as the person named it: its name or its sku"}
                    if arg == "sku"
                    else schema
                )
                for arg, schema in properties.items()
            }
            required = ["product" if arg == "sku" else arg for arg in required]
        doc = (getattr(entry.get("fn"), "__doc__", None) or "").strip()
        schemas.append(
            {
                "type": "function",
                "function": {
                    "name": str(name),
                    "description": doc.splitlines()[0] if doc else f"The tool {name}.",
                    "parameters": {
                        "type": "object",
                        "properties": properties,
                        "required": required,
                        "additionalProperties": False,
                    },
                },
            }
        )
    return schemas


@dataclass(frozen=True)
class Reply:
    """One answer of the model: a tool call, prose, or a failure on the way (``failure`` names it)."""

    call: ToolCall | None = None
    text: str = ""
    failure: str = ""
    detail: str = ""
    call_id: str = "call_0"
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def tokens(self) -> int | None:
        """Prompt plus completion tokens, when the endpoint reported them.

        >>> Reply(prompt_tokens=120, completion_tokens=30).tokens, Reply().tokens
        (150, None)
        """
        if self.prompt_tokens is None and self.completion_tokens is None:
            return None
        return (self.prompt_tokens or 0) + (self.completion_tokens or 0)


def _call_of(message: Mapping) -> tuple[ToolCall | None, str]:
    calls = message.get("tool_calls") or []
    if not calls:
        return None, ""
    first = calls[0] if isinstance(calls[0], Mapping) else {}
    function = first.get("function") or {}
    raw = function.get("arguments")
    if isinstance(raw, Mapping):  # some servers send an object, not a JSON string
        args: dict | None = dict(raw)
        raw = json.dumps(raw)
    else:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else None
        except ValueError:
            parsed = None
        args = parsed if isinstance(parsed, dict) else None
    return ToolCall(str(function.get("name") or ""), args, str(raw)), str(first.get("id") or "call_0")


class SeededBackend:
    """The seeded stand-in, in process: the default model of the capstone (no network, no key).

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> tasks = draw_tasks(load_module("solutions/tools.py"), 2)
    >>> SeededBackend(tasks, error_rate=0.0).complete([{"role": "user", "content": tasks[0].text}], [],
    ...                                               seed=0).call.name
    'stock_lookup'
    """

    name = "seeded stand-in"

    def __init__(self, tasks, *, error_rate: float = 0.09) -> None:
        self.chat = SeededChat(tasks, error_rate=error_rate)

    def complete(self, messages: Sequence[Mapping], tools: Sequence[Mapping], *, seed: int) -> Reply:
        answer = self.chat.reply(messages, tools, seed=seed)
        if isinstance(answer, str):
            return Reply(text=answer)
        return Reply(call=answer)

    def close(self) -> None:
        pass


def _retry_after(value: str | None, default: float) -> float:
    """Seconds a ``Retry-After`` header asks for: a number, or an HTTP date."""
    if not value:
        return default
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return default
    return max(0.0, when.timestamp() - time.time())


class Endpoint:
    """An OpenAI-compatible chat-completions API with tool calling, through ``httpx``.

    ``timeout`` bounds each request; a ``429`` is retried after its
    ``Retry-After`` (at most ``max_wait`` seconds, at most ``max_retries``
    times); anything else that goes wrong comes back as a :class:`Reply`
    with a ``failure``, never as an exception. After ``give_up_after``
    failures in a row it stops asking (each further call fails at once, of
    the same kind), so a dead endpoint costs a few time-outs, not one per
    task. ``sleep`` is how it waits (a test passes one that records).

    >>> Endpoint("http://127.0.0.1:9/v1", "m").complete([], [], seed=0).failure
    'endpoint_error'
    """

    def __init__(
        self,
        url: str,
        model: str,
        key: str = "",
        *,
        timeout: float = 60.0,
        max_retries: int = 2,
        max_wait: float = 30.0,
        temperature: float | None = 0.7,
        give_up_after: int = 5,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        import httpx

        self.url, self.model = url.rstrip("/"), model
        self.name = f"{model} at {self.url}"
        self.max_retries, self.max_wait, self.temperature, self.sleep = max_retries, max_wait, temperature, sleep
        self.waits: list[float] = []
        self.give_up_after, self.failures_in_a_row, self._last_failure = give_up_after, 0, Reply()
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        self._httpx = httpx
        self._client = httpx.Client(base_url=self.url + "/", headers=headers, timeout=timeout)

    def complete(self, messages: Sequence[Mapping], tools: Sequence[Mapping], *, seed: int) -> Reply:
        last = self._last_failure
        if self.give_up_after > 0 and self.failures_in_a_row >= self.give_up_after:
            detail = f"not asked: the endpoint failed {self.failures_in_a_row} times in a row (last: {last.detail})"
            return Reply(failure=last.failure, detail=detail)
        reply = self._ask(messages, tools, seed=seed)
        self.failures_in_a_row = self.failures_in_a_row + 1 if reply.failure else 0
        self._last_failure = reply if reply.failure else last
        return reply

    def _ask(self, messages: Sequence[Mapping], tools: Sequence[Mapping], *, seed: int) -> Reply:
        body: dict = {"model": self.model, "messages": list(messages), "seed": seed}
        if tools:
            body |= {"tools": list(tools), "tool_choice": "auto"}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        httpx = self._httpx
        for attempt in range(self.max_retries + 1):
            try:
                response = self._client.post("chat/completions", json=body)
            except httpx.TimeoutException as exc:
                return Reply(failure="timeout", detail=f"no answer within the time-out ({type(exc).__name__})")
            except httpx.HTTPError as exc:
                return Reply(failure="endpoint_error", detail=f"{type(exc).__name__}: {exc}")
            if response.status_code == 429:
                wait = min(_retry_after(response.headers.get("retry-after"), 1.0), self.max_wait)
                if attempt == self.max_retries:
                    return Reply(
                        failure="rate_limited",
                        detail=f"429 on {attempt + 1} tries (last Retry-After: {wait:g} s)",
                    )
                self.waits.append(wait)
                self.sleep(wait)
                continue
            if response.status_code != 200:
                return Reply(failure="endpoint_error", detail=f"HTTP {response.status_code}: {response.text[:200]}")
            return self._read(response)
        raise AssertionError("unreachable")  # the loop returns on its last try

    @staticmethod
    def _read(response) -> Reply:
        try:
            data = response.json()
            message = data["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            return Reply(failure="endpoint_error", detail=f"not a chat completion: {response.text[:200]}")
        usage = data.get("usage") if isinstance(data, Mapping) else None
        usage = usage if isinstance(usage, Mapping) else {}
        tokens = {
            key: value if isinstance(value, int) else None
            for key, value in (
                ("prompt_tokens", usage.get("prompt_tokens")),
                ("completion_tokens", usage.get("completion_tokens")),
            )
        }
        call, call_id = _call_of(message if isinstance(message, Mapping) else {})
        if call is None:
            return Reply(text=str((message or {}).get("content") or ""), **tokens)
        return Reply(call=call, call_id=call_id, **tokens)

    def close(self) -> None:
        self._client.close()


def backend_from_settings(settings=None, **options) -> Endpoint | None:
    """The endpoint the lab settings name (``AGTOOL_MODEL_URL`` and friends), or ``None`` when none is set.

    >>> from grader.settings import Settings
    >>> backend_from_settings(Settings()) is None
    True
    >>> backend_from_settings(Settings(model_url="http://127.0.0.1:8000/v1", model_name="m")).model
    'm'
    """
    from grader.settings import current

    settings = settings if settings is not None else current()
    if not settings.model_url.strip():
        return None
    return Endpoint(settings.model_url.strip(), settings.model_name.strip(), settings.model_key, **options)
