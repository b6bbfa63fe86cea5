"""Grade a submission: draw cases in the grading process, observe in a step child, judge here.

For each selected step, every selected check draws its probes from
``check_rng(seed, check.id)``; the step's probes go to one fresh step child
(forked by the fork server, ``grader.engine.forkserver``), which sends back one
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
:func:`grader.engine.forkserver.run_jobs`).

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
import time
import traceback
from dataclasses import dataclass
from typing import NamedTuple

from grader import messages
from grader.checks._common import doubled_steps, real_route
from grader.checks.registry import Check, Probe, Verdict, check_rng, checks_for
from grader.engine.cgroups import size_words
from grader.engine.client import EngineClient, shared_client
from grader.engine.forkserver import SERVER_FAILED
from grader.engine.protocol import FATAL, IMPORT_ERROR, IMPORTED, OBS, Limits, StepJob, StepResult, encode_source
from grader.locate import MAX_SUBMISSION_BYTES, Submission
from grader.messages import INTERNAL_ERROR, REPLAY_PATH_WORD, WORKER_LOST  # noqa: F401 (importable from here too)
from grader.report import STEPS, CheckResult, Failure, FailureKind, Report, new_seed
from grader.settings import Settings, current, env_name

MAX_SOURCE_BYTES = MAX_SUBMISSION_BYTES  # a larger module is refused, not graded
PARALLEL_ENV = env_name("parallel_steps")
STEP_TIMEOUT = Limits().timeout  # seconds per step, the default of ``grade(timeout=)``
# The import's own bound (seconds), the same for check, the notebook and batch:
# it never shrinks with ``timeout``, so an honest slow import gets one verdict everywhere.
IMPORT_TIMEOUT = Limits().import_timeout
IMPORT_TIMEOUT_ENV = env_name("import_timeout")


@dataclass
class _Planned:
    """One check with the probes drawn for it and where they sit in the step's probe list."""

    check: Check
    probes: list[Probe]  # on the learner's own route (no doubles): what decides
    indices: list[int]  # where each of ``probes`` sits in the step job's probe list
    error: str = ""  # drawing the probes failed (a grader bug)
    doubled: list[Probe] | None = None  # the probes with the spec's doubles, when they have any: to attribute


