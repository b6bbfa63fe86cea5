"""Run axe-core's WCAG 2.1 AA rules on a page (or one part of it) and fail on any serious or critical violation.

axe-core comes from npm into ``.venv/node`` (``make e2e-deps``) and is
injected by Playwright (``page.add_script_tag(path=...)``): no network, no
browser extension. ``scope`` limits the check to our part of a page (the
Check widget's output area, not JupyterLab's chrome). The violations found
are written to ``artifacts/e2e/axe-<name>.json`` with a screenshot, and a
failure lists each rule, its impact and the elements it found.

Example::

    found = check_page(page, artifacts_dir, "learner-page")
    assert found.passes > 0
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

from e2e.conftest import REPO_ROOT, missing

AXE_JS = Path(
    os.environ.get("AGTOOL_E2E_AXE", REPO_ROOT / ".venv" / "node" / "node_modules" / "axe-core" / "axe.min.js")
)
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("serious", "critical")

_RUN_JS = """async ([selector, tags]) => {
  const context = selector ? {include: [[selector]]} : document;
  const result = await axe.run(context, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return {passes: result.passes.length, incomplete: result.incomplete.length,
          violations: result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
            nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}))};
}"""


@dataclass
class AxeResult:
    """What axe found: rules that passed, violations (every impact), and those that block (serious, critical)."""

    passes: int
    violations: list

    @property
    def blocking(self) -> list:
        return [v for v in self.violations if v["impact"] in BLOCKING]


def describe(violations: list) -> str:
    """One line per violation and per element it names (for an assertion message)."""
    lines = []
    for v in violations:
        lines.append(f"{v['impact']}: {v['id']} ({v['help']})")
        lines.extend(f"    {n['target']}: {n['summary']}".replace("\n", " ") for n in v["nodes"][:5])
    return "\n".join(lines)


def run_axe(page, scope: str | None = None) -> AxeResult:
    """axe-core's WCAG 2.1 A and AA rules on ``page`` (only ``scope``, a CSS selector, when given)."""
    if not AXE_JS.exists():
        missing(f"{AXE_JS} not found: make e2e-deps (npm install axe-core into .venv/node)")
    if not _loaded(page):
        try:
            page.add_script_tag(path=str(AXE_JS))
        except Exception:
            pass
    if not _loaded(page):  # the service's pages allow one script, by hash: DevTools evaluation is not a page script
        page.evaluate(AXE_JS.read_text(encoding="utf-8") + "\n;undefined")
    found = page.evaluate(_RUN_JS, [scope, TAGS])
    return AxeResult(found["passes"], found["violations"])


def _loaded(page) -> bool:
    return page.evaluate("() => typeof window.axe !== 'undefined'")


def check_page(page, artifacts_dir: Path, name: str, scope: str | None = None) -> AxeResult:
    """Run axe, keep its findings and a screenshot in ``artifacts_dir``, fail on a serious or critical violation."""
    result = run_axe(page, scope)
    (artifacts_dir / f"axe-{name}.json").write_text(
        json.dumps(
            {"url": page.url, "scope": scope, "tags": TAGS, "passes": result.passes, "violations": result.violations},
            indent=2,
        ),
        encoding="utf-8",
    )
    target = page.locator(scope).last if scope else page
    kwargs = {} if scope else {"full_page": True}
    target.screenshot(path=str(artifacts_dir / f"a11y-{name}.png"), **kwargs)
    assert not result.blocking, f"axe: serious or critical WCAG 2.1 AA violations on {name}:\n" + describe(
        result.blocking
    )
    assert result.passes > 0, f"axe checked nothing on {name} (scope {scope!r} matched no element?)"
    return result
