"""What a learner reads when a submission or a check could not be graded: the text, in one place.

Grading (:mod:`grader.grading`) decides *what* happened; this module says
it. Templates are module constants; the small functions fill them from
plain values (numbers, words, the fields of a step's result), so this
module imports only the standard library and :mod:`grader.escape`, and any
floor may use it. A failure's *kind* (who failed) is not text: it is
:class:`grader.report.Failure`.

Example::

    >>> grader_failed(OSError("disk full"))
    'the grader failed: OSError: disk full'
    >>> replay_command("ana/tools.py", "step2/x", 7, 10.0, default_timeout=10.0)
    'agtool-grade check ana/tools.py --only step2/x --seed 7'
"""

from __future__ import annotations

import math
import shlex
import signal

from grader.escape import shell_join

# ------------------------------------------------------------------ the whole submission
IMPORT_FAILED = "Your module could not be imported: "
INTERNAL_ERROR = "internal grader error (please report it, with the reproduce command): "
WORKER_LOST = (
    "The grader's worker process stopped during this step ({}). Does your code kill or signal "
    "other processes? It must not; if it does not, please report this."
)
TOO_LARGE = "tools.py is larger than {size}; the grader does not read it."
# Failures of the grading machinery, not of the learner (their kind is ``grader``).
GRADER_FAILED = "the grader failed: "
WORKER_DIED = "the grading process died"
CLUSTER_FAILED = "grading failed on the Dask cluster: "
OVER_TIME = "grading stopped: over the time limit of {seconds:g} s"

REPLAY_PATH_WORD = 2  # index of the module's path among the words of a replay command


def grader_failed(exc: BaseException, what: str = "") -> str:
    """The message of a grading that stopped on an exception of the grader (``what``: where, optional).

    >>> grader_failed(ValueError("x"), "its result could not be saved")
    'the grader failed: its result could not be saved (ValueError: x)'
    """
    detail = f"{type(exc).__name__}: {exc}"
    return f"{GRADER_FAILED}{what} ({detail})" if what else f"{GRADER_FAILED}{detail}"


def cluster_failed(exc: BaseException) -> str:
    """The message of a task the Dask cluster could not run.

    >>> cluster_failed(TimeoutError("lost"))
    'grading failed on the Dask cluster: TimeoutError: lost'
    """
    return f"{CLUSTER_FAILED}{type(exc).__name__}: {exc}"


def over_time(seconds: float) -> str:
    """The message of a submission whose whole time budget ran out.

    >>> over_time(60.0)
    'grading stopped: over the time limit of 60 s'
    """
    return OVER_TIME.format(seconds=seconds)


def replay_command(name: str, check_id: str, seed: int, timeout: float, *, default_timeout: float) -> str:
    """The shell line that replays exactly one check on the same cases, quoted so that pasting it runs nothing else.

    ``name`` is the module as the learner knows it; the timeout is named
    only when it is not the default, rounded up to a tenth of a second (a
    batch's share of 60 s between 11 steps is 5.4545... s: the line says 5.5,
    never less time than the grading had).

    >>> replay_command("my work/tools.py", "step1/names", 3, 2.5, default_timeout=10.0)
    "agtool-grade check 'my work/tools.py' --only step1/names --seed 3 --timeout 2.5"
    >>> replay_command("t.py", "step1/names", 3, 60 / 11, default_timeout=10.0).split()[-1]
    '5.5'
    """
    parts = ["agtool-grade", "check", str(name), "--only", check_id, "--seed", str(seed)]
    if timeout != default_timeout:
        parts += ["--timeout", _tenths(timeout)]
    return shell_join(parts, paths=[REPLAY_PATH_WORD])


def _tenths(seconds: float) -> str:
    # Rounded up to a tenth: never less time than the grading had.
    return f"{math.ceil(round(seconds * 10, 6)) / 10:g}"