def grade(
    submission,
    *,
    steps=None,
    only=None,
    seed=None,
    timeout=None,
    limits=None,
    engine: EngineClient | None = None,
    probe_function: str | None = None,
    reimport_seconds: float | None = None,
    parallel: int | None = None,
    within=None,
    settings: Settings | None = None,
) -> Report:
    """Grade a ``tools.py`` and return a :class:`Report`.

    ``submission`` is a :class:`grader.locate.Submission` (the module's bytes
    and the name the learner knows it by, which the report and its replay
    commands show) or a path, resolved and read as ``agtool-grade check``
    does: a file, or a folder holding ``tools.py`` or ``agtool/tools.py``.
    ``steps``/``only`` select checks (by step number / check id), ``seed``
    fixes the random cases (default: a fresh one, printed in the report),
    ``timeout`` is the wall-clock limit of a step's probes in seconds, after
    the module's import (default 10); the import has its own bound
    (``settings.import_timeout``, default 30 s, imported once per step) and
    ``limits`` overrides these and other resource bounds (see
    ``grader.engine.protocol.Limits``).
    ``parallel`` is how many step processes may run at once (default
    ``settings.parallel_steps``, else up to 2, one per core; the first step
    runs alone). ``engine`` is the engine client to use (default: this process's
    shared one, in ``settings.sandbox``'s mode); ``probe_function`` (``"module:function"``) replaces
    ``grader.engine.probes.run_probe`` and ``reimport_seconds`` the step child's
    ``REIMPORT_SECONDS`` (which path fresh probes take), for the engine's own tests.
    ``within`` is the class folder of a path (``grader.locate.check_within``
    refuses links out of the learner's folder). ``settings`` defaults to
    this process's (:func:`grader.settings.current`).

    Raises ``SubmissionNotFound`` for a bad path, ``UnknownCheck`` for an
    unknown check id and ``ValueError`` for a bad step number or a
    selection that leaves no check. A module over 4 MiB is refused: every
    check fails and the report's failure is of kind ``refused``.
    """
    started = time.monotonic()
    submission = Submission.of(submission, within=within)
    steps = _valid_steps(steps)
    settings = settings or current()
    engine = engine or shared_client(settings.sandbox or None)
    engine.prestart()  # on a cold start it imports LangGraph while we load the checks
    checks = checks_for(steps, list(only) if only else None)
    if not checks:
        raise ValueError("no check matches this selection of steps and ids (see `agtool-grade checks`)")
    seed = new_seed() if seed is None else int(seed)
    limits = _with_import_timeout(Limits.from_value(limits, timeout=timeout), limits, settings)
    report = Report(seed=seed, path=submission.name)
    replay = _ReplayCommand(submission.name, seed, limits.timeout)
    by_step = {step: [c for c in checks if c.step == step] for step in sorted({c.step for c in checks})}
    if len(submission.source) > MAX_SOURCE_BYTES:
        return _refused(report, messages.TOO_LARGE.format(size=size_words(MAX_SOURCE_BYTES)), checks, replay)
    parallel = default_parallel(settings) if parallel is None else max(int(parallel), 1)
    planned = [_plan(step_checks, seed) for step_checks in by_step.values()]
    source_b64 = encode_source(submission.source)  # once: every step carries the same bytes
    hooks = _EngineHooks(probe_function, reimport_seconds)
    jobs = [_step_job(step, probes, source_b64, limits, hooks) for step, (_, probes) in zip(by_step, planned)]
    results, kills_always = _run_steps(engine, jobs, parallel)
    report.isolation = isolation_words(engine)
    judged: set[str] = set()  # checks whose verdict came from their judge (not a step's death or budget)
    for (step, step_checks), (plan, _), result in zip(by_step.items(), planned, results):
        report.limits = report.limits or limits_words(result, engine)
        _add_step(
            report,
            step,
            step_checks,
            plan,
            _StepOutcome(result, limits),
            kills_always,
            replay,
            submission.file_name,
            judged,
        )
    _attribute(
        report,
        [item for plan, _ in planned for item in plan if item.check.id in judged],
        engine,
        source_b64,
        limits,
        hooks,
        parallel,
    )
    report.checks = same_crash_once(report.checks)
    report.elapsed = round(time.monotonic() - started, 3)
    return report


def _refused(report: Report, message: str, checks: list[Check], replay: _ReplayCommand) -> Report:
    """``report`` with every check failed for ``message``, a refused input: no step process ran."""
    report.failure = Failure(FailureKind.REFUSED, message)
    report.checks += [_failed(c, message, replay) for c in checks]
    return report


def _add_step(
    report: Report,
    step: int,
    step_checks: list[Check],
    plan: list[_Planned],
    outcome: _StepOutcome,
    kills_always: bool,
    replay: _ReplayCommand,
    file_name: str,
    judged: set[str] | None = None,
) -> None:
    """Add one step's output and check results to ``report``.

    A module that does not import, or that kills the worker whatever runs,
    fails every check of the step with that one message, which is also the
    report's failure (the learner's); a step over a budget of the step as a
    whole loses every point; otherwise each check is judged, and a judge (or
    a probe drawing) that raises is the grader's failure: no grade.
    """
    result = outcome.result
    if result.output:
        report.add_output(step, result.output)
    if result.infra_error.startswith(SERVER_FAILED):  # the fork server's own error (a full disk...): no grade
        message = INTERNAL_ERROR + result.infra_error
        report.failure = report.failure or Failure(FailureKind.GRADER, message)
        report.checks += [_failed(c, message, replay) for c in step_checks]
        return
    failure = outcome.import_failure(file_name)
    if not failure and kills_always:
        failure = WORKER_LOST.format(result.infra_error)
    if failure:
        if report.failure is None:
            report.failure = Failure(FailureKind.LEARNER, failure)
        report.checks += [_failed(c, failure, replay) for c in step_checks]
    elif result.limits_hit:  # the step as a whole went over a budget: it loses every point
        over = limit_text(result.limits_hit, outcome.limits)
        report.checks += [_failed(c, over, replay) for c in step_checks]
    else:
        bugs: list[str] = []
        report.checks += [_judge(item, outcome, replay, bugs, judged) for item in plan]
        if outcome.fatal:  # the step child's own preparation failed (a full disk...): no grade, graded again
            bugs.insert(0, INTERNAL_ERROR + outcome.fatal)
        if bugs and report.failure is None:  # the grader's own code failed: this is no grade
            report.failure = Failure(FailureKind.GRADER, bugs[0])


