"""Grade a submission: draw cases in the grading process, observe in a step child, judge here.

For each selected step, every selected check draws its probes from
``check_rng(seed, check.id)``; the step's probes go to one fresh step child
(forked by the fork server, ``grader.engine.server``), which sends back one
JSON observation per probe (identical ``fresh`` or ``reset`` probes of
several checks are sent once, see :func:`_draw_plan`); each check's judge then runs here,
on the probes and the observations. A check whose observations did not all arrive
(the process exited, timed out, was killed) or hold a ``probe_error`` fails
with a message naming the call and the reason, without judging.

The first step runs alone until the module imported: if it does not
import, every check fails with that one message and no other process
starts. The other steps then run in up to ``parallel`` step children,
several steps each in turn (a new import per step), or each step in a
child of its own when the import was slow (see
:func:`grader.engine.server.run_jobs`).

Example::

    >>> report = grade("solutions/tools.py", steps=[2], seed=7)
    >>> report.steps[2]["passed"], report.seed
    (True, 7)
"""
from __future__ import annotations

import functools
import json
import os
import secrets
import signal
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

from grader.engine.cgroups import size_words
from grader.engine.client import EngineClient, shared_client
from grader.engine.protocol import FATAL, IMPORT_ERROR, IMPORTED, OBS, Limits, StepJob, StepResult, encode_source
from grader.locate import read_submission, resolve_submission
from grader.checks.registry import Check, Probe, Verdict, check_rng, checks_for
from grader.report import STEPS, CheckResult, Report, new_seed

MAX_SOURCE_BYTES = 4 << 20
PARALLEL_ENV = "AGTOOL_PARALLEL_STEPS"
STEP_TIMEOUT = Limits().timeout  # seconds per step, the default of ``grade(timeout=)``
# The import's own bound (seconds), the same for check, the notebook and batch:
# it never shrinks with ``timeout``, so an honest slow import gets one verdict everywhere.
IMPORT_TIMEOUT = Limits().import_timeout
IMPORT_TIMEOUT_ENV = "AGTOOL_IMPORT_TIMEOUT"
INTERNAL_ERROR = "internal grader error (please report it, with the reproduce command): "
IMPORT_FAILED = "Your module could not be imported: "
WORKER_LOST = ("The grader's worker process stopped during this step ({}). Does your code kill or signal "
               "other processes? It must not; if it does not, please report this.")


@dataclass
class _Planned:
    """One check with the probes drawn for it and where they sit in the step's probe list."""

    check: Check
    probes: list[Probe]
    indices: list[int]  # where each of ``probes`` sits in the step job's probe list
    error: str = ""  # drawing the probes failed (a grader bug)


