"""The capstone's layers table, reported the way tool-calling research reports it.

Seven configurations, each one layer more than the last, run a fixed task
set (:func:`agtool_lab.noisy.chat.draw_tasks`) through the learner's own
module, with a model in ``pick`` (the seeded stand-in or an endpoint,
:mod:`agtool_lab.noisy.endpoint`):

=================  ===========================================================
naive              the model's call goes straight to ``TOOLS[tool]["fn"]``
+ validation       through ``call_tool`` (steps 2-4); a refusal ends the task
+ coercion         ``coerce`` first (step 9)
+ errors as        a refusal goes back to the model as a tool result holding
  prompts          ``explain``'s message and suggestion (step 10); it may try
                   again, within :data:`CALL_BUDGET` model calls
+ repair           the last call that the budget allows goes through
                   ``handle`` (step 7): the learner's repairs, disclosed
+ cache            ``CACHE`` is kept between tasks and trials (step 5)
+ identity         the model is offered ``product`` instead of ``sku`` and
  resolution       ``resolve_sku`` turns it into one sku or a question (step 11)
=================  ===========================================================

Each task runs ``trials`` times (independent draws of the model, as
sampling would give), so the table can give tau-bench's pass^k: the chance
that k runs of a task all succeed, estimated without bias from ``n`` trials
with ``c`` successes as C(c, k) / C(n, k), averaged over tasks. Every rate
has a 95% Wilson interval.

Outcomes of one run: ``right`` (the order's rows), ``wrong_entity`` (rows
served for a valid but different region or sku), ``wrong`` (other rows,
served as if right), ``refused``, ``asked`` (a question back),
``crashed`` (the learner's code raised), and the model's own failures:
``prose`` (an answer instead of a call), ``malformed`` (arguments that are
not a JSON object, or a tool that does not exist), ``timeout``,
``rate_limited``, ``endpoint_error``.

Example::

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import SeededBackend
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 10)
    >>> runs = run_bench(tools, SeededBackend(tasks, error_rate=0.3), tasks, trials=2)
    >>> list(layer_metrics(runs).index) == list(CONFIG_LABELS.values())
    True
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from types import ModuleType

import pandas as pd

from agtool_lab.noisy.chat import Task
from agtool_lab.noisy.endpoint import Reply, tool_schemas
from agtool_lab.noisy.model import LabData, right_rows
from agtool_lab.noisy.routes import _clear_cache, _model_in_pick, _tool_runs

__all__ = [
    "CALL_BUDGET",
    "CHAPTER_FIGURES",
    "CONFIGS",
    "CONFIG_LABELS",
    "FAILURES",
    "bench_reading",
    "chapter_table",
    "check_bench_ready",
    "cost_table",
    "failure_table",
    "format_table",
    "layer_metrics",
    "pass_hat_k",
    "plot_success_sweep",
    "run_bench",
    "success_sweep",
    "wilson",
]

# Model calls one task may spend: the first call and one retry (the chapters bound repair at one attempt).
CALL_BUDGET = 2
LAYERS = ("validation", "coercion", "prompts", "repair", "cache", "identity")
CONFIGS: dict[str, frozenset[str]] = {name: frozenset(LAYERS[:i]) for i, name in enumerate(("naive", *LAYERS))}
CONFIG_LABELS = {
    "naive": "naive",
    "validation": "+ validation",
    "coercion": "+ coercion",
    "prompts": "+ errors as prompts",
    "repair": "+ repair",
    "cache": "+ cache",
    "identity": "+ identity resolution",
}
FAILURES = {
    "prose": "the model answered in prose, not with a tool call",
    "malformed": "the tool call was malformed: its arguments not a JSON object, or a tool that does not exist",
    "timeout": "the endpoint did not answer within the time-out",
    "rate_limited": "the endpoint kept answering 429 (rate limit) after its Retry-After waits",
    "endpoint_error": "the endpoint failed (unreachable, an HTTP error, or not a chat completion)",
    "crashed": "the learner's code raised",
}
# The chapters' measurements, for the notebook's side-by-side table.
CHAPTER_FIGURES = {
    "argument accuracy": (0.91, 0.98),
    "identity failures reaching execution": (0.043, 0.0),
    "first-retry success (bare reason, with correction)": (0.58, 0.94),
    "end-to-end tool correctness": (0.86, 0.94),
}
SYSTEM_PROMPT = (
    "You check warehouse stock for the person you talk to. Answer every request with exactly one call "
    "of one of the tools. When a tool result says the call failed, read it and call again."
)
_NEEDED = (
    "TOOLS",
    "STOCK",
    "REGIONS",
    "MAX_ROWS",
    "CALLS",
    "call_tool",
    "validate_args",
    "coerce",
    "explain",
    "handle",
    "can_repair",
    "pick",
    "resolve_sku",
    "PRODUCTS",
)


def check_bench_ready(module: ModuleType) -> str:
    """``""`` when every layer the table needs is in the module, else one sentence naming what is missing.

    >>> from agtool_lab.load import load_module
    >>> check_bench_ready(load_module("solutions/tools.py"))
    ''
    """
    missing = [name for name in _NEEDED if not hasattr(module, name)]
    if missing:
        return f"Your module has no {', '.join(missing)} yet (steps 1-11)."
    try:
        tool_schemas(module, by_product=True)
        module.coerce("stock_lookup", {"limit": " 1 "})
        module.explain("stock_lookup", {})
        module.resolve_sku("a query no product has")
    except NotImplementedError as exc:
        return f"Not written yet: {exc}"
    except Exception as exc:  # learner code: one line, never a traceback
        return f"Your module raised {type(exc).__name__}: {exc}"
    return ""


# --------------------------------------------------------------------------
# One task, one trial, one configuration
# --------------------------------------------------------------------------


@dataclass
class _Step:
    answered: bool = False
    rows: list | None = None
    acted: tuple[str, dict] | None = None
    error: str = ""
    feedback: dict | None = None
    asked: bool = False


def _resolve(module, args: dict) -> tuple[dict, _Step | None]:
    product = args.pop("product", None)
    if "sku" in args or product is None:
        return args, None
    found = module.resolve_sku(str(product))
    if not isinstance(found, dict) or found.get("kind") != "resolved":
        kind = found.get("kind", "not_found") if isinstance(found, dict) else "not_found"
        labels = [c.get("label") for c in (found.get("candidates") or [])] if isinstance(found, dict) else []
        message = (
            f"{product!r} matches several products: {'; '.join(map(str, labels))}. Ask the person which one."
            if kind == "ambiguous"
            else f"No product matches {product!r}."
        )
        # Several products match: a question for the person, not for another try. None: the model may look again.
        feedback = None if kind == "ambiguous" else {"ok": False, "error": kind, "message": message}
        return args, _Step(error=f"identity:{kind}", asked=True, feedback=feedback)
    return {"sku": found["sku"], **args}, None


def _through_handle(module, tool: str, args: dict) -> _Step:
    from agtool_lab.noisy.model import ModelCall

    with _model_in_pick(module, ModelCall(tool, dict(args))):
        result = module.handle({**args, "tool": tool})
    if not isinstance(result, dict):
        raise TypeError(f"handle returned {type(result).__name__}")
    calls = [c for c in (result.get("calls") or []) if isinstance(c, dict)]
    last = calls[-1] if calls else {"tool": tool, "args": args}
    errors = result.get("errors") or []
    ok = bool(result.get("ok"))
    return _Step(
        answered=ok,
        rows=list(result.get("rows") or []) if ok else None,
        acted=(str(last.get("tool", tool)), dict(last.get("args") or {})) if ok else None,
        error="" if ok else str(errors[-1] if errors else "refused"),
    )


def _execute(module, layers: frozenset[str], tool: str, raw: dict, *, last: bool) -> tuple[_Step, bool]:
    """Run one model call through the configuration; also whether the contract refuses it as written."""
    args = dict(raw)
    if "identity" in layers:
        args, asked = _resolve(module, args)
        if asked is not None:
            return asked, False
    invalid = bool(module.validate_args(tool, args))
    if "validation" not in layers:
        entry = module.TOOLS.get(tool)
        try:
            rows = list(entry["fn"](**args)["rows"]) if entry else []
        except Exception:  # the naive agent swallows it and answers "no stock"
            rows = []
        return _Step(answered=True, rows=rows, acted=(tool, args)), invalid
    if "coercion" in layers:
        args, _ledger = module.coerce(tool, args)
        args = dict(args)
    result = module.call_tool(tool, args)
    if "repair" in layers and last and not result.get("ok") and module.can_repair(str(result.get("error", ""))):
        # handle runs the same call again, with the learner's repairs: a refused call ran no body, so only a
        # call refused after its body ran (result:too_big) runs it twice. Asking handle only for reasons it can
        # repair keeps its graph (tens of milliseconds a run) off the path of every other call.
        return _through_handle(module, tool, args), invalid
    if result.get("ok"):
        rows = list((result.get("value") or {}).get("rows") or [])
        return _Step(answered=True, rows=rows, acted=(tool, args)), invalid
    error = str(result.get("error", ""))
    step = _Step(error=error)
    if "prompts" in layers:
        feedback: dict = {"ok": False, "tool": tool, "error": error}
        if error.startswith("args:"):
            explained = module.explain(tool, args)
            feedback |= {"message": explained.get("message", ""), "suggestion": explained.get("suggestion")}
        else:
            feedback["message"] = f"The call {tool}({json.dumps(args)}) failed: {error}."
        step.feedback = feedback
    return step, invalid


def _outcome(step: _Step, task: Task, data: LabData) -> str:
    if step.asked:
        return "asked"
    if not step.answered:
        return "refused"
    truth = right_rows(data, task.order)
    if [(r.get("bin"), r.get("count")) for r in step.rows or [] if isinstance(r, dict)] == [
        (r["bin"], r["count"]) for r in truth
    ] and len(step.rows or []) == len(truth):
        return "right"
    _tool, args = step.acted or ("", {})
    valid_entity = args.get("region") in data.regions and args.get("sku") in data.skus
    meant = (args.get("sku"), args.get("region")) == (task.order["sku"], task.order["region"])
    return "wrong_entity" if valid_entity and not meant else "wrong"


def _assistant(reply: Reply) -> dict:
    call = reply.call
    assert call is not None
    arguments = json.dumps(call.arguments) if call.arguments is not None else call.raw
    function = {"name": call.name, "arguments": arguments}
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": reply.call_id, "type": "function", "function": function}],
    }


def _trial(module, backend, task: Task, trial: int, config: str, *, seed: int, data: LabData, budget: int) -> dict:
    layers = CONFIGS[config]
    budget = max(1, budget) if "prompts" in layers else 1
    schemas = tool_schemas(module, by_product="identity" in layers)
    messages: list[dict] = [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": task.text}]
    if "cache" not in layers:
        _clear_cache(module)  # a remembered answer must not hide a call outside the cache's own row
    before = _tool_runs(module)
    record = {
        "config": config,
        "task": task.id,
        "trial": trial,
        "category": task.category,
        "trap": task.trap,
        "model_calls": 0,
        "tokens": None,
        "calls_written": 0,
        "invalid_calls": 0,
        "first_failed": False,
        "detail": "",
    }
    outcome = "refused"
    for attempt in range(budget):
        reply = backend.complete(messages, schemas, seed=seed * 1_000_003 + trial)
        record["model_calls"] += 1
        if reply.tokens is not None:
            record["tokens"] = (record["tokens"] or 0) + reply.tokens
        if reply.failure:
            outcome, record["detail"] = reply.failure, reply.detail
            break
        if reply.call is None:
            outcome, record["detail"] = "prose", reply.text[:200]
            break
        record["calls_written"] += 1
        messages.append(_assistant(reply))
        if reply.call.arguments is None or reply.call.name not in module.TOOLS:
            record["invalid_calls"] += 1
            record["first_failed"] |= attempt == 0
            outcome = "malformed"
            what = "not a JSON object" if reply.call.arguments is None else f"for an unknown tool {reply.call.name!r}"
            record["detail"] = f"arguments {what}: {reply.call.raw[:120]}"
            feedback = {"ok": False, "error": "malformed", "message": f"The tool call's arguments were {what}."}
        else:
            try:
                step, invalid = _execute(
                    module, layers, reply.call.name, reply.call.arguments, last=attempt == budget - 1
                )
            except Exception as exc:  # learner code: counted, never raised into the notebook
                outcome, record["detail"] = "crashed", f"{type(exc).__name__}: {exc}"
                break
            record["invalid_calls"] += invalid
            outcome = _outcome(step, task, data)
            record["first_failed"] |= attempt == 0 and (invalid or not step.answered)
            if step.answered or step.feedback is None or "prompts" not in layers:
                break
            feedback = step.feedback
        if "prompts" not in layers:
            break
        messages.append({"role": "tool", "tool_call_id": reply.call_id, "content": json.dumps(feedback, default=repr)})
    record["outcome"] = outcome
    record["tool_runs"] = _tool_runs(module) - before
    return record


def run_bench(
    module: ModuleType,
    backend,
    tasks: Sequence[Task],
    *,
    trials: int = 4,
    seed: int = 0,
    configs: Sequence[str] = tuple(CONFIGS),
    budget: int = CALL_BUDGET,
) -> pd.DataFrame:
    """Every task ``trials`` times through every configuration; one row per run.

    ``budget`` is how many model calls a task may spend when errors go back as prompts (the
    configurations without them make one).

    Columns: ``config``, ``task``, ``trial``, ``category``, ``trap``,
    ``outcome``, ``model_calls``, ``tokens`` (``None`` when the endpoint
    reports no usage), ``calls_written``, ``invalid_calls`` (calls the
    contract refuses as the model wrote them), ``first_failed``,
    ``tool_runs`` (how much ``CALLS`` grew) and ``detail``.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import SeededBackend
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 3)
    >>> runs = run_bench(tools, SeededBackend(tasks, error_rate=0.0), tasks, trials=2, configs=["naive"])
    >>> len(runs), set(runs["outcome"])
    (6, {'right'})
    """
    data = LabData.from_module(module)
    records = []
    for config in configs:
        _clear_cache(module)  # each configuration starts from an empty cache
        for trial in range(trials):
            for task in tasks:
                records.append(_trial(module, backend, task, trial, config, seed=seed, data=data, budget=budget))
    _clear_cache(module)
    return pd.DataFrame.from_records(records)


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The 95% Wilson score interval of ``successes`` out of ``n`` (``(nan, nan)`` for ``n = 0``).

    >>> [round(x, 3) for x in wilson(8, 10)]
    [0.49, 0.943]
    """
    if n <= 0:
        return float("nan"), float("nan")
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_hat_k(successes: Sequence[int], n: int, k: int) -> float:
    """tau-bench's pass^k: the mean over tasks of C(c, k) / C(n, k), for ``c`` successes of ``n`` trials each.

    >>> pass_hat_k([4, 2, 0], 4, 1), round(pass_hat_k([4, 2, 0], 4, 2), 4)
    (0.5, 0.3889)
    """
    if k > n or not successes:
        return float("nan")
    return sum(math.comb(c, k) / math.comb(n, k) for c in successes) / len(successes)


