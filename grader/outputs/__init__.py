"""Class outputs: what instructors and LMSs read, built from learner records; batch and service both use them.

Below :mod:`grader.batch` and :mod:`grader.service` (which call the same
functions), above :mod:`grader.course` (the course policy, whose credit a
record carries). Nothing here runs learner code or imports batch or service.

* :mod:`~grader.outputs.record`: :class:`~grader.outputs.record.LearnerRecord`, one learner's result, typed;
* :mod:`~grader.outputs.learner_ids`: learner ids safe as file names, unique and stable;
* :mod:`~grader.outputs.gradebook`: ``grades.csv``/``grades.json`` and the class tables;
* :mod:`~grader.outputs.summary`: ``summary.md``;
* :mod:`~grader.outputs.feedback`: ``feedback/<learner>.md``;
* :mod:`~grader.outputs.gradescope_results`: ``results.json`` per learner, and their zip;
* :mod:`~grader.outputs.plots`: the class plots;
* :mod:`~grader.outputs.lms`: Canvas and Moodle import files through a roster;
* :mod:`~grader.outputs.similarity`: pairs of submissions sharing unusually much code;
* :mod:`~grader.outputs.class_folder`: all of them as files in one folder (``batch --out``).

``from grader.outputs import write_outputs`` loads the modules it needs only
when asked (PEP 562): the record and LMS modules work without pandas.

Example::

    >>> from grader.outputs import LearnerRecord
    >>> LearnerRecord("ana", {"score": 1}).score
    1
"""

from __future__ import annotations

from grader.lazy import lazy_face

__getattr__, __all__ = lazy_face(
    __name__,
    {
        "LearnerRecord": "grader.outputs.record",
        "as_records": "grader.outputs.record",
        "write_outputs": "grader.outputs.class_folder",
        "class_tables": "grader.outputs.class_folder",
        "gradebook_frame": "grader.outputs.gradebook",
        "check_stats": "grader.outputs.gradebook",
        "common_wrong_answers": "grader.outputs.gradebook",
        "wrong_answers": "grader.outputs.gradebook",
        "render_feedback": "grader.outputs.feedback",
        "render_summary": "grader.outputs.summary",
    },
)
