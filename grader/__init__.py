"""agtool-lab's auto-grader: randomised, isolated, per-step checks of a learner's tools.py."""
from grader.registry import CHECKS
from grader.report import CheckResult, Report
from grader.runner import grade

__all__ = ["CHECKS", "CheckResult", "Report", "grade"]
