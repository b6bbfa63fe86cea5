"""Which tools.py the labs and the grader pick, and the errors for bad paths."""

from __future__ import annotations

import os
import time

import pytest

from agtool_lab.load import DEFAULT_MODULE, ENV_VAR, learner_path
from grader.locate import SubmissionNotFound, read_submission, resolve_submission


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


@pytest.mark.parametrize(
    "make, words",
    [
        (lambda p: p / "missing", "does not exist"),
        (lambda p: p, "without tools.py"),
    ],
)
def test_bad_paths_say_what_to_give_instead(tmp_path, make, words):
    with pytest.raises(SubmissionNotFound, match=words):
        resolve_submission(make(tmp_path))


# --------------------------------------------------------------------------- a class folder


def _class(tmp_path):
    root = tmp_path / "home"
    alice, bob = _module(root / "alice"), _module(root / "bob")
    return root, alice, bob


@pytest.mark.parametrize("given", ["folder", "file"])
def test_a_learners_agtool_linked_to_a_classmates_is_refused_in_a_class(tmp_path, given):
    root, _, bob = _class(tmp_path)
    mallory = root / "mallory"
    mallory.mkdir()
    (mallory / "agtool").symlink_to(bob.parent, target_is_directory=True)
    path = mallory if given == "folder" else mallory / "agtool" / "tools.py"
    with pytest.raises(SubmissionNotFound, match="link"):  # a file path is refused by the class rule only
        resolve_submission(path, within=root)
    # Without a class folder, the old rule holds for a file path: its own parent (here, through the link).
    assert resolve_submission(mallory / "agtool" / "tools.py").name == "tools.py"


def test_a_learner_folder_that_is_a_link_to_another_learners_is_refused(tmp_path):
    root, _, bob = _class(tmp_path)
    (root / "mallory").symlink_to(root / "bob", target_is_directory=True)
    with pytest.raises(SubmissionNotFound, match="another folder of the class"):
        resolve_submission(root / "mallory", within=root)
    assert resolve_submission(root / "bob", within=root) == bob  # the classmate keeps their own


def test_a_hard_link_to_a_classmates_file_is_refused_in_a_class(tmp_path):
    root, _, bob = _class(tmp_path)
    (root / "mallory" / "agtool").mkdir(parents=True)
    os.link(bob, root / "mallory" / "agtool" / "tools.py")
    with pytest.raises(SubmissionNotFound, match="hard links"):
        resolve_submission(root / "mallory", within=root)


def test_links_inside_the_learners_own_folder_are_still_followed(tmp_path):
    root, alice, _ = _class(tmp_path)
    (alice.parent / "mine.py").write_text("X = 2\n")
    alice.unlink()
    alice.symlink_to("mine.py")
    assert resolve_submission(root / "alice", within=root) == alice


def test_reading_a_fifo_swapped_in_for_tools_py_does_not_wait(tmp_path):
    root, alice, _ = _class(tmp_path)
    file = resolve_submission(root / "alice", within=root)
    alice.unlink()
    os.mkfifo(alice)  # swapped after discovery: a plain open() would block until a writer comes
    started = time.monotonic()
    with pytest.raises(SubmissionNotFound, match="not a regular file"):
        read_submission(file, within=root)
    assert time.monotonic() - started < 1


def test_reading_refuses_a_link_swapped_in_after_resolving_and_caps_the_size(tmp_path):
    root, alice, bob = _class(tmp_path)
    file = resolve_submission(root / "alice", within=root / "alice")
    alice.write_bytes(b"x" * 100)
    assert read_submission(file, limit=10) == b"x" * 11  # one byte more than the cap says "larger"
    alice.unlink()
    alice.symlink_to(bob)
    with pytest.raises(SubmissionNotFound, match="moved out of"):
        read_submission(file, within=root / "alice")