def _run_steps(engine: EngineClient, jobs: list[StepJob], parallel: int) -> tuple[list[StepResult], bool]:
    """Run the step jobs; replay each step that lost the worker alone, so it costs only itself.

    The fork server runs the first step alone until it imported (a module
    that does not import fails every step with that one result), then the
    others in at most ``parallel`` step children, several steps each in turn
    (see :func:`grader.engine.forkserver.run_jobs`). With several steps in
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


def import_timeout_default(settings: Settings | None = None) -> float:
    """The import's bound unless ``limits`` say: ``settings.import_timeout`` (``$AGTOOL_IMPORT_TIMEOUT``), else 30.

    >>> import_timeout_default(Settings(import_timeout=5.0)), import_timeout_default(Settings())
    (5.0, 30.0)
    """
    return (settings or current()).import_timeout


def _with_import_timeout(limits: Limits, given, settings: Settings | None = None) -> Limits:
    """``limits`` with the settings' import bound, unless the caller set one."""
    if isinstance(given, Limits) or (isinstance(given, dict) and "import_timeout" in given):
        return limits
    return Limits.from_value({**limits.to_json(), "import_timeout": import_timeout_default(settings)})


def default_parallel(settings: Settings | None = None) -> int:
    """How many step processes run at once unless told: ``settings.parallel_steps``, else up to 2 cores.

    >>> default_parallel(Settings(parallel_steps=3)), 1 <= default_parallel(Settings()) <= 2
    (3, True)
    """
    chosen = (settings or current()).parallel_steps
    return chosen if chosen else max(1, min(2, os.cpu_count() or 1))


class _EngineHooks(NamedTuple):
    """What the engine's own tests may change in every step job of a grading (``None``: the engine's default)."""

    probe_function: str | None = None
    reimport_seconds: float | None = None


def _step_job(step: int, probes: tuple[dict, ...], source_b64: str, limits: Limits, hooks: _EngineHooks) -> StepJob:
    """The job of one step: the module's bytes (base64), its probes, a fresh nonce, the limits."""
    return StepJob(
        step=step,
        source_b64=source_b64,
        probes=tuple(probes),
        nonce=secrets.token_hex(16),
        limits=limits,
        probe_function=hooks.probe_function,
        reimport_seconds=hooks.reimport_seconds,
    )


def _valid_steps(steps) -> list[int] | None:
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


def _plan(step_checks: list[Check], seed: int) -> tuple[list[_Planned], tuple[dict, ...]]:
    """The plan of one step (see :func:`_draw_plan`), drawn once per seed and selection.

    Probes depend on the seed and the checks only, never on the submission:
    a batch grades a whole class with one seed, so each worker draws them
    once instead of once per learner. Nothing downstream mutates them.
    """
    return _draw_plan(tuple(step_checks), seed)


# 64 plans: every step's on five seeds. The gates grade each module on two or three seeds in turn
# (11 or 33 plans a module), which 32 thrashed on three; a plan is about 20 KB of probes as JSON.
@functools.lru_cache(maxsize=64)
def _draw_plan(step_checks: tuple[Check, ...], seed: int) -> tuple[list[_Planned], tuple[dict, ...]]:
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
    for check in step_checks:
        try:
            drawn = list(check.probes(check_rng(seed, check.id)))
            real = [real_route(p) for p in drawn]
            probes = [r or p for r, p in zip(real, drawn)]
            plan.append(_Planned(check, probes, [], doubled=drawn if any(real) else None))
        except Exception:
            plan.append(_Planned(check, [], [], INTERNAL_ERROR + traceback.format_exc()))
    try:
        placed, job = _pack([item.probes for item in plan])
    except Exception:  # a probe that cannot travel as JSON: a grader bug, every check of the step says so
        error = INTERNAL_ERROR + traceback.format_exc()
        return [_Planned(item.check, [], [], error) for item in plan], ()
    for item, indices in zip(plan, placed):
        item.indices = indices
    return plan, job