def _rate(hits: int, n: int) -> tuple[float, float, float]:
    low, high = wilson(hits, n)
    return (hits / n if n else float("nan")), low, high


def _bootstrap_pass(counts: Sequence[int], n: int, k: int, *, resamples: int = 1000) -> tuple[float, float]:
    """A 95% percentile-bootstrap interval of pass^k, resampling tasks (seeded: the same counts, the same interval)."""
    import numpy as np

    if k > n or not counts:
        return float("nan"), float("nan")
    values = np.array([math.comb(c, k) / math.comb(n, k) for c in counts])
    rng = np.random.default_rng(len(counts) * 1009 + k)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    low, high = np.percentile(means, [2.5, 97.5])
    return float(low), float(high)


def _mean_interval(values: pd.Series) -> tuple[float, float, float]:
    """The mean and its normal 95% interval (mean ± 1.96 standard errors); NaN when there are no numbers."""
    numbers = pd.to_numeric(values, errors="coerce").dropna().astype(float)
    if numbers.empty:
        return float("nan"), float("nan"), float("nan")
    mean = float(numbers.mean())
    half = 1.959964 * float(numbers.std(ddof=1)) / math.sqrt(len(numbers)) if len(numbers) > 1 else 0.0
    return mean, max(0.0, mean - half), mean + half


