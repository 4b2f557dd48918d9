"""Released passage embeddings: the vectors a retriever's authors (or pyserini) published, read
from their own files (:mod:`.formats`, with the restricted unpickler of :mod:`.unpickle`) and
imported into the embedding cache a ``harness run`` would have written.

Modules: :mod:`.formats` (:func:`~.formats.open_release`, every reader's name), :mod:`.contract`
(the readers' contract and shared pieces), one reader module per layout (:mod:`.faiss_flat`,
:mod:`.pickles`, :mod:`.wiki_dpr`), the unpickler (:mod:`.unpickle`, its records in
:mod:`.pickled`, its whole-row fast path in :mod:`.pickle_rows`), the import (:mod:`.importer`),
its check against the encoder (:mod:`.check`) and its use by a run (:mod:`.use`)."""