def grade(path, *, steps=None, only=None, seed=None, timeout=None, limits=None,
          engine: "EngineClient | None" = None, probe_function: "str | None" = None,
          parallel: "int | None" = None, within=None) -> Report:
    """Grade the ``tools.py`` that ``path`` designates and return a :class:`Report`.

    ``steps``/``only`` select checks (by step number / check id), ``seed``
    fixes the random cases (default: a fresh one, printed in the report),
    ``timeout`` is the wall-clock limit of a step's probes in seconds, after
    the module's import (default 10); the import has its own bound
    (``$AGTOOL_IMPORT_TIMEOUT``, default 30 s, imported once per step) and
    ``limits`` overrides these and other resource bounds (see
    ``grader.engine.protocol.Limits``).
    ``parallel`` is how many step processes may run at once (default
    ``$AGTOOL_PARALLEL_STEPS``, else 2 on a machine with 2+ cores); the first
    step always runs alone, so a module that does not import costs one
    process. ``engine`` is the engine client to use (default: this process's
    shared one); ``probe_function`` (``"module:function"``) replaces
    ``grader.engine.probes.run_probe``, for the engine's own tests.
    ``within`` is the class folder when grading one learner of many (a batch,
    the hub's home folders): links out of the learner's own folder and hard
    links are then refused (``grader.locate.check_within``).

    Raises ``SubmissionNotFound`` for a bad path, ``UnknownCheck`` for an
    unknown check id and ``ValueError`` for a bad step number or a
    selection that leaves no check.
    """
    started = time.monotonic()
    file = resolve_submission(path, within=within)
    steps = _valid_steps(steps)
    engine = engine or shared_client()
    engine.prestart()  # on a cold start it imports LangGraph while we load the checks
    checks = checks_for(steps, list(only) if only else None)
    if not checks:
        raise ValueError("no check matches this selection of steps and ids (see `agtool-grade checks`)")
    seed = new_seed() if seed is None else int(seed)
    limits = _with_import_timeout(Limits.from_value(limits, timeout=timeout), limits)
    parallel = default_parallel() if parallel is None else max(int(parallel), 1)
    source = _read_source(file, within)
    report = Report(seed=seed, path=str(file))
    replay = _ReplayCommand(file, seed, limits.timeout)

    by_step = {step: [c for c in checks if c.step == step] for step in sorted({c.step for c in checks})}
    order = list(by_step)
    planned = [_plan(by_step[step], seed) for step in order]
    source_b64 = encode_source(source)  # once: every step carries the same bytes
    jobs = [_step_job(step, probes, source_b64, limits, probe_function) for step, (_, probes) in zip(order, planned)]
    results, kills_always = _run_steps(engine, jobs, parallel)
    for step, (plan, _), result in zip(order, planned, results):
        if result.output:
            report.add_output(step, result.output)
        outcome = _StepOutcome(result, limits)
        report.limits = report.limits or limits_words(result, engine)
        failure = outcome.import_failure(file.name)
        if not failure and kills_always:
            failure = WORKER_LOST.format(result.infra_error)
        if failure:
            report.error = report.error or failure
            report.checks += [_failed(c, failure, replay) for c in by_step[step]]
        elif result.limits_hit:  # the step as a whole went over a budget: it loses every point
            over = limit_text(result.limits_hit, limits)
            report.checks += [_failed(c, over, replay) for c in by_step[step]]
        else:
            report.checks += [_judge(item, outcome, replay) for item in plan]
    report.elapsed = round(time.monotonic() - started, 3)
    return report


def _run_steps(engine: EngineClient, jobs: "list[StepJob]", parallel: int) -> "tuple[list[StepResult], bool]":
    """Run the step jobs; replay each step that lost the worker alone, so it costs only itself.

    The fork server runs the first step alone until it imported (a module
    that does not import fails every step with that one result), then the
    others in at most ``parallel`` step children, several steps each in turn
    (see :func:`grader.engine.server.run_jobs`). With several steps in
    flight when the worker process died, which one killed it is unknown;
    alone, the culprit loses its own step again and the others get their
    results. When every step lost it, the first is replayed alone first: if
    it loses the worker again, the module kills it whatever runs, and that
    is the run's one error (the second value is then True).
    """
    results = engine.run_many(jobs, parallel=parallel, chain=True)
    lost = [i for i, r in enumerate(results) if r.infra_error]
    if len(jobs) > 1 and lost and len(lost) == len(jobs):
        results[0] = engine.run(jobs[0])
        if results[0].infra_error:
            return results, True
        lost = lost[1:]
    if len(jobs) > 1:
        for i in lost:
            results[i] = engine.run(jobs[i])
    return results, False


def import_timeout_default() -> float:
    """The import's bound unless ``limits`` say: ``$AGTOOL_IMPORT_TIMEOUT`` seconds, else 30.

    >>> import_timeout_default() == float(os.environ.get(IMPORT_TIMEOUT_ENV) or IMPORT_TIMEOUT)
    True
    """
    value = os.environ.get(IMPORT_TIMEOUT_ENV, "").strip()
    try:
        seconds = float(value)
    except ValueError:
        return IMPORT_TIMEOUT
    return seconds if 0 < seconds < float("inf") else IMPORT_TIMEOUT


def _with_import_timeout(limits: Limits, given) -> Limits:
    """``limits`` with the environment's import bound, unless the caller set one."""
    if isinstance(given, Limits) or (isinstance(given, dict) and "import_timeout" in given):
        return limits
    return Limits.from_value({**limits.to_json(), "import_timeout": import_timeout_default()})


def default_parallel() -> int:
    """How many step processes run at once unless told: ``$AGTOOL_PARALLEL_STEPS``, else up to 2 cores."""
    value = os.environ.get(PARALLEL_ENV, "")
    if value.strip().isdigit() and int(value) > 0:
        return int(value)
    return max(1, min(2, os.cpu_count() or 1))


