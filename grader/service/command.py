"""``agtool-grade serve``: the options of the grading service, added to a parser by :func:`add_serve_parser`.

Example::

    >>> import argparse
    >>> parser = argparse.ArgumentParser()
    >>> _ = add_serve_parser(parser.add_subparsers())
    >>> args = parser.parse_args(["serve", "--jobs", "3"])
    >>> args.jobs, args.instructor_group, args.db
    (3, 'agtool-instructors', None)
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from grader.service.options import (
    APPEAL_LIMIT,
    APPEAL_WINDOW,
    MAX_BYTES,
    MAX_LEARNER_BYTES,
    MAX_UPLOADS,
    RATE_LIMIT,
    RATE_WINDOW,
)
from grader.settings import Settings, current
from grader.shared_options import KEY_FILE, SERVE, add_shared_options

REFERENCE = Path(__file__).resolve().parents[2] / "solutions" / "tools.py"  # a checkout's, or none installed


def add_serve_parser(subparsers, settings=None) -> argparse.ArgumentParser:
    """Add the ``serve`` subcommand to ``subparsers`` (``args.func`` runs it) and return its parser.

    ``settings`` (a :class:`grader.settings.Settings`; default: read now) give ``--data-dir``'s default.
    """
    settings = settings or current()
    p = subparsers.add_parser(
        "serve",
        help="run the classroom grading service (a JupyterHub service; extra `service`)",
        description="Grade submissions from learners' notebooks as they arrive, keep every attempt, "
        "and show instructors the class. Run it as a JupyterHub service: it reads "
        "$JUPYTERHUB_SERVICE_URL, $JUPYTERHUB_SERVICE_PREFIX and the hub's API token.",
    )
    p.add_argument(
        "--db",
        default=None,
        metavar="URL",
        help="SQLAlchemy database URL, e.g. postgresql+psycopg://user:pw@host/agtool "
        "(default: an SQLite file in --data-dir)",
    )
    p.add_argument(
        "--data-dir",
        default=settings.service_data,
        metavar="DIR",
        help="the service's data folder (default: $AGTOOL_SERVICE_DATA or ./agtool-service-data)",
    )
    p.add_argument(
        "--instructor-group",
        default="agtool-instructors",
        metavar="GROUP",
        help="hub group whose members are instructors, besides hub admins (default: %(default)s)",
    )
    # --jobs, --executor, --scheduler, --sandbox, --seed-key-file, --course, --roster, --reference
    add_shared_options(p, SERVE)
    p.add_argument(
        "--insecure-no-sandbox",
        action="store_true",
        help="start even when learner code would run without a sandbox (it could then read and "
        "change the service's data); the class page says so",
    )
    p.add_argument(
        "--max-learner-bytes",
        type=int,
        default=MAX_LEARNER_BYTES,
        metavar="N",
        help="bytes of attempts (sources and reports) and regrade requests each learner may keep "
        "(default: %(default)s; over it a submission or a request gets 413 saying so)",
    )
    p.add_argument(
        "--max-uploads",
        type=int,
        default=MAX_UPLOADS,
        metavar="N",
        help="uploads received at once (default: %(default)s; more get 503 with Retry-After)",
    )
    p.add_argument(
        "--max-bytes",
        type=int,
        default=MAX_BYTES,
        metavar="N",
        help="largest module accepted, in bytes (default: %(default)s; larger gets 413)",
    )
    p.add_argument(
        "--rate-limit",
        type=int,
        default=RATE_LIMIT,
        metavar="N",
        help="submissions per learner per --rate-window (default: %(default)s; more gets 429)",
    )
    p.add_argument(
        "--rate-window",
        type=float,
        default=RATE_WINDOW,
        metavar="S",
        help="seconds of the rate limit's window (default: %(default)s)",
    )
    p.add_argument(
        "--appeal-limit",
        type=int,
        default=APPEAL_LIMIT,
        metavar="N",
        help="regrade requests per learner per --appeal-window (default: %(default)s; more gets 429 "
        "saying when the next is allowed)",
    )
    p.add_argument(
        "--appeal-window",
        type=float,
        default=APPEAL_WINDOW,
        metavar="S",
        help="seconds of the regrade requests' limit window (default: %(default)s)",
    )
    p.add_argument(
        "--lti",
        default=None,
        metavar="FILE",
        help="the LMS's LTI 1.3 registration (TOML, docs/lti.md): counted grades go to its gradebook "
        "through AGS; checked at start, each wrong field named",
    )
    p.add_argument("--url", default=None, help="where to listen (default: $JUPYTERHUB_SERVICE_URL)")
    p.add_argument("--prefix", default=None, help="route prefix (default: $JUPYTERHUB_SERVICE_PREFIX or /)")
    p.set_defaults(func=run_serve)
    return p


def run_serve(args) -> int:
    """Check the options, then run the service (imports the server only now: JupyterHub is the extra)."""
    if args.executor == "dask" and not args.scheduler:
        raise SystemExit("agtool-grade serve: --executor dask needs --scheduler ADDRESS")
    if args.jobs < 1:
        raise SystemExit("agtool-grade serve: --jobs must be at least 1")
    if getattr(args, "appeal_limit", APPEAL_LIMIT) < 1 or getattr(args, "appeal_window", APPEAL_WINDOW) <= 0:
        raise SystemExit("agtool-grade serve: --appeal-limit must be at least 1 and --appeal-window more than 0 s")
    if getattr(args, "course", None):  # refused before the service starts, with the field and the fix
        from grader.course.policy import CourseError, load_course

        try:
            args.course_policy = load_course(args.course)
        except CourseError as exc:
            raise SystemExit(f"agtool-grade serve: {exc}") from None
    if getattr(args, "roster", None):
        from grader.outputs.lms import RosterError, read_roster

        try:
            args.roster_entries = read_roster(args.roster)
        except RosterError as exc:
            raise SystemExit(f"agtool-grade serve: {exc}") from None
    if getattr(args, "lti", None):
        try:
            from grader.service.lti.config import LtiConfigError, load_config
        except ImportError as exc:
            raise SystemExit(
                f"agtool-grade serve --lti needs the lti extra: pip install 'agtool-lab[lti]' ({exc})"
            ) from None
        try:
            args.lti_config = load_config(args.lti)
        except LtiConfigError as exc:
            raise SystemExit(f"agtool-grade serve: {exc}") from None
    args.references = reference_texts(getattr(args, "reference", "auto"))
    requested = args.sandbox or (getattr(args, "settings", None) or current()).sandbox or "auto"
    # With Dask the workers are elsewhere: the engine there refuses a sandbox it cannot make.
    probe = (lambda _requested: "") if args.executor == "dask" else sandbox_problem
    args.sandbox, args.insecure_why = start_sandbox(requested, args.insecure_no_sandbox, probe)
    if args.sandbox != "none" and args.executor != "dask":
        args.insecure_why = (
            start_owner(data_owner_problem(args.data_dir), args.insecure_no_sandbox) or args.insecure_why
        )
    # Before the seed key: that file is made in --data-dir, whose owner the check above reads.
    environment = getattr(args, "settings", None) or current()
    args.seed_key = seed_key(getattr(args, "seed_key_file", None), environment.seed_key, args.data_dir)
    try:
        from grader.service.serve import serve
    except ImportError as exc:
        raise SystemExit(
            f"agtool-grade serve needs the service extra: pip install 'agtool-lab[service]' ({exc})"
        ) from None
    return serve(args, getattr(args, "settings", None))


def sandbox_problem(requested: str) -> str:
    """Why ``requested`` (``bwrap`` or ``auto``) gives learner code no sandbox here; ``""`` when it does.

    The engine's own check (:func:`grader.engine.sandbox.require`), the one every engine client makes.
    """
    from grader.engine.sandbox import IsolationUnavailable, require

    try:
        isolation = require(requested)
    except IsolationUnavailable as exc:
        return str(exc)
    return "" if isolation.sandbox == "bwrap" else "bubblewrap is not usable on this machine"


def data_owner_problem(data_dir: str | Path, uid: int | None = None) -> str:
    """Why learner code would run as the account that owns the service's data (``""``: it would not).

    As root, the step children switch to the grading account (``agtool-sandbox``), which owns
    nothing; any other account cannot switch, so its learner code runs as itself inside
    bubblewrap, and an escape from the sandbox could then rewrite every grade. That is a missing
    protection, so the start stops (SECURITY.md: two accounts, without root).

    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> owner = os.stat(folder).st_uid
    >>> data_owner_problem(folder, uid=owner + 1), data_owner_problem(folder, uid=0)
    ('', '')
    >>> ("owns the service's data" in data_owner_problem(folder, uid=owner)) == (owner != 0)
    True
    """
    uid = os.geteuid() if uid is None else uid
    if uid == 0:
        return ""  # the engine switches the step children to the grading account (or refuses to grade)
    folder = Path(data_dir)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent  # the folder the service will make its data in
    try:
        owner = folder.stat().st_uid
    except OSError:
        return ""
    if owner != uid:
        return ""
    return (
        f"learner code would run as uid {uid}, the account that owns the service's data ({data_dir}), "
        f"because only root can switch it to the grading account"
    )


def start_owner(why: str, insecure: bool) -> str:
    """``why`` learner code runs as the data's owner (kept for the class page), or stop the start without ``insecure``.

    >>> start_owner("", False), start_owner("shared", True)
    ('', 'shared')
    """
    if why and not insecure:
        raise SystemExit(
            f"agtool-grade serve: refusing to start: {why}. Start the service as root (its step "
            "children then run as the grading account, $AGTOOL_GRADING_USER, which owns nothing), or "
            "give --data-dir to another account than the one that grades (SECURITY.md: two "
            "accounts, without root), or, knowing that an escape from the sandbox could change every "
            "attempt, start with --insecure-no-sandbox (the class page then says so)"
        )
    return why


def refusal(why: str) -> str:
    """The message of a service that will not start without a sandbox, with the two ways on.

    >>> "--insecure-no-sandbox" in refusal("--sandbox none")
    True
    """
    return (
        f"agtool-grade serve: refusing to start: learner code would run without a sandbox ({why}), as the "
        "account that owns the service's data. Install bubblewrap and allow unprivileged user namespaces "
        "(SECURITY.md), or, knowing that a submission could then read and change every attempt, start with "
        "--insecure-no-sandbox (the class page then says so)"
    )


def start_sandbox(requested: str, insecure: bool, problem) -> tuple[str, str]:
    """``(the sandbox the workers get, why learner code is unconfined or "")``; fail closed without ``insecure``.

    ``problem(requested)`` says why the sandbox cannot be had here (``""``: it
    can). No sandbox stops the start (SystemExit) unless ``insecure``.

    >>> start_sandbox("auto", False, lambda r: "")
    ('auto', '')
    >>> start_sandbox("bwrap", True, lambda r: "bubblewrap is not installed")
    ('none', 'bubblewrap is not installed')
    >>> try:
    ...     start_sandbox("none", False, lambda r: "")
    ... except SystemExit as exc:
    ...     print(str(exc)[:49])
    agtool-grade serve: refusing to start: learner co
    """
    why = "--sandbox none" if requested == "none" else problem(requested)
    if not why:
        return requested, ""
    if not insecure:
        raise SystemExit(refusal(why))
    return "none", why


def seed_key(file: str | None, environment: str, data_dir: str | Path) -> bytes:
    """The seed key: ``file``'s, else ``environment`` (``$AGTOOL_SEED_KEY``), else ``data_dir/seed.key``.

    A key file that does not exist is made (mode 0600, a fresh key in the
    format of ``grader.seeds.new_key``) and read at every later start; the
    bytes are those ``batch --seed-key-file`` reads from the same file.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp()
    >>> first = seed_key(None, "", folder); first == seed_key(None, "", folder), len(first)
    (True, 64)
    >>> seed_key(None, " k1 ", folder)
    b'k1'
    """
    if not file and environment.strip():
        return environment.strip().encode("utf-8")
    path = Path(file) if file else Path(data_dir) / KEY_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        made = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # never a key others could read
    except FileExistsError:
        pass
    except OSError as exc:
        raise SystemExit(f"agtool-grade serve: cannot make the seed key file {path} ({exc.strerror})") from None
    else:
        with os.fdopen(made, "w", encoding="utf-8") as out:
            out.write(secrets.token_hex(32) + "\n")
    try:
        key = path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(
            f"agtool-grade serve: the seed key file {path} cannot be read ({type(exc).__name__})"
        ) from None
    if not key:
        raise SystemExit(f"agtool-grade serve: the seed key file {path} is empty; restore the key it held")
    return key.encode("utf-8")


def reference_texts(reference: str | None) -> dict[str, str]:
    """``--reference``: ``{"reference:<file name>": text}`` to compare with, read now (``{}``: none).

    ``auto`` is the install's (or checkout's) ``solutions/tools.py`` when there is one.

    >>> reference_texts("none"), list(reference_texts("auto")) in ([], ["reference:tools.py"])
    ({}, True)
    """
    if not reference or reference == "none":
        return {}
    path = REFERENCE if reference == "auto" else Path(reference)
    if reference == "auto" and not path.is_file():
        return {}
    try:
        return {f"reference:{path.name}": path.read_text(encoding="utf-8")}
    except (OSError, UnicodeDecodeError) as exc:
        raise SystemExit(
            f"agtool-grade serve: --reference {path} cannot be read ({type(exc).__name__}); give "
            "the path of a tools.py (e.g. solutions/tools.py), or --reference none"
        ) from None


def main(argv: list[str] | None = None) -> int:
    """``python -m grader.service [options]``: the same as ``agtool-grade serve [options]``."""
    environment = Settings.from_environ()  # read once, here, and passed down
    parser = argparse.ArgumentParser(prog="python -m grader.service")
    sub = parser.add_subparsers()
    add_serve_parser(sub, environment)
    args = parser.parse_args(["serve", *(argv if argv is not None else sys.argv[1:])])
    args.settings = environment
    return args.func(args)