def _pack(probe_lists: list[list[Probe]]) -> tuple[list[list[int]], tuple[dict, ...]]:
    """One step job's probe list for ``probe_lists`` (one list a check), and where each probe sits in it.

    Identical ``fresh`` or ``reset`` probes are sent once (see :func:`_draw_plan`).

    >>> p = Probe("calls", {"operations": [], "reset": True})
    >>> _pack([[p], [p, Probe("calls", {"operations": []})]])[0]
    [[0], [0, 1]]
    """
    job_probes: list[dict] = []
    shared_index: dict[str, int] = {}
    fresh_at: list[bool] = []  # per job probe: does it start from the module as just imported?
    placed: list[list[int]] = []
    for probes in probe_lists:
        indices = []
        for probe in probes:
            wire = probe.to_json()
            key = json.dumps(wire, sort_keys=True)  # must travel as JSON
            fresh = probe.params.get("fresh") is True
            shareable = fresh or probe.params.get("reset") is True
            if shareable and key in shared_index:
                indices.append(shared_index[key])
                continue
            indices.append(len(job_probes))
            if shareable:
                shared_index[key] = len(job_probes)
            job_probes.append(wire)
            fresh_at.append(fresh)
        placed.append(indices)
    # Fresh probes first: the step child runs each in a fork of itself taken
    # right after its one import, which it can do only while no other probe has
    # changed it (grader.engine.child). The others keep their order among
    # themselves, and no fresh probe changes what they see.
    order = [i for i, fresh in enumerate(fresh_at) if fresh] + [i for i, fresh in enumerate(fresh_at) if not fresh]
    where = {old: new for new, old in enumerate(order)}
    # A tuple: every step job of this plan holds this very object, so the
    # engine client encodes it once per plan (grader.engine.protocol.encode_request).
    return [[where[i] for i in indices] for indices in placed], tuple(job_probes[i] for i in order)


class _StepOutcome:
    """What one step child reported, indexed for judging."""

    def __init__(self, result: StepResult, limits: Limits):
        self.result, self.limits = result, limits
        messages = result.messages
        self.types = {m["type"] for m in messages}
        self.obs = {m["index"]: m["obs"] for m in messages if m["type"] == OBS}
        self.import_error = next((m for m in messages if m["type"] == IMPORT_ERROR), None)
        self.fatal = next((m["message"] for m in messages if m["type"] == FATAL), "")
        self.first_missing = min((i for i in range(len(self.obs) + 1) if i not in self.obs), default=0)

    def import_failure(self, file_name: str) -> str:
        """The one message every check gets when the module cannot be imported, else ``""``."""
        if self.result.infra_error or self.fatal or IMPORTED in self.types:
            return ""
        if self.import_error:
            return messages.import_error(self.import_error, file_name)
        return messages.import_death(*self.death())

    def death(self) -> tuple[str, str]:
        """How the step's process ended early (a sentence's predicate) and a likely cause."""
        r, limits = self.result, self.limits
        if r.timed_out:
            return messages.timeout_text(
                r.timeout_phase,
                r.phase_seconds,
                import_timeout=limits.import_timeout,
                timeout=limits.timeout,
                per_probe=limits.per_probe,
            )
        # Before the signal: the fork server SIGKILLs a step child whose results it refused.
        if r.channel_errors:
            return messages.refused_results(r.channel_errors), ""
        if r.signal is not None and "memory" in r.limits_hit:
            return messages.memory_killed(size_words(limits.memory_bytes)), ""
        if r.signal is not None:
            return messages.signal_text(r.signal, limits.cpu), ""
        return messages.exit_text(r.exit_status)

    def never_ran(self, index: int) -> bool:
        """Probe ``index`` never started: the step's process ended (a loop stopped, a crash) during an earlier one."""
        return not (self.result.infra_error or self.fatal) and index not in self.obs and index != self.first_missing

    def problem(self, index: int, label: str) -> str:
        """Why probe ``index`` has no usable observation, or ``""``."""
        if self.result.infra_error:
            return WORKER_LOST.format(self.result.infra_error)
        if self.fatal:
            return INTERNAL_ERROR + self.fatal
        obs = self.obs.get(index)
        if obs is None:
            what, cause = self.death()
            stopped = self.result.timed_out and self.result.timeout_phase == "probe"
            return messages.missing_observation(
                label, what, cause, first=index == self.first_missing, stopped_in_call=stopped
            )
        if "probe_error" in obs:
            return messages.probe_error(obs, label)
        return ""


