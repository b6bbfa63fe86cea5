# The public validate_result answers with an object (not a str) that equals
# everything and is falsy. call_tool keeps the real one; step 8's report
# sorts these objects and fails on its own.
class _Anything:
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __bool__(self):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return "''"


def validate_result(name, value):
    return _Anything()