def _step_job(step: int, probes: "tuple[dict, ...]", source_b64: str, limits: Limits,
              probe_function: "str | None") -> StepJob:
    """The job of one step: the module's bytes (base64), its probes, a fresh nonce, the limits."""
    return StepJob(step=step, source_b64=source_b64, probes=tuple(probes),
                   nonce=secrets.token_hex(16), limits=limits, probe_function=probe_function)


def _valid_steps(steps) -> "list[int] | None":
    if not steps:
        return None
    if isinstance(steps, (int, str)):
        steps = [steps]
    chosen = []
    for step in steps:
        if isinstance(step, bool) or str(step).strip() not in {str(s) for s in STEPS}:
            raise ValueError(f"there is no step {step!r}; steps are numbered {STEPS[0]} to {STEPS[-1]}")
        chosen.append(int(step))
    return chosen


def _read_source(file: Path, within=None) -> bytes:
    # Never blocks on a FIFO swapped in for the file, never follows a link
    # swapped in after resolve_submission looked (issue 16.2, 16.4).
    source = read_submission(file, limit=MAX_SOURCE_BYTES, within=within)
    if len(source) > MAX_SOURCE_BYTES:
        # Graded like a module that fails to import: the learner sees why.
        return b"raise ImportError('tools.py is larger than 4 MiB; the grader does not read it')\n"
    return source


def _plan(step_checks: list[Check], seed: int) -> "tuple[list[_Planned], tuple[dict, ...]]":
    """The plan of one step (see :func:`_draw_plan`), drawn once per seed and selection.

    Probes depend on the seed and the checks only, never on the submission:
    a batch grades a whole class with one seed, so each worker draws them
    once instead of once per learner. Nothing downstream mutates them.
    """
    return _draw_plan(tuple(step_checks), seed)


@functools.lru_cache(maxsize=32)
def _draw_plan(step_checks: "tuple[Check, ...]", seed: int) -> "tuple[list[_Planned], tuple[dict, ...]]":
    """Draw every check's probes; return the plan and the step job's probe list.

    A ``fresh`` probe starts from the module as just imported, and a
    ``reset`` one from the step's module with what the probes may change put
    back (``CACHE`` cleared, spies and set names undone; its checks judge
    counts as differences), so what either observes does not depend on what
    ran before it: identical ones (same JSON for the step child, as checks
    that draw from ``rng.shared(...)`` make) run once and every check that
    asked for one gets its observation. Other probes see the state earlier
    probes left, so each runs where it stands.
    """
    plan: list[_Planned] = []
    job_probes: list[dict] = []
    shared_index: dict[str, int] = {}
    fresh_at: list[bool] = []  # per job probe: does it start from the module as just imported?
    for check in step_checks:
        try:
            probes = list(check.probes(check_rng(seed, check.id)))
            wire = [p.to_json() for p in probes]
            keys = [json.dumps(w, sort_keys=True) for w in wire]  # must travel as JSON
        except Exception:
            plan.append(_Planned(check, [], [], INTERNAL_ERROR + traceback.format_exc()))
            continue
        indices = []
        for probe, w, key in zip(probes, wire, keys):
            fresh = probe.params.get("fresh") is True
            shareable = fresh or probe.params.get("reset") is True
            if shareable and key in shared_index:
                indices.append(shared_index[key])
                continue
            indices.append(len(job_probes))
            if shareable:
                shared_index[key] = len(job_probes)
            job_probes.append(w)
            fresh_at.append(fresh)
        plan.append(_Planned(check, probes, indices))
    # Fresh probes first: the step child runs each in a fork of itself taken
    # right after its one import, which it can do only while no other probe has
    # changed it (grader.engine.child). The others keep their order among
    # themselves, and no fresh probe changes what they see.
    order = [i for i, fresh in enumerate(fresh_at) if fresh] + [i for i, fresh in enumerate(fresh_at) if not fresh]
    where = {old: new for new, old in enumerate(order)}
    for item in plan:
        item.indices = [where[i] for i in item.indices]
    # A tuple: every step job of this plan holds this very object, so the
    # engine client encodes it once per plan (grader.engine.protocol.encode_request).
    return plan, tuple(job_probes[i] for i in order)


