"""The starter module as given to every learner (``tools.py``): read as text by ``grader.outputs.starter``, never imported.

A wheel ships this folder as ``grader.starter``. The learner works in the lab's ``agtool/tools.py``, a copy of
``tools.py`` here in a fresh clone; nothing but the learner reads that file.
"""
