"""What several built-in plugins share; not a plugin itself (no hooks, no entry point).

- :mod:`.devices`: the ``device`` and ``precision`` options (one resolution for every built-in:
  re-rankers, encoders, the ART teacher, the question generator), torch dtypes, default batch sizes.
- :mod:`.seq2seq`: sequence-to-sequence models: loading them, and the question-likelihood scorer
  with UPR's and ART's prompt templates (the ``upr`` re-ranker, the ``art`` loss's teacher and
  ``harness data generate-questions`` use it).

A built-in plugin imports another plugin's modules only through this package (tests/rules/test_architecture.py
lists the few exceptions and why). Importing it imports nothing heavy: torch and transformers are
imported inside the functions that need them.
"""