def _judge(
    item: _Planned, outcome: _StepOutcome, replay: _ReplayCommand, bugs: list[str], judged: set[str] | None = None
) -> CheckResult:
    """The check's result from its observations; an exception of the grader's own code is added to ``bugs``.

    ``judged`` collects the ids of the checks whose verdict came from their judge.
    """
    if item.error:
        bugs.append(item.error)
        return _failed(item.check, item.error, replay)
    indices = item.indices
    for index, probe in zip(indices, item.probes):
        problem = outcome.problem(index, probe.label or probe.kind)
        if problem and outcome.never_ran(index):  # an earlier call ended the step: nothing here to replay or hint
            return _not_judged(item.check, problem)
        if problem:
            return _failed(item.check, problem, replay, call=probe.label)
    try:
        verdict = item.check.judge(item.probes, [outcome.obs[i] for i in indices])
        if not isinstance(verdict, Verdict):
            raise TypeError(f"judge returned {type(verdict).__name__}, not Verdict")
    except Exception:
        bugs.append(INTERNAL_ERROR + traceback.format_exc())
        return _failed(item.check, bugs[-1], replay)
    if judged is not None:
        judged.add(item.check.id)
    if verdict.passed:
        return _result(item.check, passed=True)
    return _result(
        item.check,
        passed=False,
        call=verdict.call,
        expected=verdict.expected,
        got=verdict.got,
        message=verdict.message,
        reproduce=replay.for_check(item.check.id),
    )


def _attribute(
    report: Report,
    candidates: list[_Planned],
    engine: EngineClient,
    source_b64: str,
    limits: Limits,
    hooks: _EngineHooks,
    parallel: int,
) -> None:
    """Charge each failure seen on the learner's own route to the step at fault (in ``report``).

    A check that failed on the module as wired, and whose probes put the spec's
    doubles in other steps' names, runs once more with the doubles in. When it
    passes there, the failure came from a function it does not judge: if a step
    of those functions failed a check of its own, the failure is charged there
    and this check keeps its points, its row saying so ("follows from ...");
    otherwise the module's own combination is wrong and the failure stays here.
    A correct module has nothing to attribute and pays for no second run.
    """
    failed = {result.id for result in report.checks if not result.passed}
    items = [item for item in candidates if item.doubled and item.check.id in failed]
    if not items:
        return
    by_step: dict[int, list[_Planned]] = {}
    for item in items:
        by_step.setdefault(item.check.step, []).append(item)
    packed = {step: _pack([item.doubled or [] for item in step_items]) for step, step_items in by_step.items()}
    jobs = [_step_job(step, job, source_b64, limits, hooks) for step, (_, job) in packed.items()]
    results, _ = _run_steps(engine, jobs, parallel)
    cleared: dict[str, list[int]] = {}  # check id -> the other steps a pass with doubles points to
    for (_step, step_items), (placed, _), result in zip(by_step.items(), packed.values(), results):
        outcome = _StepOutcome(result, limits)
        if result.limits_hit or outcome.import_failure(""):
            continue
        for item, indices in zip(step_items, placed):
            doubled = _Planned(item.check, item.doubled or [], indices)
            verdict = _judge(doubled, outcome, _ReplayCommand("", 0, 0.0), [])
            if verdict.passed:
                cleared[item.check.id] = sorted(doubled_steps(doubled.probes))
    # Charged where a check of a step the stand-ins stood in for failed (and stays failed): another step's,
    # or another check of this one (a repair slip that a run of handle meets, which repair_limit counts).
    failed_rows = [r for r in report.checks if not r.passed and r.id not in cleared]
    for i, result in enumerate(report.checks):
        charged = [r.id for r in failed_rows if r.step in cleared.get(result.id, ()) and r.id != result.id]
        if charged:
            report.checks[i] = _result_of_id(result, messages.follows_from(charged, result.message))


def _result_of_id(failed: CheckResult, message: str) -> CheckResult:
    """``failed`` with its points: its failure follows from another step's (``message`` says which)."""
    return CheckResult(
        id=failed.id,
        step=failed.step,
        passed=True,
        points=failed.max_points,
        max_points=failed.max_points,
        title=failed.title,
        hint=failed.hint,
        message=message,
    )


