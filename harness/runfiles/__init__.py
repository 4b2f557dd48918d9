"""Run files made by any system: reading, writing, scoring (``harness score``).

- :mod:`harness.runfiles.model`       the :class:`~harness.runfiles.model.Run` model
- :mod:`harness.runfiles.formats`     the core's run formats, one module each (name, aliases,
  sniffing, entries), registered through ``register_run_formats`` like a plugin's
- :mod:`harness.runfiles.registered`  every registered format: lookup by name or alias, detection
- :mod:`harness.runfiles.strategy`    which engine reads a file: ``stream``, ``split`` or ``whole``
- :mod:`harness.runfiles.stream`      the stream engine (any format, compressed or not, one
  question at a time); :mod:`~harness.runfiles.archives` opens a run file, gzip or a ``.tar.gz``
  member; :mod:`~harness.runfiles.align` puts a file's entries on the suite's questions;
  :mod:`~harness.runfiles.othertools` the pieces other tools' formats share
- :mod:`harness.runfiles.readers`     :func:`~harness.runfiles.readers.read_run` and the ``whole``
  engine (:mod:`~harness.runfiles.columns`: DPR's and pyserini's JSON decoded in columns);
  :mod:`~harness.runfiles.split` scores a large JSON file in two halves
- :mod:`harness.runfiles.ranks`       a run's first-hit ranks (every ranking checked first)
- :mod:`harness.runfiles.writers`     TREC, DPR-JSON and pyserini-JSON writers
- :mod:`harness.runfiles.score`       scoring a run file into a result document
- :mod:`harness.runfiles.published`   published runs: specs, fetching, ``reproduce --runs``
"""