class _StepOutcome:
    """What one step child reported, indexed for judging."""

    def __init__(self, result: StepResult, limits: Limits):
        self.result, self.limits = result, limits
        messages = result.messages
        self.types = {m["type"] for m in messages}
        self.obs = {m["index"]: m["obs"] for m in messages if m["type"] == OBS}
        self.import_error = next((m for m in messages if m["type"] == IMPORT_ERROR), None)
        self.fatal = next((m["message"] for m in messages if m["type"] == FATAL), "")
        self.first_missing = min(
            (i for i in range(len(self.obs) + 1) if i not in self.obs), default=0)

    def import_failure(self, file_name: str) -> str:
        """The one message every check gets when the module cannot be imported, else ``""``."""
        if self.result.infra_error or self.fatal or IMPORTED in self.types:
            return ""
        error = self.import_error
        if error:
            where = f" at {file_name} line {error['line']}" if error.get("line") else ""
            text = f"{IMPORT_FAILED}{error['error_type']}{where}: {error['message']}"
            if error.get("source"):
                text += f"\n    {error['line']} | {error['source']}"
            return text
        what, cause = self.death()
        return f"{IMPORT_FAILED}while importing it, the process {what}{cause}."

    def death(self) -> "tuple[str, str]":
        """How the step's process ended early (a sentence's predicate) and a likely cause."""
        r = self.result
        if r.timed_out:
            return timeout_text(r, self.limits)
        # Before the signal: the fork server SIGKILLs a step child whose results it refused.
        if r.channel_errors:
            return "sent results the grader refused (" + "; ".join(r.channel_errors[:3]) + ")", ""
        if r.signal is not None and "memory" in r.limits_hit:
            return ("was killed by the kernel: the step's processes together used more than "
                    f"{size_words(self.limits.memory_bytes)} of memory"), ""
        if r.signal is not None:
            return _signal_text(r.signal, self.limits), ""
        status = r.exit_status
        if status is not None:
            return f"exited with status {status}", " (sys.exit/os._exit in your code?)"
        return "ended without reporting", ""

    def problem(self, index: int, label: str) -> str:
        """Why probe ``index`` has no usable observation, or ``""``."""
        if self.result.infra_error:
            return WORKER_LOST.format(self.result.infra_error)
        if self.fatal:
            return INTERNAL_ERROR + self.fatal
        obs = self.obs.get(index)
        if obs is None:
            what, cause = self.death()
            if index == self.first_missing and self.result.timed_out and self.result.timeout_phase == "probe":
                return f"`{label}` {what.replace('was killed after the call ran', 'was stopped after it ran')}{cause}."
            if index == self.first_missing:
                return f"The step's process {what} during `{label}`{cause}."
            return f"Not run: the step's process {what} earlier in this step."
        if "probe_error" in obs:
            return _probe_error_text(obs, label)
        return ""


def _judge(item: _Planned, outcome: _StepOutcome, replay: "_ReplayCommand") -> CheckResult:
    if item.error:
        return _failed(item.check, item.error, replay)
    indices = item.indices
    for index, probe in zip(indices, item.probes):
        problem = outcome.problem(index, probe.label or probe.kind)
        if problem:
            return _failed(item.check, problem, replay, call=probe.label)
    try:
        verdict = item.check.judge(item.probes, [outcome.obs[i] for i in indices])
        if not isinstance(verdict, Verdict):
            raise TypeError(f"judge returned {type(verdict).__name__}, not Verdict")
    except Exception:
        return _failed(item.check, INTERNAL_ERROR + traceback.format_exc(), replay)
    if verdict.passed:
        return _result(item.check, passed=True)
    return _result(item.check, passed=False, call=verdict.call, expected=verdict.expected,
                   got=verdict.got, message=verdict.message, reproduce=replay.for_check(item.check.id))


def _failed(check: Check, message: str, replay: "_ReplayCommand", *, call: str = "") -> CheckResult:
    return _result(check, passed=False, call=call, message=message, reproduce=replay.for_check(check.id))


def _result(check: Check, *, passed: bool, **fields) -> CheckResult:
    return CheckResult(id=check.id, step=check.step, passed=passed, points=check.points if passed else 0,
                       max_points=check.points, title=check.title,
                       hint=check.hint, **fields)


REPLAY_PATH_WORD = 2  # index of the module's path among the words of a replay command


@dataclass(frozen=True)
class _ReplayCommand:
    file: Path
    seed: int
    timeout: float

    def for_check(self, check_id: str) -> str:
        """The shell command that replays exactly this check with the same cases.

        Quoted for ``self.file`` as it is: a caller that shows another path
        (batch: the learner's, not the scratch copy) rebuilds the line with
        :func:`grader.escape.shell_join`, never by editing this text.
        """
        from grader.escape import shell_join  # stdlib-only helper; kept local to this class

        parts = ["agtool-grade", "check", str(self.file), "--only", check_id, "--seed", str(self.seed)]
        if self.timeout != STEP_TIMEOUT:
            parts += ["--timeout", f"{self.timeout:g}"]
        return shell_join(parts, paths=[REPLAY_PATH_WORD])


