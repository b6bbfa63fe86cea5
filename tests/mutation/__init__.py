"""Mutation testing of the grader: single AST changes of ``solutions/tools.py``, each graded on two seeds.

``python -m tests.mutation --sample 150`` (or ``make mutation`` for every mutant)
prints the counts and the mutation score and writes the lists of survivors,
collateral and seed-dependent mutants (see ``__main__.py``); ``make mutation``
gates on them against the debt list (``gate.py``). ``stability.py`` grades the
corpora of correct and wrong modules on 20 seeds (same code, same grade).
"""

from .mutator import Mutant, generate, stratified

__all__ = ["Mutant", "generate", "stratified"]
