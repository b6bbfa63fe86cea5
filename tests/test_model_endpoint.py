"""The capstone's model endpoint and layers table, driven through a real HTTP server on loopback.

No network: :class:`agtool_lab.noisy.stand_in_server.StandInServer` speaks the
chat-completions protocol on 127.0.0.1 and answers like the seeded model, and
the capstone's client (:class:`agtool_lab.noisy.endpoint.Endpoint`, over
httpx) talks to it the way it talks to vLLM or a hosted API.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agtool_lab.load import load_module
from agtool_lab.noisy.bench import (
    CONFIG_LABELS,
    CONFIGS,
    failure_table,
    format_table,
    layer_metrics,
    pass_hat_k,
    run_bench,
    wilson,
)
from agtool_lab.noisy.chat import TRAPS, SeededChat, draw_tasks
from agtool_lab.noisy.endpoint import Endpoint, SeededBackend, backend_from_settings, tool_schemas
from agtool_lab.noisy.model import CHAPTER_MIX
from agtool_lab.noisy.stand_in_server import StandInServer
from grader.settings import Settings

REPO = Path(__file__).resolve().parent.parent
SOLUTION = REPO / "solutions" / "tools.py"
LABEL = CONFIG_LABELS


@pytest.fixture
def tools():
    return load_module(str(SOLUTION))


def _numbers(runs):
    return runs.drop(columns=["tokens", "detail"])


# --------------------------------------------------------------------------
# The setting, the schema, the task sentences
# --------------------------------------------------------------------------


def test_the_endpoint_is_off_by_default_and_one_setting_turns_it_on():
    assert backend_from_settings(Settings.from_environ({})) is None
    environ = {
        "AGTOOL_MODEL_URL": " http://127.0.0.1:8000/v1/ ",
        "AGTOOL_MODEL_NAME": "qwen3-1.7b",
        "AGTOOL_MODEL_KEY": "sk-test",
    }
    endpoint = backend_from_settings(Settings.from_environ(environ))
    assert isinstance(endpoint, Endpoint)
    assert (endpoint.url, endpoint.model) == ("http://127.0.0.1:8000/v1", "qwen3-1.7b")
    # The key is the lab's only: it is never among the variables handed to the grader's fork server.
    from grader.engine.client import fork_server_env

    assert "sk-test" not in json.dumps(fork_server_env(Settings.from_environ(environ)))
    assert "sk-test" not in repr(Settings.from_environ(environ))  # a printed or logged Settings shows no key


def test_the_tool_schema_is_read_from_the_learner_s_own_contracts(tools):
    tools.TOOLS["stock_lookup"]["args"]["region"]["allowed"] = ["north", "south"]
    tools.TOOLS["stock_lookup"]["args"]["limit"]["max"] = 3
    by_name = {s["function"]["name"]: s["function"] for s in tool_schemas(tools)}
    assert set(by_name) == set(tools.TOOLS)
    params = by_name["stock_lookup"]["parameters"]
    assert params["properties"]["region"] == {"type": "string", "enum": ["north", "south"]}
    assert params["properties"]["limit"] == {"type": "integer", "minimum": 1, "maximum": 3}
    assert sorted(params["required"]) == ["limit", "region", "sku"] and params["additionalProperties"] is False
    product = tool_schemas(tools, by_product=True)[0]["function"]["parameters"]
    assert "sku" not in product["properties"] and "product" in product["required"]


def test_tasks_are_sentences_with_the_chapters_traps_in_their_shares(tools):
    tasks = draw_tasks(tools, 600, seed=3)
    assert [t.text for t in tasks[:20]] == [t.text for t in draw_tasks(tools, 20, seed=3)]
    shares = {c: sum(t.category == c for t in tasks) / len(tasks) for c in CHAPTER_MIX}
    for category, share in CHAPTER_MIX.items():
        assert abs(shares[category] - share) < 0.06, (category, shares[category])
    assert {t.trap for t in tasks} == {trap for traps in TRAPS.values() for trap in traps}
    by_trap = {t.trap: t for t in tasks}
    assert "depot" in by_trap["region_town"].text and by_trap["region_town"].order["region"] not in (
        by_trap["region_town"].text
    )
    bare = by_trap["sku_without_prefix"]
    assert bare.order["sku"] not in bare.text and bare.order["sku"].split("-")[1] in bare.text
    named = by_trap["product_name"]
    assert named.order["sku"] not in named.text and tools.PRODUCTS[named.order["sku"]].lower() in named.text
    words = by_trap["count_in_words"]
    assert not re.search(rf"\b{words.order['limit']}\b", words.text) and words.slip_args["limit"] in words.text
    assert len({t.text.split(" ")[0] for t in tasks}) >= 4  # several phrasings, not one template


# --------------------------------------------------------------------------
# Statistics
# --------------------------------------------------------------------------


def test_wilson_interval_and_pass_hat_k_follow_their_definitions():
    low, high = wilson(0, 20)
    assert low == 0.0 and 0.16 < high < 0.17
    assert wilson(20, 20)[1] == 1.0 and 0.83 < wilson(20, 20)[0] < 0.84
    # tau-bench: C(c, k) / C(n, k), averaged over tasks; pass^1 is the success rate.
    assert pass_hat_k([2, 4], 4, 1) == pytest.approx(0.75)
    assert pass_hat_k([2, 4], 4, 2) == pytest.approx((1 / 6 + 1) / 2)
    assert pass_hat_k([3], 4, 4) == 0.0 and pass_hat_k([4], 4, 4) == 1.0


# --------------------------------------------------------------------------
# The endpoint path, on loopback
# --------------------------------------------------------------------------


def test_the_endpoint_path_gives_the_seeded_model_s_table_and_reports_tokens(tools):
    tasks = draw_tasks(tools, 12, seed=5)
    local = run_bench(tools, SeededBackend(tasks, error_rate=0.6), tasks, trials=2)
    with StandInServer(tasks, error_rate=0.6) as server:
        remote = run_bench(tools, Endpoint(server.url, "stand-in"), tasks, trials=2)
        bodies = list(server.requests)
    assert _numbers(remote).equals(_numbers(local))
    assert remote["tokens"].notna().all() and local["tokens"].isna().all()
    table = format_table(layer_metrics(remote))
    assert list(table.index) == list(LABEL.values())
    # Every measure is a value and its 95% interval; the tokens come from the endpoint's usage.
    interval = r"^\d+\.\d\d \[\d+\.\d\d, \d+\.\d\d\]$"
    for column in table.columns.drop(["runs", "pass^3", "pass^4"]):
        assert table[column].str.match(interval).all() or column == "recovery rate", column
    assert (table["pass^3"] == "n/a").all()  # two trials say nothing about three runs of a task
    assert (layer_metrics(remote)["tokens per task"] > 0).all()
    # What reached the server: the sentence, not the order, and the learner's contracts as tools.
    first = bodies[0]
    assert first["model"] == "stand-in" and first["messages"][1]["content"] == tasks[0].text
    assert first["tools"] == tool_schemas(tools)


def test_errors_as_prompts_send_the_learner_s_explain_message_and_the_model_reads_it(tools):
    task = next(t for t in draw_tasks(tools, 200, seed=1) if t.trap == "region_typo")
    explained = tools.explain("stock_lookup", task.slip_args)
    assert explained["suggestion"] is not None
    with StandInServer([task], error_rate=1.0) as server:
        runs = run_bench(tools, Endpoint(server.url, "stand-in"), [task], trials=1, configs=["coercion", "prompts"])
        bodies = list(server.requests)
    assert list(runs["outcome"]) == ["refused", "right"]
    retry = bodies[-1]["messages"]
    fed_back = json.loads(retry[-1]["content"])
    assert retry[-1]["role"] == "tool" and retry[-1]["tool_call_id"] == retry[-2]["tool_calls"][0]["id"]
    assert fed_back["message"] == explained["message"] and fed_back["suggestion"] == explained["suggestion"]
    # The retry is the suggestion: the model read the message it was sent.
    assert json.loads(retry[-2]["tool_calls"][0]["function"]["arguments"]) == task.slip_args


def test_without_a_suggestion_the_model_re_reads_the_request_at_the_chapters_rate(tools):
    tasks = [t for t in draw_tasks(tools, 400, seed=2) if t.trap == "limit_apart"]
    chat = SeededChat(tasks, error_rate=1.0)
    retried = 0
    for task in tasks:
        convo = [
            {"role": "user", "content": task.text},
            {"role": "assistant", "content": None},
            {"role": "tool", "content": json.dumps({"error": "args:missing:limit", "suggestion": None})},
        ]
        retried += chat.reply(convo, [], seed=0).arguments == {**task.slip_args, "limit": task.order["limit"]}
    assert 0.45 < retried / len(tasks) < 0.70  # the chapters: 0.58 without a correction


@pytest.mark.slow  # about 10 s: 2,000 requests on loopback (make test runs it, make test-fast does not)
def test_each_layer_moves_the_numbers_the_way_the_chapters_describe(tools):
    """The ordering the chapters describe, with the intervals apart, through the loopback endpoint.

    Every first call of the stand-in falls for its task's trap (error rate 1), so each layer's effect is
    as large as it gets; 80 tasks of 4 trials give 320 runs per configuration.
    """
    tasks = draw_tasks(tools, 80, seed=0)
    with StandInServer(tasks, error_rate=1.0) as server:
        runs = run_bench(tools, Endpoint(server.url, "stand-in"), tasks, trials=4)
    m = layer_metrics(runs)
    naive, valid, coerced, prompts, repair, cache, identity = (m.loc[LABEL[c]] for c in CONFIGS)

    def apart(higher, lower, rate="success"):
        low, high = {"success": ("success low", "success high")}.get(rate, (rate + " low", rate + " high"))
        assert higher[low] > lower[high], (rate, higher.name, higher[rate], lower.name, lower[rate])

    # Validation turns silent wrong answers into refusals (success does not rise).
    assert valid["wrong-answer rate"] < naive["wrong-answer rate"]
    assert naive["wrong-answer rate low"] > valid["wrong-answer rate high"]
    assert valid["refused or asked"] > 0.5
    # Coercion repairs the format slips; errors as prompts turn refusals into right answers, at a model call.
    apart(coerced, valid)
    apart(prompts, coerced)
    assert prompts["recovery rate"] > coerced["recovery rate"]
    assert prompts["model calls per task"] > coerced["model calls per task"] == 1.0
    # Repair (last resort) answers some of what is left, and says what it changed.
    assert repair["success"] >= prompts["success"] and repair["refused or asked"] < prompts["refused or asked"]
    # The cache changes no answer and saves tool-body runs.
    assert cache["success"] == repair["success"]
    assert cache["tool-body runs per task"] < 0.6 * repair["tool-body runs per task"]
    # Identity resolution: the product as said, resolved in code, instead of a sku the model guesses.
    apart(identity, cache)
    assert identity["wrong-entity rate"] < cache["wrong-entity rate"]
    # pass^k can only fall with k.
    for _, row in m.iterrows():
        assert row["pass^1"] >= row["pass^2"] >= row["pass^3"] >= row["pass^4"]
        assert row["pass^1"] == pytest.approx(row["success"])


# --------------------------------------------------------------------------
# An endpoint that misbehaves: a clear row, never a crash
# --------------------------------------------------------------------------


def _faulty_run(tools, fault: str, **options):
    tasks = draw_tasks(tools, 3, seed=4)
    with StandInServer(tasks, error_rate=0.0, fault=fault, retry_after="2") as server:
        endpoint = Endpoint(server.url, "stand-in", **options)
        runs = run_bench(tools, endpoint, tasks, trials=1, configs=["naive", "prompts"])
    table = format_table(layer_metrics(runs))
    assert list(table.index) == [LABEL["naive"], LABEL["prompts"]]
    return runs, failure_table(runs), endpoint


def test_a_time_out_is_a_row_of_the_failure_table(tools):
    runs, failures, endpoint = _faulty_run(tools, "timeout", timeout=0.2, give_up_after=4)
    assert set(runs["outcome"]) == {"timeout"}
    assert list(failures.index) == ["timeout"] and failures.loc["timeout", "runs"] == len(runs) == 6
    assert "time-out" in failures.loc["timeout", "what"]
    # A dead endpoint costs four time-outs, not one per run: then it is not asked any more, and says so.
    assert endpoint.failures_in_a_row == 4
    assert runs["detail"].str.startswith("not asked: the endpoint failed").sum() == 2


def test_a_429_is_retried_after_its_retry_after_then_is_a_row(tools):
    waits: list[float] = []
    runs, failures, endpoint = _faulty_run(tools, "rate_limit", max_retries=2, sleep=waits.append, give_up_after=0)
    assert set(runs["outcome"]) == {"rate_limited"}
    assert waits == [2.0] * (2 * len(runs))  # two waits of Retry-After per run, then it gives up
    assert "429 on 3 tries" in failures.loc["rate_limited", "example"]
    # A passing 429 costs a wait, not the task.
    tasks = draw_tasks(tools, 1, seed=4)
    with StandInServer(tasks, error_rate=0.0, fault="rate_limit", fault_count=1, retry_after="1") as server:
        waits.clear()
        runs = run_bench(tools, Endpoint(server.url, "m", sleep=waits.append), tasks, trials=1, configs=["naive"])
    assert list(runs["outcome"]) == ["right"] and waits == [1.0]


def test_a_malformed_tool_call_is_a_row_and_goes_back_to_the_model(tools):
    runs, failures, _ = _faulty_run(tools, "malformed")
    assert set(runs["outcome"]) == {"malformed"}
    assert failures.loc["malformed", "runs"] == len(runs)
    assert runs["invalid_calls"].sum() == runs["calls_written"].sum() > 0
    prompts = runs[runs["config"] == "prompts"]
    assert (prompts["model_calls"] == 2).all()  # with errors as prompts it was told, and tried again


def test_prose_instead_of_a_call_is_a_row(tools):
    runs, failures, _ = _faulty_run(tools, "prose")
    assert set(runs["outcome"]) == {"prose"}
    assert failures.loc["prose", "example"].startswith("There are plenty")
    assert (runs["tool_runs"] == 0).all()


def test_an_unreachable_endpoint_is_a_row(tools):
    tasks = draw_tasks(tools, 2, seed=4)
    with StandInServer(tasks) as server:
        url = server.url
    runs = run_bench(tools, Endpoint(url, "m", timeout=2), tasks, trials=1, configs=["naive"])
    assert list(failure_table(runs).index) == ["endpoint_error"]


class _Scripted:
    """A backend that writes the same call every time (for the harness's own paths)."""

    name = "scripted"

    def __init__(self, call):
        self.call, self.calls = call, 0

    def complete(self, messages, tools, *, seed):
        from agtool_lab.noisy.endpoint import Reply

        self.calls += 1
        return Reply(call=self.call)


def test_a_call_to_a_tool_that_does_not_exist_is_malformed_not_a_crash(tools):
    from agtool_lab.noisy.chat import ToolCall

    tasks = draw_tasks(tools, 2, seed=4)
    call = ToolCall("stock_lookup_v2", {"sku": "SKU-1001", "region": "north", "limit": 1}, "{}")
    runs = run_bench(tools, _Scripted(call), tasks, trials=1, configs=["naive", "prompts"])
    assert set(runs["outcome"]) == {"malformed"} and (runs["tool_runs"] == 0).all()
    assert "unknown tool 'stock_lookup_v2'" in failure_table(runs).loc["malformed", "example"]


def test_an_ambiguous_product_is_a_question_back_without_another_try(tools):
    from agtool_lab.noisy.chat import ToolCall

    tasks = draw_tasks(tools, 1, seed=4)
    model = _Scripted(ToolCall("stock_lookup", {"product": "bolt", "region": "north", "limit": 1}))
    runs = run_bench(tools, model, tasks, trials=1, configs=["identity"])
    assert list(runs["outcome"]) == ["asked"] and list(runs["tool_runs"]) == [0]
    assert model.calls == 1  # several products match: a question for the person, not a retry
    model = _Scripted(ToolCall("stock_lookup", {"product": "titanium", "region": "north", "limit": 1}))
    runs = run_bench(tools, model, tasks, trials=1, configs=["identity"])
    assert list(runs["outcome"]) == ["asked"] and model.calls == 2  # not found: the model may look again


def test_the_call_budget_bounds_the_retries(tools):
    from agtool_lab.noisy.chat import ToolCall

    tasks = draw_tasks(tools, 1, seed=4)
    refused = ToolCall("stock_lookup", {"sku": "SKU-1001", "region": "mars", "limit": 1})
    for budget, calls in ((1, 1), (2, 2), (4, 4)):
        model = _Scripted(refused)
        runs = run_bench(tools, model, tasks, trials=1, configs=["prompts"], budget=budget)
        assert list(runs["outcome"]) == ["refused"] and model.calls == calls == int(runs["model_calls"].iloc[0])