REPLAY_PROGRAM = "agtool-grade"  # the first word of every replay command the grader writes
LAB_MODULE = "agtool/tools.py"  # the learner's module, from the lab's (and the hub home's) top folder
# Who reads a replay line, and where they run it:
#   terminal    the grader's own user (``agtool-grade check`` in a shell): the path as graded
#   lab         the Check panel in the learner's kernel: the path as graded, run by the kernel's Python
#               (``runner``), whatever the lab terminal's PATH
#   service     the hub's learner page: the learner's lab path, never the service's stored copy
#   feedback    feedback files of a batch (and the LMS comment): the learner's lab path, never the instructor's folder
#   gradescope  Gradescope's results.json: the learner's lab path, never the autograder's or instructor's folder
READERS = ("terminal", "lab", "service", "feedback", "gradescope")


def replay_for(command: str, reader: str, *, runner: str | None = None, module: str = LAB_MODULE) -> str:
    """The replay line a reader runs where they read it, from the one the grader wrote (:func:`replay_command`).

    Every reader gets the timeout rounded up to a tenth of a second (a report stored
    before the rounding says 5.45455). ``runner`` (shell words) replaces
    ``agtool-grade`` for the ``lab`` reader; ``module`` is the learner's path for the
    readers who do not share the grader's folders (service, feedback, gradescope).
    A line the grader did not write is shown as it is.

    >>> line = "agtool-grade check /srv/agtool/bob/attempt-3/tools.py --only step1/names --seed 7 --timeout 5.45455"
    >>> replay_for(line, "service")
    'agtool-grade check agtool/tools.py --only step1/names --seed 7 --timeout 5.5'
    >>> replay_for(line, "lab", runner="'/opt/my env/bin/python' -m grader")
    "'/opt/my env/bin/python' -m grader check /srv/agtool/bob/attempt-3/tools.py --only step1/names --seed 7 --timeout 5.5"
    >>> replay_for("agtool-grade check 'a b/tools.py' --seed 7", "terminal")
    "agtool-grade check 'a b/tools.py' --seed 7"
    """
    if reader not in READERS:
        raise ValueError(f"unknown reader {reader!r}: one of {', '.join(READERS)}")
    runs_here = reader == "lab" and runner and command.startswith(REPLAY_PROGRAM + " ")
    try:
        words = shlex.split(command)
    except ValueError:  # not a command the grader wrote: shown as it is (run by the kernel's Python in the lab)
        words = []
    if len(words) <= REPLAY_PATH_WORD or words[:2] != [REPLAY_PROGRAM, "check"]:
        return runner + command[len(REPLAY_PROGRAM) :] if runs_here else command
    if reader in ("service", "feedback", "gradescope"):
        words[REPLAY_PATH_WORD] = module
    if "--timeout" in words[:-1]:
        at = words.index("--timeout") + 1
        try:
            words[at] = _tenths(float(words[at]))
        except ValueError:
            pass
    line = shell_join(words, paths=[REPLAY_PATH_WORD])
    if reader == "lab" and runner:
        line = runner + line[len(REPLAY_PROGRAM) :]
    return line


# ------------------------------------------------------------------ a step's process
def import_error(error: dict, file_name: str) -> str:
    """The one message every check gets when the module raised while being imported.

    ``error`` is the step child's ``import_error`` message (``error_type``,
    ``message``, and the ``line`` and its ``source`` when known).

    >>> print(import_error({"error_type": "SyntaxError", "message": "bad", "line": 3, "source": "def f(:"}, "tools.py"))
    Your module could not be imported: SyntaxError at tools.py line 3: bad
        3 | def f(:
    """
    where = f" at {file_name} line {error['line']}" if error.get("line") else ""
    text = f"{IMPORT_FAILED}{error['error_type']}{where}: {error['message']}"
    if error.get("source"):
        text += f"\n    {error['line']} | {error['source']}"
    return text


