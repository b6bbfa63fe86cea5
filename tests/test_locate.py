"""Which tools.py the labs and the grader pick, and the errors for bad paths."""
from __future__ import annotations

import pytest

from agtool_lab.load import DEFAULT_MODULE, ENV_VAR, learner_path
from grader.locate import SubmissionNotFound, resolve_submission


def _module(folder):
    (folder / "agtool").mkdir(parents=True)
    file = folder / "agtool" / "tools.py"
    file.write_text("X = 1\n")
    return file


def test_a_hub_learner_gets_the_module_beside_their_labs_folder(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    home = tmp_path / "home" / "alice"
    file = _module(home)
    (home / "labs").mkdir()
    monkeypatch.chdir(home / "labs")
    assert learner_path() == file


def test_the_environment_variable_wins_over_the_working_folder(tmp_path, monkeypatch):
    _module(tmp_path / "here")
    other = _module(tmp_path / "other")
    monkeypatch.chdir(tmp_path / "here")
    monkeypatch.setenv(ENV_VAR, str(other))
    assert learner_path() == other


def test_without_a_nearby_module_the_checkout_starter_is_used(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    assert learner_path() == DEFAULT_MODULE


@pytest.mark.parametrize("make, words", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: p, "without tools.py"),
])
def test_bad_paths_say_what_to_give_instead(tmp_path, make, words):
    with pytest.raises(SubmissionNotFound, match=words):
        resolve_submission(make(tmp_path))
