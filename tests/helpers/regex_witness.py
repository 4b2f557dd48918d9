"""Strings a regular expression matches, generated from its parse tree (stdlib ``re``'s parser):
test inputs that a CuratedTREC answer pattern is known to match."""

from __future__ import annotations

import random
import re

try:  # Python 3.11+: the stdlib regex parser, used to build strings a CuratedTREC regex matches
    import re._constants as sre_c
    import re._parser as sre_parse
except ImportError:  # pragma: no cover
    import sre_constants as sre_c
    import sre_parse


_CATEGORY_CHARS = {
    sre_c.CATEGORY_DIGIT: "507",
    sre_c.CATEGORY_NOT_DIGIT: "ax-",
    sre_c.CATEGORY_SPACE: " \n\t",
    sre_c.CATEGORY_NOT_SPACE: "ax5",
    sre_c.CATEGORY_WORD: "ab5",
    sre_c.CATEGORY_NOT_WORD: " -,",
}


def _gen_in(items, rng):
    if any(op is sre_c.NEGATE for op, _ in items):
        return rng.choice("xq#")  # checked afterwards: the whole witness must match
    op, av = rng.choice(items)
    if op is sre_c.LITERAL:
        return chr(av)
    if op is sre_c.RANGE:
        return chr(rng.randint(av[0], av[1]))
    if op is sre_c.CATEGORY:
        return rng.choice(_CATEGORY_CHARS.get(av, "a"))
    return "a"


def _gen(items, rng, depth=0):
    out = []
    for op, av in items:
        if op is sre_c.LITERAL:
            out.append(chr(av))
        elif op is sre_c.NOT_LITERAL:
            out.append("x" if chr(av) != "x" else "y")
        elif op is sre_c.ANY:
            out.append(rng.choice(["x", " ", ""]))
        elif op is sre_c.IN:
            out.append(_gen_in(av, rng))
        elif op in (sre_c.MAX_REPEAT, sre_c.MIN_REPEAT, getattr(sre_c, "POSSESSIVE_REPEAT", None)):
            lo, hi, sub = av
            count = rng.randint(lo, min(hi, lo + 2))
            out.extend(_gen(sub, rng, depth + 1) for _ in range(count))
        elif op is sre_c.SUBPATTERN:
            out.append(_gen(av[-1], rng, depth + 1))
        elif op is sre_c.BRANCH:
            out.append(_gen(rng.choice(av[1]), rng, depth + 1))
        elif op in (sre_c.AT, sre_c.ASSERT, sre_c.ASSERT_NOT):
            pass
        else:
            raise ValueError(f"unsupported regex construct {op}")
    return "".join(out)


def regex_witness(pattern: str, rng: random.Random, *, single_line: bool = False) -> str | None:
    """A string that ``pattern`` matches (by stdlib ``re``), or None if none was found; with
    ``single_line``, a non-blank one without newlines."""
    try:
        tree = sre_parse.parse(pattern, re.IGNORECASE | re.MULTILINE)
    except re.error:
        return None
    for _ in range(20):
        try:
            candidate = _gen(tree, rng)
        except ValueError:
            return None
        if single_line and (not candidate.strip() or "\n" in candidate):
            continue
        if candidate and re.search(pattern, candidate, re.IGNORECASE | re.MULTILINE):
            return candidate
    return None
