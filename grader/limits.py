"""Every limit of agtool-lab above the engine, declared once: its value, unit and reason.

A limit is a bound the grader puts on a submission, a class or a request:
time (seconds), bytes, or counts. Each is a module constant declared here
with :func:`_limit`, which also records why it has that value; the modules
that apply a limit import it from here (some keep their older name as an
alias, e.g. ``grader.grading.MAX_SOURCE_BYTES``), and the settings page
of the documentation lists them (:func:`limits_markdown`).

The bounds of one step's process (its time, memory, processes, files,
output) are the engine's: they are declared once in
``grader.engine.protocol.Limits``, which the same page lists beside these.

Two byte caps bound a module's size, and they mean different things:
:data:`SOURCE_BYTES` (4 MiB) is the largest ``tools.py`` the grader reads
and grades at all, from a file the instructor or learner already holds
(``check``, ``batch``, the notebook); :data:`UPLOAD_BYTES` (256 KiB) is the
largest module the classroom service *accepts over HTTP and keeps*: it
stores every attempt in its database, so one request must not be able to
fill it. A ``tools.py`` is a few kB; both are far above an honest one.

It imports the standard library only, so every floor may read it.

Example::

    >>> SUBMISSION_TIMEOUT, LIMITS["SUBMISSION_TIMEOUT"].unit
    (60.0, 's')
    >>> UPLOAD_BYTES < SOURCE_BYTES
    True
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Limit:
    """One limit: its constant's ``name``, ``value``, ``unit`` (``s``, ``bytes``, ``count``), who applies it and why."""

    name: str
    value: float
    unit: str
    applies: str
    reason: str
    option: str = ""  # the command-line option or setting that changes it, if any


LIMITS: dict[str, Limit] = {}


def _limit(name: str, value, unit: str, applies: str, reason: str, option: str = ""):
    """Declare limit ``name`` (the constant it is assigned to) and return its value."""
    assert name not in LIMITS, name
    LIMITS[name] = Limit(name, value, unit, applies, reason, option)
    return value


