"""A release checked before it is trusted: a seeded sample of its passages re-encoded with the
encoder's passage side and compared with the released vectors.

**Tolerance.** A release is accepted when every sampled passage's re-encoded vector has a cosine
of at least :data:`MIN_COSINE` with the released one and no coordinate differs by more than
:data:`MAX_RELATIVE_DIFFERENCE` of that released vector's largest coordinate (in absolute value).
Why these numbers:

- Releases were encoded on GPUs, often under fp16 autocast (DPR's ``--fp16``, Contriever's
  ``--fp16`` default; pyserini's indexes with DPR's own code); re-encoding here runs in fp32 on CPU
  or fp16 on GPU. fp16 keeps 11 significant bits (a relative 2^-11 = 4.9e-4 per rounding). Measured
  on the packaged all-MiniLM-L6-v2 (64 passages of this package's tests, CPU): the whole model in
  fp16 against fp32 gives a smallest cosine of 0.999998 (mean pooling; 0.999999 at [CLS]) and a
  largest coordinate difference of 0.25% of the vector's largest coordinate; bf16 autocast, with 3
  bits fewer than fp16, 0.99997 and 0.97%. A 12-layer BERT (DPR, Contriever) doubles the depth the
  rounding passes through, not its order of magnitude. So 0.99 and 5% leave a margin of more than
  two orders of magnitude in ``1 - cosine`` and five times in the coordinates for honest precision
  differences.
- What the check is there to catch is far outside them: another model's vectors (a different
  checkpoint, or another seed of one) are nearly unrelated (cosines well below 0.9, coordinates off
  by their own size), and vectors of the right model but the wrong passages (a mapping off by one,
  a shuffled shard) are other passages' vectors, whose cosines with the right ones are those of
  unrelated texts: 0.3-0.9 for BERT-based encoders, whose vectors share a common direction. A
  format variant (float16 storage read as float32, a transposed block) is off by orders of
  magnitude.

The sample is ``n`` distinct cache rows drawn uniformly with ``numpy.random.default_rng(seed)``
(the seed is recorded). Where the model cannot be loaded (offline and not cached, a missing
package), the check is skipped and the reason recorded; a release that fails it is an error that
says how far off it is.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from harness.api import Corpus
from harness.errors import HarnessError

#: The smallest cosine a sampled passage's re-encoded vector may have with the released one.
MIN_COSINE = 0.99
#: The largest coordinate difference, as a share of the released vector's largest |coordinate|.
MAX_RELATIVE_DIFFERENCE = 0.05
#: The sample's seed.
SEED = 0


class ReleaseMismatch(HarnessError):
    """The release's vectors are not its encoder's (another width, or beyond tolerance)."""


#: Passages re-encoded at a time (a large sample is encoded in batches: bounded memory).
CHECK_BATCH = 256


def check_release(cache: Any, corpus: Corpus, passage_encoder: Any, *, sample: int, seed: int = SEED,
                  name: str = "", encoder_name: str = "") -> dict[str, Any]:
    """Re-encode ``sample`` seeded random passages of ``cache`` (an imported release) with
    ``passage_encoder`` and compare; returns the record (sample, seed, min cosine, max absolute and
    relative difference) or ``{"skipped": reason}``; raises :class:`HarnessError` when the release
    does not match. A sample larger than the release is the whole release (recorded as its size);
    passages are encoded :data:`CHECK_BATCH` at a time."""
    if sample <= 0:
        return {"skipped": "embeddings_check=0", "sample": 0}
    count = len(cache)
    n = min(sample, count)
    rows = np.sort(np.random.default_rng(seed).choice(count, size=n, replace=False)) if n else np.zeros(0, np.int64)
    load = getattr(passage_encoder, "load", None)
    cosines, relatives, worst_abs = [], [], 0.0
    ids: list[str] = []
    try:
        if callable(load):
            load()
        for first in range(0, n, CHECK_BATCH):
            batch = rows[first : first + CHECK_BATCH]
            batch_ids = cache.passage_ids(batch)
            passages = [corpus.get(pid) for pid in batch_ids]
            encoded = np.asarray(passage_encoder.encode_passages([(p.title, p.text) for p in passages]), dtype=np.float64)
            released = cache.rows(batch, dtype=np.float64)
            if encoded.shape != released.shape:
                raise ReleaseMismatch(f"release {name!r}: the encoder {encoder_name!r} gives {encoded.shape[1:]}-wide "
                                   f"vectors, the release {released.shape[1:]}: it is not this encoder's release")
            dots = np.einsum("ij,ij->i", encoded, released)
            norms = np.linalg.norm(encoded, axis=1) * np.linalg.norm(released, axis=1)
            cosines.append(np.where(norms > 0, dots / np.where(norms > 0, norms, 1.0), 0.0))
            diff = np.abs(encoded - released)
            scale = np.maximum(np.abs(released).max(axis=1), 1e-30)
            relatives.append(diff.max(axis=1) / scale)
            worst_abs = max(worst_abs, float(diff.max()) if len(diff) else 0.0)
            ids.extend(batch_ids)
    except ReleaseMismatch:
        raise
    except (OSError, ImportError, HarnessError, ValueError, RuntimeError) as exc:
        return _skipped(exc, seed)
    cosine = np.concatenate(cosines) if cosines else np.zeros(0)
    relative = np.concatenate(relatives) if relatives else np.zeros(0)
    record = {
        "sample": int(n),
        "seed": int(seed),
        "min_cosine": round(float(cosine.min()), 6) if n else None,
        "mean_cosine": round(float(cosine.mean()), 6) if n else None,
        "max_abs_difference": worst_abs if n else None,
        "max_relative_difference": round(float(relative.max()), 6) if n else None,
        "tolerance": {"min_cosine": MIN_COSINE, "max_relative_difference": MAX_RELATIVE_DIFFERENCE},
    }
    failed = np.flatnonzero((cosine < MIN_COSINE) | (relative > MAX_RELATIVE_DIFFERENCE))
    if len(failed):
        worst = int(np.argmin(cosine))
        raise ReleaseMismatch(
            f"release {name!r} does not match encoder {encoder_name!r}: {len(failed)} of {n} re-encoded passages "
            f"(seed {seed}) differ beyond tolerance: cosine min {cosine.min():.4f} (passage {ids[worst]!r}), mean "
            f"{cosine.mean():.4f}, max coordinate difference {worst_abs:.4g} ({relative.max():.1%} of the largest; "
            f"tolerance cosine >= {MIN_COSINE}, {MAX_RELATIVE_DIFFERENCE:.0%}): wrong model, id mapping or format "
            f"variant (-o embeddings_check=0 skips the check)")
    return record


def _skipped(exc: BaseException, seed: int) -> dict[str, Any]:
    reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
    return {"skipped": f"the encoder's model could not be loaded or run ({reason})", "sample": 0, "seed": seed}
