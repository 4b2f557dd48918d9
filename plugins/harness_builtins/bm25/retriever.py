"""The BM25 retriever: a Lucene index per corpus, cached on disk, searched in threaded batches."""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path

from harness.errors import warn
from harness.util.atomic import atomic_dir, check_complete, mark_complete, remove_stale, write_text_atomic
from harness.util.progress import progress
from harness.api import Corpus, Hit, Passage, RunContext

from harness_builtins.bm25.java import anserini_jar, start_jvm
from harness_builtins.bm25.prebuilt import open_searcher, prebuilt_lucene_index, prebuilt_record

#: Bump when the way documents are built or indexed changes (invalidates cached indexes).
INDEX_FORMAT = "bm25-index/1"
ANALYZER = "anserini-default-english (porter, stopwords)"
_ADD_BATCH = 2048


def document_contents(passage: Passage) -> str:
    """What Lucene indexes for a passage: ``title + "\\n" + text`` (pyserini's wikipedia-dpr)."""
    return f"{passage.title}\n{passage.text}"


class BM25Retriever:
    def __init__(self, k1: float = 0.9, b: float = 0.4):
        # k1 and b are checked by their declarations (the plugin's OPTIONS) when loaded by name
        self.k1, self.b = float(k1), float(b)
        self._searcher = None
        self._index_dir: Path | None = None
        self._prebuilt: dict | None = None

    def parameters(self) -> dict:
        """k1, b, the document contents and analyzer; on a prebuilt index also which one
        (pyserini's name, ``index_file``, its md5 and the Lucene version that wrote it)."""
        record = {"k1": self.k1, "b": self.b, "contents": "title\\ntext", "analyzer": ANALYZER}
        if self._prebuilt is not None:
            record.update(self._prebuilt)
        return record

    def compute(self) -> dict:
        """How the run computed (the result's ``compute`` block): Lucene searches on the CPU, and
        its index folder's bytes."""
        from harness.util.resources import directory_bytes

        record: dict = {"search_device": "cpu"}
        if self._index_dir is not None:
            record["index_bytes"] = directory_bytes(self._index_dir)
        if self._prebuilt is not None:
            from harness_builtins.bm25.prebuilt import pyserini_version

            version = pyserini_version()
            record["pyserini"] = ".".join(map(str, version)) if version else None
        return record

    def index_key(self, corpus: Corpus) -> str:
        """Digest of everything the index depends on: corpus, document format, Anserini version."""
        blob = json.dumps(
            [INDEX_FORMAT, corpus.fingerprint, ANALYZER, Path(anserini_jar()).name], sort_keys=True
        )
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    def index(self, corpus: Corpus, context: RunContext) -> None:
        start_jvm()
        prebuilt = prebuilt_lucene_index(corpus, context)
        if prebuilt is not None:  # DPR's Wikipedia: pyserini's prebuilt index (bm25/prebuilt.py)
            self._searcher, self._index_dir = open_searcher(prebuilt, self.k1, self.b), prebuilt
            self._prebuilt = prebuilt_record(corpus, prebuilt)
            return
        self._prebuilt = None
        root = Path(context.cache_dir) / "bm25"
        index_dir = root / f"{corpus.name}-{self.index_key(corpus)}"
        remove_stale(root)
        if index_dir.exists():
            problem = check_complete(index_dir)
            if problem is None:
                try:
                    self._open(index_dir)
                    return
                except Exception as exc:  # Lucene cannot read it: a damaged index
                    problem = f"Lucene cannot open it ({type(exc).__name__})"
            warn(f"the BM25 index cache {index_dir} is damaged ({problem}); rebuilding it")
            shutil.rmtree(index_dir)
        self._build(corpus, index_dir, context)
        self._open(index_dir)

    def _open(self, index_dir: Path) -> None:
        from pyserini.search.lucene import LuceneSearcher

        self._searcher = LuceneSearcher(str(index_dir / "lucene"))
        self._searcher.set_bm25(self.k1, self.b)
        self._index_dir = index_dir

    def _build(self, corpus: Corpus, index_dir: Path, context: RunContext) -> None:
        """Index into a temporary directory and rename it into place once a completion record is
        written, so an interrupted or killed build leaves no index (and a later run removes what a
        killed one left)."""
        from pyserini.index.lucene import LuceneIndexer

        with atomic_dir(index_dir) as tmp:
            indexer = LuceneIndexer(str(tmp / "lucene"), threads=max(1, context.threads))
            try:
                batch: list[dict] = []
                with progress(total=len(corpus), desc="bm25 index", unit="psg", enabled=context.progress) as bar:
                    for passage in corpus:
                        batch.append({"id": passage.id, "contents": document_contents(passage)})
                        if len(batch) >= _ADD_BATCH:
                            indexer.add_batch_dict(batch)
                            bar.update(len(batch))
                            batch = []
                    if batch:
                        indexer.add_batch_dict(batch)
                        bar.update(len(batch))
            finally:
                indexer.close()
            info = {"format": INDEX_FORMAT, "corpus": corpus.name, "corpus_fingerprint": corpus.fingerprint,
                    "passages": len(corpus), "analyzer": ANALYZER, "anserini": Path(anserini_jar()).name}
            write_text_atomic(tmp / "harness-index.json", json.dumps(info, indent=1))
            mark_complete(tmp)

    def search(self, queries: Sequence[str], k: int, context: RunContext) -> list[list[Hit]]:
        if self._searcher is None:
            raise RuntimeError("BM25Retriever.search called before index()")
        qids = [str(i) for i in range(len(queries))]
        results = self._searcher.batch_search(list(queries), qids, k=k, threads=max(1, context.threads))
        return [[Hit(passage_id=h.docid, score=float(h.score)) for h in results.get(q, [])] for q in qids]
