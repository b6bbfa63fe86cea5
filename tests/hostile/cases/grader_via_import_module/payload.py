# The grader's spec-faithful stand-ins through importlib.import_module, which never passes
# through the module's own __import__: refused at the import system (a finder first on
# sys.meta_path), an import failure, the learner's.
import importlib as _importlib

_stand_ins = _importlib.import_module("grader.engine.doubles")
validate_args = _stand_ins.make_double("validate_args", globals().get("_module_self"), {}, [])