def import_death(what: str, cause: str) -> str:
    """The message when the step's process ended while importing the module (see :func:`timeout_text`).

    >>> import_death("exited with status 3", " (sys.exit?)")
    'Your module could not be imported: while importing it, the process exited with status 3 (sys.exit?).'
    """
    return f"{IMPORT_FAILED}while importing it, the process {what}{cause}."


def missing_observation(label: str, what: str, cause: str, *, first: bool, stopped_in_call: bool) -> str:
    """Why a call has no observation: the process ended during it (``first``) or before it ran.

    >>> missing_observation("f(1)", "exited with status 1", "", first=True, stopped_in_call=False)
    "The step's process exited with status 1 during `f(1)`."
    >>> missing_observation("g()", "crashed", "", first=False, stopped_in_call=False)
    "Not judged: not run, the step's process crashed earlier in this step."
    """
    if first and stopped_in_call:
        return f"`{label}` {what.replace('was killed after the call ran', 'was stopped after it ran')}{cause}."
    if first:
        return f"The step's process {what} during `{label}`{cause}."
    return f"Not judged: not run, the step's process {what} earlier in this step."


def probe_error(obs: dict, label: str) -> str:
    """What a call raised, said to the learner (``obs`` holds ``probe_error`` and ``message``).

    >>> probe_error({"probe_error": "ValueError", "message": "no"}, "f(1)")
    '`f(1)` raised ValueError: no.'
    """
    kind, detail = obs.get("probe_error", "?"), str(obs.get("message", ""))
    if kind == "SystemExit":
        return f"`{label}` raised SystemExit({detail}): a call of sys.exit() or exit() in your code?"
    if kind == "KeyboardInterrupt":
        return f"`{label}` raised KeyboardInterrupt; the lab's functions must not raise it."
    if kind in ("ObservationTooLarge", "UnserializableObservation"):
        return f"`{label}` returned something the grader could not take back ({kind}: {detail})."
    return f"`{label}` raised {kind}" + (f": {detail}" if detail else "") + "."


def _at_most(spent: float, limit: float) -> float:
    """``spent``, or ``limit`` when the process ran past it (it was killed there).

    >>> _at_most(30.14, 30), _at_most(2.5, 30)
    (30, 2.5)
    """
    return limit if spent >= limit else spent


def timeout_text(
    phase: str, spent: float, *, import_timeout: float, timeout: float, per_probe: float
) -> tuple[str, str]:
    """What was slow in a step that outlived its limit (a sentence's predicate) and a likely cause.

    ``phase`` is ``"import"`` or ``"probe"``, ``spent`` the seconds it ran.

    >>> timeout_text("import", 30.14, import_timeout=30, timeout=10, per_probe=10)[0]
    'was killed: the import ran 30.0 s, over its time limit of 30 s'
    >>> timeout_text("probe", 10.2, import_timeout=30, timeout=10, per_probe=10)[0]
    'was killed after the call ran 10.0 s, over the time limit of 10 s'
    """
    # A process killed at its limit is reported as having run the limit: the tenths the
    # kill took after it depend on the machine's load, and the same code must get the
    # same feedback on every run (a resumed batch writes the same files as a fresh one).
    if phase == "import":
        return (
            f"was killed: the import ran {_at_most(spent, import_timeout):.1f} s, "
            f"over its time limit of {import_timeout:g} s",
            " (an endless loop or a blocking call at import, or a module that takes that long to compile:"
            " thousands of functions or lambdas?)",
        )
    if per_probe < timeout and spent >= per_probe - 0.05:
        limit, spent = f"the time limit of {per_probe:g} s per call", _at_most(spent, per_probe)
    elif per_probe < timeout or spent < timeout - 0.05:
        limit = f"the step's time limit of {timeout:g} s for all its calls"
    else:
        limit, spent = f"the time limit of {timeout:g} s", _at_most(spent, timeout)
    return (f"was killed after the call ran {spent:.1f} s, over {limit}", " (an endless loop or a blocking call?)")