# ------------------------------------------------------------------------- time, seconds
SUBMISSION_TIMEOUT = _limit(
    "SUBMISSION_TIMEOUT",
    60.0,
    "s",
    "batch, service: one submission's calls, shared between its steps",
    "a correct module needs well under a second per step; 60 s over 11 steps still gives a slow honest one "
    "about 5.5 s a step, while a module that hangs in every step ends within its budget",
    "`batch --timeout`",
)
MIN_STEP_TIMEOUT = _limit(
    "MIN_STEP_TIMEOUT",
    0.5,
    "s",
    "batch, service: the least share of the budget a step gets",
    "below this a correct step can miss its limit on a busy machine",
)
WORKER_GRACE = _limit(
    "WORKER_GRACE",
    5.0,
    "s",
    "batch, service: past a task's budget before its worker is killed",
    "the budget counts calls only: the grace covers the imports and the report's way back; a 60 s budget "
    'leaves room for a 10 s import (docs/benchmarks.md, "Slow imports")',
)
PLOT_WAIT = _limit(
    "PLOT_WAIT",
    120.0,
    "s",
    "batch, service: a forked drawing of the class plots",
    "past it the forked drawing is given up and the plots are drawn in the calling process instead",
)
RATE_WINDOW = _limit(
    "RATE_WINDOW",
    60.0,
    "s",
    "service: the window of `RATE_LIMIT`",
    "a learner who clicks Submit again and again is slowed, not one who submits now and then",
    "`serve --rate-window`",
)
APPEAL_WINDOW = _limit(
    "APPEAL_WINDOW",
    3600.0,
    "s",
    "service: the window of `APPEAL_LIMIT`",
    "regrade requests are read by a person: a few an hour is plenty",
    "`serve --appeal-window`",
)
IDLE_TIMEOUT = _limit(
    "IDLE_TIMEOUT",
    10.0,
    "s",
    "service: a connection sending its headers, or idle between requests",
    "slow or silent clients are cut off instead of holding a connection",
)
BODY_TIMEOUT = _limit(
    "BODY_TIMEOUT",
    30.0,
    "s",
    "service: a client sending a whole body",
    "a 256 KiB module on a slow link takes about 1 s; a client that trickles bytes is cut off",
)
UPLOAD_RETRY_AFTER = _limit(
    "UPLOAD_RETRY_AFTER",
    5,
    "s",
    "service: the Retry-After of a 503 for too many uploads at once",
    "a module of `UPLOAD_BYTES` is read in about a second: the client tries again soon, not at once",
)
SUBMIT_WAIT = _limit(
    "SUBMIT_WAIT",
    180.0,
    "s",
    "lab: the Submit cell waiting for its grade",
    "a class-wide burst on two cores takes well under a minute",
)
COURSE_WAIT = _limit(
    "COURSE_WAIT",
    5.0,
    "s",
    "lab: the Check panel asking the service for the course's deadlines",
    "the learner is waiting for Check: without an answer the panel shows no deadline",
)
TOKEN_TTL = _limit(
    "TOKEN_TTL",
    45.0,
    "s",
    "service: a hub's answer about a token, kept",
    "the hub is asked once per token and window, not on every request; a revoked token works at most this long",
)
NONCE_KEEP = _limit(
    "NONCE_KEEP",
    3600.0,
    "s",
    "service (LTI): a used launch nonce, remembered",
    "longer than any id_token lives, so a replayed launch is refused",
)
LMS_CONNECT_TIMEOUT = _limit(
    "LMS_CONNECT_TIMEOUT",
    3.05,
    "s",
    "service (LTI): connecting to the LMS for grade passback or the roster",
    "a stopped LMS delays passback (it is tried again) and never slows grading",
)
LMS_READ_TIMEOUT = _limit(
    "LMS_READ_TIMEOUT",
    10.0,
    "s",
    "service (LTI): the LMS's answer once connected",
    "an LMS answers a score or a roster page in well under a second; a hung one is tried again later",
)
LTI_COLUMN_DECLARED_WAIT = _limit(
    "LTI_COLUMN_DECLARED_WAIT",
    600.0,
    "s",
    "service (LTI): a column an instructor's Deep Linking answer declared",
    "the LMS makes a column declared by Deep Linking when the instructor saves the link; for this long the "
    "tool finds it there instead of making a second one, then makes its own",
)
LTI_KEY_SET_MAX_AGE = _limit(
    "LTI_KEY_SET_MAX_AGE",
    3600.0,
    "s",
    "hub (LTI): the LMS's cached key set",
    "keys older than this are fetched again at the next launch, so a key the LMS withdrew stops working "
    "within the hour, while a burst of launches costs no fetch",
)
LTI_KEY_SET_CONNECT_TIMEOUT = _limit(
    "LTI_KEY_SET_CONNECT_TIMEOUT",
    3.05,
    "s",
    "hub (LTI): connecting to the LMS's key set address",
    "a silent LMS holds one worker thread for this long, never the hub's event loop",
)
LTI_KEY_SET_READ_TIMEOUT = _limit(
    "LTI_KEY_SET_READ_TIMEOUT",
    10.0,
    "s",
    "hub (LTI): reading the LMS's key set",
    "an LMS that answers slowly is waited for in a worker thread; known keys keep working meanwhile",
)


# ------------------------------------------------------------------------------- bytes
SOURCE_BYTES = _limit(
    "SOURCE_BYTES",
    4 << 20,
    "bytes",
    "check, batch, notebook: the largest tools.py graded (larger is refused)",
    "a tools.py is a few kB; the cap keeps a stray data file from being read and compiled, while an honest "
    "module with a large table of its own still grades",
)
UPLOAD_BYTES = _limit(
    "UPLOAD_BYTES",
    256 << 10,
    "bytes",
    "service: the largest module accepted by a submission (larger gets 413)",
    "the service keeps every attempt in its database: one request must not be able to fill it (a tools.py is a few kB)",
    "`serve --max-bytes`",
)
LEARNER_BYTES = _limit(
    "LEARNER_BYTES",
    128 << 20,
    "bytes",
    "service: attempts (sources, reports) and regrade requests kept per learner",
    "an attempt is about 1 MB with its reports: a hundred attempts each, and one learner cannot fill the disk",
    "`serve --max-learner-bytes`",
)
PRE_AUTH_BYTES = _limit(
    "PRE_AUTH_BYTES",
    8 << 10,
    "bytes",
    "service: the body read before a handler has checked the caller",
    "GETs need none; an unknown caller must not make the service read megabytes",
)
HEADER_BYTES = _limit(
    "HEADER_BYTES", 32 << 10, "bytes", "service: a request's line and headers", "the hub's cookies fit many times over"
)
ACTION_BODY_BYTES = _limit(
    "ACTION_BODY_BYTES",
    64 << 10,
    "bytes",
    "service: the fields of one instructor action or regrade request",
    "read only once the caller is known; the texts in it are capped in characters (a reason, a request), so this "
    "only bounds what is read before they are checked",
)
ZIP_MEMBER_BYTES = _limit(
    "ZIP_MEMBER_BYTES",
    5 << 20,
    "bytes",
    "batch: one file extracted from an LMS zip",
    "an LMS download of a class is a few megabytes; a zip bomb's member is refused, not extracted",
)
ZIP_TOTAL_BYTES = _limit(
    "ZIP_TOTAL_BYTES",
    500 << 20,
    "bytes",
    "batch: all the files extracted from one LMS zip",
    "an LMS download of a class is a few megabytes; a zip bomb stops here",
)
FILE_NAME_BYTES = _limit(
    "FILE_NAME_BYTES",
    255,
    "bytes",
    "batch: one part of a path in a class folder or zip",
    "the longest file name most file systems accept: a longer one is reported, never written",
)
LEARNER_ID_BYTES = _limit(
    "LEARNER_ID_BYTES",
    150,
    "bytes",
    "batch, service: a learner's id as a file name (UTF-8)",
    "with a suffix and `.json` it stays well under the usual 255-byte file-name limit",
)