def _probe_error_text(obs: dict, label: str) -> str:
    kind, detail = obs.get("probe_error", "?"), str(obs.get("message", ""))
    if kind == "SystemExit":
        return f"`{label}` raised SystemExit({detail}): a call of sys.exit() or exit() in your code?"
    if kind == "KeyboardInterrupt":
        return f"`{label}` raised KeyboardInterrupt; the lab's functions must not raise it."
    if kind in ("ObservationTooLarge", "UnserializableObservation"):
        return f"`{label}` returned something the grader could not take back ({kind}: {detail})."
    return f"`{label}` raised {kind}" + (f": {detail}" if detail else "") + "."


def timeout_text(result: StepResult, limits: Limits) -> "tuple[str, str]":
    """What was slow in a step that outlived its limit (a sentence's predicate) and a likely cause.

    >>> timeout_text(StepResult(timed_out=True, timeout_phase="import", phase_seconds=30.01), Limits())[0]
    'was killed while importing your module: the import ran 30.0 s, over its time limit of 30 s'
    >>> timeout_text(StepResult(timed_out=True, timeout_phase="probe", phase_seconds=10.0), Limits())[0]
    'was killed after the call ran 10.0 s, over the time limit of 10 s'
    """
    if result.timeout_phase == "import":
        return (f"was killed while importing your module: the import ran {result.phase_seconds:.1f} s, "
                f"over its time limit of {limits.import_timeout:g} s",
                " (an endless loop or a blocking call at import?)")
    spent = result.phase_seconds
    if limits.per_probe < limits.timeout and spent >= limits.per_probe - 0.05:
        limit = f"the time limit of {limits.per_probe:g} s per call"
    elif limits.per_probe < limits.timeout or spent < limits.timeout - 0.05:
        limit = f"the step's time limit of {limits.timeout:g} s for all its calls"
    else:
        limit = f"the time limit of {limits.timeout:g} s"
    return (f"was killed after the call ran {spent:.1f} s, over {limit}",
            " (an endless loop or a blocking call?)")


def limits_words(result: StepResult, engine) -> str:
    """The ``limits:`` line of a report: what held for the step as a whole, and the sandbox.

    >>> class E: sandbox_in_use = "bwrap"
    >>> limits_words(StepResult(limits="cpu nice 19"), E())
    'cpu nice 19; sandbox bwrap'
    >>> limits_words(StepResult(infra_error="gone"), E())
    ''
    """
    if not result.limits:
        return ""
    return f"{result.limits}; sandbox {getattr(engine, 'sandbox_in_use', 'none')}"


def limit_text(hits: "tuple[str, ...]", limits: Limits) -> str:
    """The message every check of a step gets when the step went over a budget of the step as a whole.

    >>> limit_text(("disk",), Limits()).split(": ")
    ['The step went over its disk budget', 'its code wrote more than 64 MiB of files in all (files outside \
its working folder are refused). The step loses its points.']
    """
    said = {
        "memory": f"its processes together used more than {size_words(limits.memory_bytes)} of memory "
                  "(the kernel ended one of them)",
        "pids": f"its code tried to run more than {limits.pids} processes and threads at once (a fork bomb?)",
        "disk": f"its code wrote more than {size_words(limits.disk_bytes)} of files in all "
                "(files outside its working folder are refused)",
    }
    words = [said[h] for h in hits if h in said] or [", ".join(hits)]
    budget = "budget" if len(words) == 1 else "budgets"
    names = " and ".join(h for h in hits if h in said) or "resource"
    return f"The step went over its {names} {budget}: {'; '.join(words)}. The step loses its points."


def _signal_text(number: int, limits: Limits) -> str:
    if number == signal.SIGXCPU:
        return f"was stopped after using {limits.cpu} s of CPU time"
    if number == signal.SIGSEGV:
        return "crashed (segmentation fault: very deep recursion or memory exhausted?)"
    if number == signal.SIGKILL:
        return "was killed (SIGKILL: out of memory, or killed from outside?)"
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = f"signal {number}"
    return f"was killed by {name}"