def memory_killed(memory: str) -> str:
    """How a step ended that the kernel killed for its memory (``memory``: the budget in words).

    >>> memory_killed("1 GiB")
    "was killed by the kernel: the step's processes together used more than 1 GiB of memory"
    """
    return f"was killed by the kernel: the step's processes together used more than {memory} of memory"


def refused_results(errors: list[str]) -> str:
    """How a step ended whose results the fork server refused (the first three reasons).

    >>> refused_results(["bad nonce"])
    'sent results the grader refused (bad nonce)'
    """
    return "sent results the grader refused (" + "; ".join(errors[:3]) + ")"


def signal_text(number: int, cpu_seconds: float) -> str:
    """How a step ended that a signal killed (``cpu_seconds``: its CPU budget, for SIGXCPU).

    >>> signal_text(signal.SIGSEGV, 10)
    'crashed (segmentation fault: very deep recursion or memory exhausted?)'
    """
    if number == signal.SIGXCPU:
        return f"was stopped after using {cpu_seconds} s of CPU time"
    if number == signal.SIGSEGV:
        return "crashed (segmentation fault: very deep recursion or memory exhausted?)"
    if number == signal.SIGKILL:
        return "was killed (SIGKILL: out of memory, or killed from outside?)"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"was killed by {name}"


def exit_text(status: int | None) -> tuple[str, str]:
    """How a step ended that exited by itself (``None``: it ended without a word) and a likely cause.

    >>> exit_text(2)
    ('exited with status 2', ' (sys.exit/os._exit in your code?)')
    """
    if status is not None:
        return f"exited with status {status}", " (sys.exit/os._exit in your code?)"
    return "ended without reporting", ""


def limit_text(hits: tuple[str, ...], *, memory: str, pids: int, disk: str) -> str:
    """The message every check of a step gets when the step went over a budget of the step as a whole.

    ``memory`` and ``disk`` are the budgets in words, ``pids`` a number.

    >>> limit_text(("disk",), memory="1 GiB", pids=64, disk="64 MiB").split(": ")
    ['The step went over its disk budget', 'its code wrote more than 64 MiB of files in all (files outside \
its working folder are refused). The step loses its points.']
    """
    said = {
        "memory": f"its processes together used more than {memory} of memory (the kernel ended one of them)",
        "pids": f"its code tried to run more than {pids} processes and threads at once (a fork bomb?)",
        "disk": f"its code wrote more than {disk} of files in all (files outside its working folder are refused)",
    }
    words = [said[h] for h in hits if h in said] or [", ".join(hits)]
    budget = "budget" if len(words) == 1 else "budgets"
    names = " and ".join(h for h in hits if h in said) or "resource"
    return f"The step went over its {names} {budget}: {'; '.join(words)}. The step loses its points."


def follows_from(checks: list[str], seen: str) -> str:
    """A passed row's note: its failure on the learner's own route is charged to ``checks`` (``seen``: what failed).

    >>> print(follows_from(["step2/allowed_region", "step3/args_prefix"], "A successful call must end with ok True."))
    Follows from step2/allowed_region and step3/args_prefix: on your own route this failed (A successful call must end with ok True.), and it passes with the lab's versions of the functions those checks judge in place, so they count it; fix them first.
    """
    shown = checks[:3] + ([f"{len(checks) - 3} more"] if len(checks) > 3 else [])
    which = ", ".join(shown[:-1]) + " and " + shown[-1] if len(shown) > 1 else shown[0]
    return (
        f"Follows from {which}: on your own route this failed ({seen}), and it passes with the lab's "
        "versions of the functions those checks judge in place, so they count it; fix them first."
    )


def same_crash(first: str) -> str:
    """A row's whole feedback when its check met the same crash as an earlier row of its step (``first``).

    The row keeps its own points (0); it has no call, hint or replay line: its rule was never reached.

    >>> same_crash("step10/reason")
    'Not judged: the same crash as step10/reason (the same error, raised at the same place). Fix that crash first.'
    """
    return f"Not judged: the same crash as {first} (the same error, raised at the same place). Fix that crash first."