# ------------------------------------------------------------------------------ counts
RATE_LIMIT = _limit(
    "RATE_LIMIT",
    10,
    "count",
    "service: submissions per learner per `RATE_WINDOW` (more get 429)",
    "a learner who fixes and resubmits needs a few a minute; a loop that submits must not fill the queue",
    "`serve --rate-limit`",
)
APPEAL_LIMIT = _limit(
    "APPEAL_LIMIT",
    5,
    "count",
    "service: regrade requests per learner per `APPEAL_WINDOW` (more get 429)",
    "requests are read by a person",
    "`serve --appeal-limit`",
)
MAX_UPLOADS = _limit(
    "MAX_UPLOADS",
    32,
    "count",
    "service: authenticated uploads being read at once (more get 503 with Retry-After)",
    "each holds up to `UPLOAD_BYTES` in memory while it is read",
    "`serve --max-uploads`",
)
ZIP_MEMBERS = _limit(
    "ZIP_MEMBERS",
    20_000,
    "count",
    "batch: files in one LMS zip",
    "an LMS download of a class is a few files per learner; a zip of millions of empty files is refused",
)
LEARNER_NAME_CHARS = _limit(
    "LEARNER_NAME_CHARS",
    255,
    "count",
    "service: characters of a learner's name in an instructor action",
    "the database's learner column holds no more",
)
REASON_CHARS = _limit(
    "REASON_CHARS",
    1000,
    "count",
    "service: characters of an instructor's reason or answer",
    "a paragraph; the learner reads it on their page",
)
APPEAL_CHARS = _limit(
    "APPEAL_CHARS",
    2000,
    "count",
    "service: characters of a learner's regrade request",
    "room to say what was graded wrongly; a person reads it",
)
EXTRA_ATTEMPTS = _limit(
    "EXTRA_ATTEMPTS",
    100,
    "count",
    "service: extra attempts in one grant",
    "far above any course's attempt limit; a typo of a few zeros is refused",
)
SIMILARITY_CHARS = _limit(
    "SIMILARITY_CHARS",
    64 * 1024,
    "count",
    "batch, service: characters of each module the similarity report compares",
    "a tools.py is about 10 kB; a padded 231 KiB one must not cost minutes",
)
ERROR_LINE_CHARS = _limit(
    "ERROR_LINE_CHARS",
    400,
    "count",
    "batch: characters of an ungradable file's first error line in the summary",
    "an import time-out's sentence is about 190 characters: it is shown whole",
)


def _value_words(limit: Limit) -> str:
    """``limit``'s value as a reader says it.

    >>> _value_words(LIMITS["SOURCE_BYTES"]), _value_words(LIMITS["WORKER_GRACE"])
    ('4 MiB', '5 s')
    """
    if limit.unit == "bytes":
        for size, word in ((1 << 20, "MiB"), (1 << 10, "KiB")):
            if limit.value >= size and limit.value % size == 0:
                return f"{limit.value // size} {word}"
        return f"{limit.value} bytes"
    return f"{limit.value:g} s" if limit.unit == "s" else f"{limit.value:,}"


def limits_markdown() -> str:
    """The limits as a Markdown table, for the documentation's settings page.

    >>> limits_markdown().splitlines()[0]
    '| limit | value | applies to | why | changed by |'
    """
    rows = ["| limit | value | applies to | why | changed by |", "|---|---|---|---|---|"]
    for limit in LIMITS.values():
        rows.append(
            f"| `{limit.name}` | {_value_words(limit)} | {limit.applies} | {limit.reason} | {limit.option or '-'} |"
        )
    return "\n".join(rows) + "\n"
