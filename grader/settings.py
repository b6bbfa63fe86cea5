"""Every setting of agtool-lab read from the environment, declared once: name, type, default, variable, help.

This is the only module that reads ``os.environ`` for a setting (the engine
also builds a step child's environment from scratch, which is not a
setting). Entry points (the ``agtool-grade`` commands, the Check cell, the
grading service, a batch worker) call :meth:`Settings.from_environ` and pass
the object down; a library function that is not given one reads it here at
call time, so a changed environment is seen. The documentation's settings
page is generated from :data:`SETTINGS` (:func:`settings_markdown`).

It imports the standard library only, so every floor (the fork server
included) may read it.

Example::

    >>> s = Settings.from_environ({"AGTOOL_SANDBOX": "bwrap", "AGTOOL_IMPORT_TIMEOUT": "oops"})
    >>> s.sandbox, s.import_timeout
    ('bwrap', 30.0)
    >>> Settings.from_environ({}).parallel_steps is None
    True
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar, overload

_T = TypeVar("_T")

_OFF = ("0", "no", "off", "false")


def _text(value: str, default: str) -> str:
    return value.strip() or default


def _positive_int(value: str, default: int | None) -> int | None:
    value = value.strip()
    return int(value) if value.isdigit() and int(value) > 0 else default


def _seconds(allow_zero: bool) -> Callable[[str, float], float]:
    def parse(value: str, default: float) -> float:
        try:
            seconds = float(value.strip())
        except ValueError:
            return default
        low_ok = seconds >= 0 if allow_zero else seconds > 0
        return seconds if low_ok and seconds < float("inf") else default

    return parse


def _switch_on(value: str, default: bool) -> bool:
    """On unless the variable says ``0``/``no``/``off``/``false``."""
    return value.strip().lower() not in _OFF if value.strip() else default


def _exactly_one(value: str, default: bool) -> bool:
    """On only when the variable is ``1``."""
    return value.strip() == "1" if value.strip() else default


@overload
def _setting(env: str, default: str, help: str, *, audience: str = ..., secret: bool = ...) -> str: ...


@overload
def _setting(
    env: str, default: _T, help: str, parse: Callable[[str, _T], _T], *, audience: str = ..., secret: bool = ...
) -> _T: ...


def _setting(
    env: str,
    default: Any,
    help: str,
    parse: Callable[[str, Any], Any] = _text,
    *,
    audience: str = "everyone",
    secret: bool = False,
) -> Any:
    """A dataclass field of :class:`Settings`: its default, and the variable, parser and help in its metadata.

    A ``secret`` (a key) is left out of the object's ``repr``, so a printed or logged ``Settings`` shows no key.
    """
    return field(
        default=default, repr=not secret, metadata={"env": env, "help": help, "parse": parse, "audience": audience}
    )


@dataclass(frozen=True)
class Settings:
    """The environment's settings, parsed; a value that does not parse keeps its default.

    >>> sorted(Settings.from_environ({"AGTOOL_CGROUPS": "memory, pids"}).cgroup_controllers)
    ['memory', 'pids']
    >>> Settings.from_environ({"AGTOOL_CGROUPS": "off"}).cgroups_enabled
    False
    """

    sandbox: str = _setting(
        "AGTOOL_SANDBOX",
        "",
        "The sandbox of learner code: `none`, `bwrap` or `auto`. Default of `--sandbox` "
        "(the commands' own default is `auto`, the Python API's `none`).",
    )
    parallel_steps: int | None = _setting(
        "AGTOOL_PARALLEL_STEPS",
        None,
        "How many step children of one grading run at once (default: up to 2, one per core).",
        _positive_int,
    )
    import_timeout: float = _setting(
        "AGTOOL_IMPORT_TIMEOUT",
        30.0,
        "Seconds a learner module's import may take, in every step (not counted in `--timeout`).",
        _seconds(False),
    )
    engine_idle_seconds: float = _setting(
        "AGTOOL_ENGINE_IDLE_SECONDS",
        600.0,
        "Idle seconds after which a warm fork server stops (`0`: never).",
        _seconds(True),
    )
    cgroups: str = _setting(
        "AGTOOL_CGROUPS",
        "",
        "`0`/`off`: never put steps in cgroups; a comma list (`memory,pids,cpu`): only those controllers.",
    )
    step_mounts: bool = _setting(
        "AGTOOL_STEP_MOUNTS",
        True,
        "`0`/`off`: no per-step mount namespace (read-only files, private /tmp) even as root.",
        _switch_on,
    )
    clean_start: bool = _setting(
        "AGTOOL_CLEAN_START",
        True,
        "`0`/`off`: serve every grading from the fork server itself, whose freed memory then holds earlier "
        "gradings' modules (only for the test that shows why this is on).",
        _switch_on,
        audience="internal",
    )
    step_walls: bool = _setting(
        "AGTOOL_STEP_WALLS",
        True,
        "`0`/`off`: in bubblewrap, no user, IPC and network namespace of each step's own and no syscall filter (only for "
        "the tests that show why they are on).",
        _switch_on,
        audience="internal",
    )
    code_walls: bool = _setting(
        "AGTOOL_CODE_WALLS",
        True,
        "`0`/`off`: in a step child, no import wall around the grader's packages and no refusal of trace, "
        "profile and audit hooks (only for the tests that show why they are on).",
        _switch_on,
        audience="internal",
    )
    grading_user: str = _setting(
        "AGTOOL_GRADING_USER",
        "agtool-sandbox",
        "The account learner code runs as when the grader runs as root inside bubblewrap (never created "
        "at grading time: `useradd --system --no-create-home --shell /usr/sbin/nologin --user-group "
        "agtool-sandbox`; see SECURITY.md).",
    )
    hugepages: bool = _setting(
        "AGTOOL_HUGEPAGES",
        False,
        "`1`: back the fork server's heap with huge pages (opt-in; for the benchmark).",
        _exactly_one,
    )
    seed_key: str = _setting(
        "AGTOOL_SEED_KEY", "", "The class key (hex) from which each learner's grading and feedback seeds are drawn."
    )
    module: str = _setting(
        "AGTOOL_MODULE",
        "",
        "The `tools.py` the lab's notebooks work on (default: the `agtool/tools.py` near the notebook).",
        audience="lab",
    )
    service_url: str = _setting(
        "AGTOOL_SERVICE_URL",
        "",
        "The classroom grading service that the lab's Submit cell sends to (set by the hub).",
        audience="lab",
    )
    model_url: str = _setting(
        "AGTOOL_MODEL_URL",
        "",
        "The capstone's model endpoint: the base URL of an OpenAI-compatible chat-completions API with tool "
        "calling (`http://127.0.0.1:8000/v1` for vLLM, `http://127.0.0.1:11434/v1` for Ollama). Empty (the "
        "default): the capstone uses its seeded stand-in model and needs no network.",
        audience="lab",
    )
    model_name: str = _setting(
        "AGTOOL_MODEL_NAME",
        "",
        "The model the capstone asks at `AGTOOL_MODEL_URL` (the API's `model`).",
        audience="lab",
    )
    model_key: str = _setting(
        "AGTOOL_MODEL_KEY",
        "",
        "The API key sent as a bearer token to `AGTOOL_MODEL_URL` (empty: none; local servers need none). Never "
        "passed to the grader's processes.",
        audience="lab",
        secret=True,
    )
    hub_api_token: str = _setting(
        "JUPYTERHUB_API_TOKEN", "", "The hub's token for this server or service (set by JupyterHub).", audience="hub"
    )
    hub_api_url: str = _setting(
        "JUPYTERHUB_API_URL",
        "",
        "The hub's API (set by JupyterHub): the grading service's pages take the hub's look when it is set, and "
        "its LTI sender reads learners' launches there.",
        audience="hub",
    )
    service_prefix: str = _setting(
        "JUPYTERHUB_SERVICE_PREFIX",
        "",
        "The URL prefix of the grading service (set by JupyterHub; default `/`).",
        audience="hub",
    )
    service_bind_url: str = _setting(
        "JUPYTERHUB_SERVICE_URL", "", "The address the grading service listens on (set by JupyterHub).", audience="hub"
    )
    service_data: str = _setting(
        "AGTOOL_SERVICE_DATA",
        "agtool-service-data",
        "The grading service's data folder (default of `serve --data-dir`).",
        audience="service",
    )
    step_user: str = _setting(
        "AGTOOL_STEP_USER",
        "",
        "Internal: `uid:gid` the fork server's step children switch to before learner code.",
        audience="internal",
    )
    server_sandboxed: bool = _setting(
        "AGTOOL_SERVER_SANDBOXED",
        False,
        "Internal: the fork server runs in bubblewrap (its /tmp is private: emptied between gradings).",
        _exactly_one,
        audience="internal",
    )
    server_cgroup: str = _setting(
        "AGTOOL_SERVER_CGROUP",
        "",
        "Internal: how the engine client names the fork server's cgroup to it.",
        audience="internal",
    )

    @classmethod
    def from_environ(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """The settings that ``environ`` (default: this process's environment) gives.

        >>> Settings.from_environ({"AGTOOL_PARALLEL_STEPS": "3"}).parallel_steps
        3
        """
        environ = os.environ if environ is None else environ
        values = {}
        for f in fields(cls):
            raw = environ.get(f.metadata["env"])
            if raw is not None:
                values[f.name] = f.metadata["parse"](raw, f.default)
        return cls(**values)

    def with_values(self, **changes) -> Settings:
        """A copy with some values changed (the object itself is frozen).

        >>> Settings().with_values(sandbox="none").sandbox
        'none'
        """
        return replace(self, **changes)

    def to_environ(self) -> dict[str, str]:
        """The variables that give these settings again, for a process started with a clean environment.

        Only values that differ from the defaults are listed.

        >>> Settings(hugepages=True).to_environ()
        {'AGTOOL_HUGEPAGES': '1'}
        """
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value == f.default:
                continue
            if isinstance(value, bool):
                text = "1" if value else "0"
            else:
                text = "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)
            out[f.metadata["env"]] = text
        return out

    @property
    def cgroups_enabled(self) -> bool:
        """Whether cgroups may be used at all (``$AGTOOL_CGROUPS`` is not ``0``/``no``/``off``/``false``)."""
        return self.cgroups.strip().lower() not in _OFF

    @property
    def cgroup_controllers(self) -> frozenset[str]:
        """The names ``$AGTOOL_CGROUPS`` lists (the engine keeps those it knows, in its own order)."""
        return frozenset(c.strip() for c in self.cgroups.split(",") if c.strip())


SETTINGS = fields(Settings)


def env_name(name: str) -> str:
    """The environment variable of setting ``name``.

    >>> env_name("sandbox")
    'AGTOOL_SANDBOX'
    """
    return next(f.metadata["env"] for f in SETTINGS if f.name == name)


def current() -> Settings:
    """This process's settings, read now (for library functions that were not given any).

    >>> isinstance(current(), Settings)
    True
    """
    return Settings.from_environ()


def settings_markdown() -> str:
    """The settings as a Markdown table, for the documentation's settings page.

    >>> settings_markdown().splitlines()[0]
    '| variable | setting | default | for | what it does |'
    """
    rows = ["| variable | setting | default | for | what it does |", "|---|---|---|---|---|"]
    for f in SETTINGS:
        default = "(none)" if f.default in ("", None) else f"`{f.default}`"
        rows.append(
            f"| `{f.metadata['env']}` | `{f.name}` | {default} | {f.metadata['audience']} | {f.metadata['help']} |"
        )
    return "\n".join(rows) + "\n"
