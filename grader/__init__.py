"""agtool-lab's auto-grader: randomised, isolated, per-step checks of a learner's tools.py."""
