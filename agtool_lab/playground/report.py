"""Step 8: run the learner's write_report in a scratch folder and render both files."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import ipywidgets as widgets

from agtool_lab.playground._live import GREEN, RED, LiveModule, esc, guard, pre
from grader.spec import HEADING_SETS, MAX_ATTEMPTS, REPORT_EXPECTED, REPORT_FILES

JSON_FILE, MD_FILE = REPORT_FILES


def _markdown_html(text: str) -> str:
    try:
        import mistune  # comes with nbconvert, which JupyterLab installs

        return mistune.html(text)
    except Exception:
        return pre(text)


def _report_table(report: dict) -> str:
    rows = []
    for key, expected in REPORT_EXPECTED.items():
        got = report.get(key, "(missing)") if isinstance(report, dict) else "(not a dict)"
        mark = (
            f'<span style="color:{GREEN}">\u2714</span>'
            if got == expected and type(got) is type(expected)
            else f'<span style="color:{RED}">\u2718</span>'
        )
        rows.append(
            f"<tr><td>{mark}</td><td><code>{key}</code></td><td><code>{esc(repr(got))}</code></td>"
            f"<td><code>{esc(repr(expected))}</code></td></tr>"
        )
    return (
        "<table><tr><th></th><th>key</th><th>your value</th><th>a correct module</th></tr>" + "".join(rows) + "</table>"
    )


def _headings_note(markdown: str) -> str:
    for headings in HEADING_SETS.values():
        found = [h for h in headings if h in markdown]
        if found:
            missing = [h for h in headings if h not in markdown]
            if missing:
                return f'<span style="color:{RED}">missing sections: {esc(", ".join(missing))}</span>'
            return f'<span style="color:{GREEN}">all four sections present</span>'
    return f'<span style="color:{RED}">none of the four ## sections found</span>'


def report_playground(path=None, folder=None) -> widgets.VBox:
    """Step 8: run ``write_report`` into a scratch folder and render both files it wrote."""
    live = LiveModule(path)
    attempts = widgets.IntSlider(
        value=MAX_ATTEMPTS, min=1, max=5, description="MAX_ATTEMPTS", style={"description_width": "initial"}
    )
    button = widgets.Button(
        description="write_report(scratch folder)", button_style="primary", layout=widgets.Layout(width="auto")
    )
    shown = widgets.HTML()
    # A folder that lives as long as the playground: removed when the widget is collected.
    scratch_dir = None if folder else tempfile.TemporaryDirectory(prefix="agtool_report_")
    scratch = Path(folder) if folder else Path(scratch_dir.name)

    def render() -> str:
        tools = live.get(fresh=True)  # a clean CALLS and CACHE, as the grader does
        tools.MAX_ATTEMPTS = attempts.value
        returned = tools.write_report(str(scratch))
        json_file, md_file = scratch / JSON_FILE, scratch / MD_FILE
        if not json_file.exists() or not md_file.exists():
            return f'<span style="color:{RED}">write_report did not write both files into {esc(scratch)}</span>'
        data = json.loads(json_file.read_text(encoding="utf-8"))
        markdown = md_file.read_text(encoding="utf-8")
        limit_note = (
            f"MAX_ATTEMPTS ({attempts.value}) appears in the Markdown"
            if str(attempts.value) in markdown.split("##")[-1]
            else f'<span style="color:{RED}">the last section does not state {attempts.value}</span>'
        )
        same = (
            ""
            if returned == data
            else f'<br><span style="color:{RED}">the returned dict differs from the JSON file</span>'
        )
        return (
            f"<b>{JSON_FILE}</b> ({esc(json_file)}){_report_table(data)}{same}"
            f"<b>{MD_FILE}</b>: {_headings_note(markdown)}; {limit_note}"
            f'<div style="border:1px solid #d0d7de;padding:4px 10px;margin-top:4px">{_markdown_html(markdown)}</div>'
        )

    button.on_click(lambda _b: guard(shown, render))
    guard(shown, render)
    box = widgets.VBox([widgets.HBox([button, attempts]), shown])
    box.scratch_dir = scratch_dir
    return box