def layer_metrics(runs: pd.DataFrame, *, ks: Sequence[int] = (1, 2, 3, 4)) -> pd.DataFrame:
    """One row per configuration: every measure with its 95% interval (``<measure> low`` and ``high``).

    Rates have Wilson score intervals; pass^k a percentile bootstrap over tasks; the costs per task
    (tool-body runs, model calls, tokens) a normal interval of their mean.

    >>> row = layer_metrics(pd.DataFrame({"config": ["naive"] * 2, "task": [0, 0], "trial": [0, 1],
    ...     "outcome": ["right", "wrong"], "model_calls": [1, 1], "tokens": [None, None], "calls_written": [1, 1],
    ...     "invalid_calls": [0, 1], "first_failed": [False, True], "tool_runs": [1, 1]})).iloc[0]
    >>> float(row["success"]), float(row["pass^2"]), float(row["invalid-call rate"])
    (0.5, 0.0, 0.5)
    """
    rows = {}
    for config in [c for c in CONFIGS if c in set(runs["config"])]:
        group = runs[runs["config"] == config]
        n_runs = len(group)
        right = int((group["outcome"] == "right").sum())
        row: dict = {}
        row["success"], row["success low"], row["success high"] = _rate(right, n_runs)
        trials = int(group.groupby("task")["trial"].nunique().min())
        per_task = group.assign(ok=group["outcome"] == "right").groupby("task")["ok"].sum()
        for k in ks:
            counts = [int(c) for c in per_task]
            row[f"pass^{k}"] = pass_hat_k(counts, trials, k)
            row[f"pass^{k} low"], row[f"pass^{k} high"] = _bootstrap_pass(counts, trials, k)
        written, invalid = int(group["calls_written"].sum()), int(group["invalid_calls"].sum())
        row["invalid-call rate"], row["invalid-call rate low"], row["invalid-call rate high"] = _rate(invalid, written)
        failed = group[group["first_failed"].astype(bool)]
        recovered = int((failed["outcome"] == "right").sum())
        row["recovery rate"], row["recovery rate low"], row["recovery rate high"] = _rate(recovered, len(failed))
        wrong_entity = int((group["outcome"] == "wrong_entity").sum())
        row["wrong-entity rate"], row["wrong-entity rate low"], row["wrong-entity rate high"] = _rate(
            wrong_entity, n_runs
        )
        silent = int(group["outcome"].isin(("wrong", "wrong_entity")).sum())
        row["wrong-answer rate"], row["wrong-answer rate low"], row["wrong-answer rate high"] = _rate(silent, n_runs)
        stopped = int(group["outcome"].isin(("refused", "asked")).sum())
        row["refused or asked"], row["refused or asked low"], row["refused or asked high"] = _rate(stopped, n_runs)
        broken = int(group["outcome"].isin(tuple(FAILURES)).sum())
        row["model failures"], row["model failures low"], row["model failures high"] = _rate(broken, n_runs)
        for name, column in (
            ("tool-body runs per task", "tool_runs"),
            ("model calls per task", "model_calls"),
            ("tokens per task", "tokens"),
        ):
            row[name], row[name + " low"], row[name + " high"] = _mean_interval(group[column])
        row["runs"] = n_runs
        rows[CONFIG_LABELS[config]] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "configuration"
    return table


