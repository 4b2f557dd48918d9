"""Data: the dataset catalogue, downloads, question readers, corpora and the corpus store.

- :mod:`harness.data.catalog`         suite and corpus specs (TOML) and their validation
- :mod:`harness.data.download`        streamed, resumable, checksum-verified downloads
- :mod:`harness.data.questions`       question-file readers (DPR TSV, JSONL, EntityQuestions JSON)
- :mod:`harness.data.corpora`         corpora opened on first use
- :mod:`harness.data.corpus_sources`  reading DPR TSV and JSONL passage files
- :mod:`harness.data.corpus_store`    the memory-mapped corpus store (Arrow IPC)
- :mod:`harness.data.passages`        splitting articles into DPR-style 100-word passages
"""
