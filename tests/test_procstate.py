"""ProcessState: what a step leaves behind is seen, whether the namespace's version tag is known or not.

The fast path (a dict's PEP 509 version tag unchanged: not walked) and the
slow path (keys and values compared by identity) must give the same answers.
"""

from __future__ import annotations

import json

import pytest

from grader.engine import procstate
from grader.engine.procstate import ProcessState


@pytest.fixture(params=["version tags", "identity walk only"])
def state(request, monkeypatch):
    if request.param == "identity walk only":
        monkeypatch.setattr(procstate, "dict_version", lambda space: None)
    elif procstate.dict_version({}) is None:
        pytest.skip("this interpreter's dict version tags cannot be read: only the identity walk runs")
    return ProcessState()


def test_nothing_changed_is_unchanged(state):
    assert state.same_interpreter()
    assert state.same_interpreter()


def test_a_patched_function_is_seen_until_it_is_put_back(state):
    saved = json.dumps
    json.dumps = repr
    try:
        assert not state.same_interpreter()
    finally:
        json.dumps = saved
    assert state.same_interpreter()
    assert state.same_interpreter()  # and stays so once its new version tag stands for the old state


def test_an_added_name_is_seen_and_its_removal_undoes_it(state):
    json.agtool_left_behind = 1
    try:
        assert not state.same_interpreter()
    finally:
        del json.agtool_left_behind
    assert state.same_interpreter()


def test_a_value_replaced_by_an_equal_object_is_a_change(state):
    class AlwaysEqual:
        def __eq__(self, other):
            return True

        __hash__ = object.__hash__

    saved = json.loads
    json.loads = AlwaysEqual()  # == would say nothing changed: identity does not
    try:
        assert not state.same_interpreter()
    finally:
        json.loads = saved


def test_the_version_reader_follows_writes_only():
    read = procstate.dict_version
    space: dict = {"a": 1}
    before = read(space)
    if before is None:
        pytest.skip("version tags unknown here")
    others = [space] * 3  # references come and go: no write
    assert read(space) == before
    space["a"] = 1  # the same object again: CPython does not count it as a write
    space["a"] = 2
    assert read(space) != before
    del others