def format_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """The table as a reader wants it: every measure as ``0.62 [0.55, 0.69]``, its value and 95% interval.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import SeededBackend
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 5)
    >>> format_table(layer_metrics(run_bench(tools, SeededBackend(tasks), tasks, trials=1,
    ...                                      configs=["naive"]))).columns[0]
    'success [95% CI]'
    """

    def interval(name: str, low: str = "", high: str = "") -> pd.Series:
        low, high = low or name + " low", high or name + " high"
        return metrics.apply(
            lambda r: "n/a" if pd.isna(r[name]) else f"{r[name]:.2f} [{r[low]:.2f}, {r[high]:.2f}]", axis=1
        )

    out = pd.DataFrame(index=metrics.index)
    out["success [95% CI]"] = interval("success")
    for column in [c for c in metrics.columns if c.startswith("pass^") and not c.endswith((" low", " high"))]:
        out[column] = interval(column)
    out["invalid-call rate"] = interval("invalid-call rate", "invalid-call rate low", "invalid-call rate high")
    out["recovery rate"] = interval("recovery rate", "recovery rate low", "recovery rate high")
    out["wrong-entity rate"] = interval("wrong-entity rate")
    out["wrong answers (silent)"] = interval("wrong-answer rate", "wrong-answer rate low", "wrong-answer rate high")
    for column in (
        "refused or asked",
        "model failures",
        "tool-body runs per task",
        "model calls per task",
        "tokens per task",
    ):
        out[column] = interval(column)
    out["runs"] = metrics["runs"]
    return out