def crash_of(result: CheckResult) -> str:
    """What a failed check saw raised in the learner's code (its ``got`` or message, with the line), else ``""``.

    >>> crash_of(CheckResult("step1/x", 1, False, 0, 1, "x", got="raised ValueError: no (line 9, in f)"))
    'raised ValueError: no (line 9, in f)'
    """
    if result.passed:
        return ""
    if result.got.startswith("raised "):
        return result.got
    return result.message if result.message.startswith("Your code raised ") else ""


def same_crash_once(results: list[CheckResult]) -> list[CheckResult]:
    """``results`` with one row per crash of a step: a later check that met the same crash is not judged.

    Checks of a step share inputs, so one exception raised at one line of the
    learner's code (``int('²')`` inside ``explain``) reaches several of them.
    The first such row keeps its call, hint and replay line; each later one
    is "not judged: the same crash" (no call, hint or replay line: its own
    rule was never reached), with its points as they were (0).

    >>> crash = "raised ValueError: bad (line 9, in f)"
    >>> rows = same_crash_once([CheckResult(f"step10/{n}", 10, False, 0, 1, n, call="f(1)", got=crash, hint="h",
    ...                                     reproduce="r") for n in "ab"])
    >>> [(r.id, r.got, r.hint, r.reproduce) for r in rows]
    [('step10/a', 'raised ValueError: bad (line 9, in f)', 'h', 'r'), ('step10/b', '', '', '')]
    >>> rows[1].message
    'Not judged: the same crash as step10/a (the same error, raised at the same place). Fix that crash first.'
    """
    first: dict[tuple[int, str], str] = {}
    out = []
    for result in results:
        crash = crash_of(result)
        key = (result.step, crash)
        if crash and key in first:
            result = _not_judged_result(result, messages.same_crash(first[key]))
        elif crash:
            first[key] = result.id
        out.append(result)
    return out


def _not_judged(check: Check, message: str) -> CheckResult:
    """A check whose rule was never reached: 0 points, the reason, and no call, hint or replay line."""
    return _not_judged_result(_result(check, passed=False), message)


def _not_judged_result(result: CheckResult, message: str) -> CheckResult:
    return CheckResult(
        id=result.id,
        step=result.step,
        passed=False,
        points=0,
        max_points=result.max_points,
        title=result.title,
        message=message,
    )


def _failed(check: Check, message: str, replay: _ReplayCommand, *, call: str = "") -> CheckResult:
    return _result(check, passed=False, call=call, message=message, reproduce=replay.for_check(check.id))


def _result(check: Check, *, passed: bool, **fields) -> CheckResult:
    return CheckResult(
        id=check.id,
        step=check.step,
        passed=passed,
        points=check.points if passed else 0,
        max_points=check.points,
        title=check.title,
        hint=check.hint,
        **fields,
    )


@dataclass(frozen=True)
class _ReplayCommand:
    name: str  # the module as the learner knows it (the submission's name)
    seed: int
    timeout: float

    def for_check(self, check_id: str) -> str:
        """The shell line that replays exactly this check on the same cases (:func:`grader.messages.replay_command`)."""
        return messages.replay_command(str(self.name), check_id, self.seed, self.timeout, default_timeout=STEP_TIMEOUT)


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


def isolation_words(engine) -> str:
    """The ``isolation`` of a report: the sandbox and account the engine's fork server ran learner code under.

    >>> from grader.engine.sandbox import Isolation
    >>> class E: isolation = Isolation("none", "root")
    >>> isolation_words(E()).split(" (")[0], isolation_words(object())
    ('none', '')
    """
    isolation = getattr(engine, "isolation", None)
    return isolation.words() if isolation is not None else ""


def limit_text(hits: tuple[str, ...], limits: Limits) -> str:
    """The message every check of a step gets when the step went over a budget of the step as a whole.

    >>> limit_text(("disk",), Limits()).split(": ")[0]
    'The step went over its disk budget'
    """
    return messages.limit_text(
        hits, memory=size_words(limits.memory_bytes), pids=limits.pids, disk=size_words(limits.disk_bytes)
    )
