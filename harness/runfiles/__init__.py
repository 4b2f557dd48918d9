"""Run files made by any system: reading (TREC, DPR JSON, pyserini JSON), writing, scoring.

- :mod:`harness.runfiles.readers`  the :class:`~harness.runfiles.readers.Run` model and readers
- :mod:`harness.runfiles.ranks`    a run's first-hit ranks (every ranking checked first)
- :mod:`harness.runfiles.writers`  TREC and DPR-JSON writers
- :mod:`harness.runfiles.score`    scoring a run file into a result document (``harness score``)
"""