def failure_table(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per kind of failure that happened (prose, malformed, timeout, 429 ...): how often, and an example.

    Empty (no rows) when nothing failed on the model's side or in the learner's code.

    >>> table = failure_table(pd.DataFrame({"config": ["naive"], "outcome": ["timeout"], "detail": ["late"]}))
    >>> int(table.loc["timeout", "runs"]), table.loc["timeout", "example"]
    (1, 'late')
    """
    failed = runs[runs["outcome"].isin(tuple(FAILURES))]
    rows = []
    for kind in FAILURES:
        group = failed[failed["outcome"] == kind]
        if len(group):
            rows.append(
                {
                    "failure": kind,
                    "what": FAILURES[kind],
                    "runs": len(group),
                    "share": len(group) / len(runs),
                    "example": str(group["detail"].iloc[0])[:160],
                }
            )
    return pd.DataFrame(rows, columns=["failure", "what", "runs", "share", "example"]).set_index("failure")


# --------------------------------------------------------------------------
# Success against the stand-in's error rate
# --------------------------------------------------------------------------


def success_sweep(
    module: ModuleType,
    tasks: Sequence[Task],
    *,
    rates: Sequence[float] = (0.0, 0.1, 0.2, 0.3, 0.5, 0.75, 1.0),
    trials: int = 2,
    seed: int = 0,
) -> pd.DataFrame:
    """Success with its interval per configuration at each error rate of the seeded stand-in.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> tools = load_module("solutions/tools.py")
    >>> s = success_sweep(tools, draw_tasks(tools, 5), rates=[0.0], trials=1)
    >>> s["success"].tolist() == [1.0] * len(CONFIGS)
    True
    """
    from agtool_lab.noisy.endpoint import SeededBackend

    frames = []
    for rate in rates:
        metrics = layer_metrics(
            run_bench(module, SeededBackend(tasks, error_rate=rate), tasks, trials=trials, seed=seed)
        )
        frames.append(metrics[["success", "success low", "success high"]].assign(error_rate=rate).reset_index())
    return pd.concat(frames, ignore_index=True)


def plot_success_sweep(curves: pd.DataFrame, *, marked_rate: float | None = 0.09):
    """Success (with its 95% band) against the stand-in's error rate, one line per configuration.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> tools = load_module("solutions/tools.py")
    >>> fig = plot_success_sweep(success_sweep(tools, draw_tasks(tools, 3), rates=[0.0, 1.0], trials=1))
    >>> len(fig.axes[0].lines) >= len(CONFIGS)
    True
    """
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 4.2))
    for label, group in curves.groupby("configuration", sort=False):
        x = group["error_rate"] * 100
        (line,) = ax.plot(x, group["success"], marker="o", markersize=3, label=label)
        ax.fill_between(x, group["success low"], group["success high"], color=line.get_color(), alpha=0.12)
    if marked_rate is not None:
        ax.axvline(marked_rate * 100, color="gray", linestyle=":", linewidth=1)
    ax.set(xlabel="stand-in model's error rate (%)", ylabel="task success (95% interval)", ylim=(0, 1.02))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


# --------------------------------------------------------------------------
# Reading the table: the chapters beside it, the cost, a few sentences
# --------------------------------------------------------------------------


def chapter_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """The reference figures (the background chapters, tau-bench) beside the learner's naive and full configurations.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import SeededBackend
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 5)
    >>> list(chapter_table(layer_metrics(run_bench(tools, SeededBackend(tasks), tasks, trials=4))).columns)
    ['reference', 'reference figure', 'yours: naive', 'yours: all layers']
    """
    first, last = metrics.iloc[0], metrics.iloc[-1]
    prompts = metrics.loc[CONFIG_LABELS["prompts"]] if CONFIG_LABELS["prompts"] in metrics.index else last

    def show(value) -> str:
        return "n/a" if value is None or pd.isna(value) else f"{float(value):.2f}"

    rows = [
        (
            "argument accuracy (calls valid as written)",
            "chapters",
            "0.91 → 0.98",
            show(1 - first["invalid-call rate"]),
            show(1 - last["invalid-call rate"]),
        ),
        (
            "identity failures reaching execution (wrong entity acted on)",
            "chapters",
            "0.043 → 0",
            show(first["wrong-entity rate"]),
            show(last["wrong-entity rate"]),
        ),
        (
            "end-to-end tool correctness (task success)",
            "chapters",
            "0.86 → 0.94",
            show(first["success"]),
            show(last["success"]),
        ),
        (
            "first-retry success: bare reason → with the correction (recovery rate)",
            "chapters",
            "0.58 → 0.94",
            "n/a (no retry)",
            show(prompts["recovery rate"]),
        ),
        (
            "pass^1 → pass^4",
            "tau-bench retail, gpt-4o",
            "0.38 → 0.16",
            f"{show(first.get('pass^1'))} → {show(first.get('pass^4'))}",
            f"{show(last.get('pass^1'))} → {show(last.get('pass^4'))}",
        ),
    ]
    table = pd.DataFrame(
        [
            {"measure": m, "reference": r, "reference figure": f, "yours: naive": a, "yours: all layers": b}
            for m, r, f, a, b in rows
        ]
    ).set_index("measure")
    return table


def cost_table(metrics: pd.DataFrame, *, tasks: int, trials: int) -> pd.DataFrame:
    """What each configuration costs: model calls and tokens per task, and for the whole run.

    >>> m = pd.DataFrame({"model calls per task": [1.5], "tokens per task": [float("nan")]}, index=["naive"])
    >>> int(cost_table(m, tasks=10, trials=4).loc["naive", "model calls (this run)"])
    60
    """
    runs = tasks * trials
    out = pd.DataFrame(index=metrics.index)
    out["model calls per task"] = metrics["model calls per task"].round(2)
    out["tokens per task"] = metrics["tokens per task"].round(0)
    out["model calls (this run)"] = (metrics["model calls per task"] * runs).round().astype(int)
    out["tokens (this run)"] = (metrics["tokens per task"] * runs).round(0)
    return out


def _apart(low_of_higher: float, high_of_lower: float) -> str:
    return "the 95% intervals apart" if low_of_higher > high_of_lower else "the 95% intervals overlap"


def _move(a: pd.Series, b: pd.Series, column: str, low: str, high: str) -> str:
    """``0.40 → 0.62 (up, the 95% intervals apart)``: one rate from configuration ``a`` to ``b``."""
    direction = "up" if b[column] > a[column] else "down" if b[column] < a[column] else "unchanged"
    higher, lower = (b, a) if b[column] >= a[column] else (a, b)
    tail = "" if direction == "unchanged" else f", {_apart(higher[low], lower[high])}"
    return f"{a[column]:.2f} → {b[column]:.2f} ({direction}{tail})"


def bench_reading(metrics: pd.DataFrame) -> str:
    """A few Markdown lines that read the table, every number taken from it.

    >>> from agtool_lab.load import load_module
    >>> from agtool_lab.noisy.chat import draw_tasks
    >>> from agtool_lab.noisy.endpoint import SeededBackend
    >>> tools = load_module("solutions/tools.py")
    >>> tasks = draw_tasks(tools, 5)
    >>> "**+ cache**" in bench_reading(layer_metrics(run_bench(tools, SeededBackend(tasks), tasks, trials=1)))
    True
    """
    labels = list(metrics.index)
    lines = []
    for before, after in zip(labels, labels[1:]):
        a, b = metrics.loc[before], metrics.loc[after]

        success = _move(a, b, "success", "success low", "success high")
        text = f"- **{after}**: success {success}"
        if after == CONFIG_LABELS["validation"]:
            text += f"; wrong answers served as right {_move(a, b, 'wrong-answer rate', 'wrong-answer rate low', 'wrong-answer rate high')}"
        elif after == CONFIG_LABELS["prompts"]:
            text += (
                f"; recovery rate {b['recovery rate']:.2f}, model calls per task "
                f"{a['model calls per task']:.2f} → {b['model calls per task']:.2f}"
            )
        elif after == CONFIG_LABELS["repair"]:
            text += (
                f"; refused or asked {a['refused or asked']:.2f} → {b['refused or asked']:.2f}, wrong entity "
                f"{a['wrong-entity rate']:.2f} → {b['wrong-entity rate']:.2f} (a fallback region is another entity, "
                "disclosed)"
            )
        elif after == CONFIG_LABELS["cache"]:
            text += f"; tool-body runs per task {a['tool-body runs per task']:.2f} → {b['tool-body runs per task']:.2f}"
        elif after == CONFIG_LABELS["identity"]:
            text += (
                f"; wrong entity {_move(a, b, 'wrong-entity rate', 'wrong-entity rate low', 'wrong-entity rate high')}"
            )
        lines.append(text + ".")
    return "\n".join(lines)
