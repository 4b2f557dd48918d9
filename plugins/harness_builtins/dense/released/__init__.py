"""Released passage embeddings: the vectors a retriever's authors (or pyserini) published, read
from their own files (:mod:`.formats`, with the restricted unpickler of :mod:`.unpickle`) and
imported into the embedding cache a ``harness run`` would have written."""
