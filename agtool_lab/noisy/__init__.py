"""Lab 09's simulator: a model that errs the way real models do, and the three routes it takes.

Not learner code: :mod:`agtool_lab.noisy.model` writes the tool calls,
:mod:`agtool_lab.noisy.routes` runs them against the learner's own module
with each layer of the lab switched on or off and counts what it bought.
"""
