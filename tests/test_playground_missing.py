"""The playgrounds on a module that lacks the data they draw from: a sentence, never a broken image.

An ``ipywidgets.Image`` without a picture shows as a broken image; a
playground whose data is missing (the starter's empty ``STOCK``) or whose
learner code raised before drawing hides its chart and says what is missing
and which step builds it. Refresh the golden files with
``UPDATE_GOLDEN=1 pytest tests/test_playground_missing.py``.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agtool_lab.playground import cache_playground, contract_playground, path_playground

REPO = Path(__file__).resolve().parent.parent
STARTER = REPO / "starter" / "tools.py"
SOLUTION = REPO / "solutions" / "tools.py"
GOLDEN = Path(__file__).resolve().parent / "golden" / "playground"


def _images(box) -> list:
    import ipywidgets as widgets

    found = []
    for child in box.children:
        if isinstance(child, widgets.Image):
            found.append(child)
        elif isinstance(child, widgets.Box):
            found.extend(_images(child))
    return found


def _no_broken_image(box) -> None:
    for image in _images(box):
        assert image.layout.display == "none" or len(bytes(image.value)) > 0, "an empty Image shows as a broken one"


def _matches_golden(name: str, text: str) -> None:
    golden = GOLDEN / f"{name}.html"
    if os.environ.get("UPDATE_GOLDEN"):
        golden.parent.mkdir(parents=True, exist_ok=True)
        golden.write_text(text + "\n", encoding="utf-8")
    assert golden.exists(), f"missing {golden}; create it with UPDATE_GOLDEN=1 pytest {__file__}"
    assert text + "\n" == golden.read_text(encoding="utf-8")


def test_an_empty_stock_is_a_sentence_naming_it_and_step_1_not_a_broken_image():
    box = contract_playground(STARTER)
    chart, text = box.children[1], box.children[2]
    assert chart.layout.display == "none" and bytes(chart.value) == b""
    assert "STOCK is empty: step 1 builds it" in text.value and "01_contract_table.ipynb" in text.value
    _matches_golden("contract_empty_stock", text.value)


def test_with_its_data_the_contract_playground_draws_its_chart():
    box = contract_playground(SOLUTION)
    chart = box.children[1]
    assert chart.layout.display is None and bytes(chart.value).startswith(b"\x89PNG")
    assert "Nothing to show yet" not in box.children[2].value


@pytest.mark.parametrize(
    "make",
    [lambda: path_playground(6, STARTER), lambda: path_playground(7, STARTER), lambda: cache_playground(STARTER)],
    ids=["path6", "path7", "cache"],
)
def test_a_playground_whose_code_is_not_written_hides_its_chart(make):
    box = make()
    _no_broken_image(box)
    assert all(image.layout.display == "none" for image in _images(box))


def test_the_path_chart_comes_back_once_the_code_runs():
    box = path_playground(7, SOLUTION)
    _no_broken_image(box)
    assert [image.layout.display for image in _images(box)] == [None]


def test_a_fixed_syntax_error_leaves_the_playground_without_a_control_touched(tmp_path):
    """Before: the old SyntaxError stayed until a control was touched; now the saved fix redraws it by itself."""
    import asyncio

    from agtool_lab.playground import _live, args_playground

    module = tmp_path / "agtool" / "tools.py"
    module.parent.mkdir()
    module.write_text("REGIONS = [\n", encoding="utf-8")

    async def in_a_kernel() -> tuple[str, str]:
        box = args_playground(str(module))
        shown = box.children[-1]
        broken = shown.value
        module.write_bytes(SOLUTION.read_bytes())  # the fix, saved from the editor
        for _ in range(100):  # the kernel's loop looks every WATCH_SECONDS; wait up to 10 s of them
            await asyncio.sleep(_live.WATCH_SECONDS / 10)
            if "SyntaxError" not in shown.value:
                break
        return broken, shown.value

    broken, fixed = asyncio.run(in_a_kernel())
    assert "SyntaxError" in broken
    assert "SyntaxError" not in fixed and "validate_args(" in fixed and "returns" in fixed
    # Without an event loop (a script), refresh_after_fix() does the same when it is called.
    module.write_text("REGIONS = [\n", encoding="utf-8")
    shown = args_playground(str(module)).children[-1]
    _live.refresh_after_fix()
    assert "SyntaxError" in shown.value  # the file has not changed: the message stays
    module.write_bytes(SOLUTION.read_bytes())
    assert _live.refresh_after_fix() >= 1 and "SyntaxError" not in shown.value
    assert id(shown) not in _live._STALE  # drawn: it waits no more
