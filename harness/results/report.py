"""Rendering results as text: one result as a terminal table, and the escaping every generated
text uses for what comes from files, names and records.

- :func:`one_line`: any text on one line (terminal tables and messages);
- :func:`markdown_text`: any text as literal markdown, safe in a table cell, a heading, a link's
  text or an HTML block (the leaderboard, ``harness compare``'s tables);
- :func:`link_target` / :func:`markdown_link`: links only to http(s) or relative addresses.
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlsplit

from tabulate import tabulate

#: Characters that end, break or reorder a line: C0 and C1 controls (CR, LF, tab, escape, ...),
#: the Unicode line and paragraph separators, and the bidirectional marks, embeddings, overrides
#: and isolates (which can show a cell's digits in another order than they are written).
_LINE_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: An ``&`` that starts a character reference (``&lt;``, ``&#60;``, ``&#x3c;``).
_REFERENCE = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
#: How text may start that makes a markdown block when it begins a line: a quote, a heading, a
#: list item, a fence, an ordered list item, or a whole line of one rule or underline character.
_BLOCK_START = re.compile(r"^(?:[>]|#{1,6}(?=\s|$)|[-+*](?=\s|$)|~~~|\d{1,9}(?=[.)](?:\s|$))|([-*_=])(?:\s*\1)*\s*$)")
_PUNCTUATION = frozenset(string.punctuation)
#: Kept as written in a link's address; anything else is percent-encoded (spaces, parentheses,
#: backslashes, quotes, pipes, backticks, angle brackets, non-ASCII).
_URL_SAFE = "/:?#[]@!$&'*+,;=%~"


def one_line(text: object) -> str:
    """``text`` on one line: every control character (CR, LF, tab, escape, ...), line or
    paragraph separator and bidirectional control becomes a space."""
    return _LINE_BREAKING.sub(" ", str(text))


def markdown_text(text: object) -> str:
    """``text`` (a name, parameter, title or note read from a file) as markdown that shows it
    literally and adds nothing: safe in a table cell, a heading, a link's text and inside an HTML
    block (``<summary>``).

    One line (:func:`one_line`: no extra table row); ``<`` as ``&lt;`` and an ``&`` that would
    start a character reference as ``&amp;`` (no HTML, no autolink); ``|`` escaped (no extra
    column); backticks escaped (no code span); ``]`` before ``(``, ``[`` or ``:`` escaped (no
    link, image or link definition); a backslash before punctuation or at the end doubled (it
    escapes nothing of the markup around it); a leading block marker (``#``, ``>``, ``-``, ``1.``,
    ...) escaped. Emphasis marks (``*``, ``_``, ``~`` inside the text) are left as written: they
    add no HTML, link or row, and names use them (``title_text``)."""
    line = one_line(text).lstrip()
    out: list[str] = []
    for i, char in enumerate(line):
        after = line[i + 1 : i + 2]
        if char == "\\":
            out.append("\\\\" if after == "" or after in _PUNCTUATION else char)
        elif char == "<":
            out.append("&lt;")
        elif char == "&":
            out.append("&amp;" if _REFERENCE.match(line, i) else char)
        elif char in "|`":
            out.append("\\" + char)
        elif char == "]" and after in ("(", "[", ":"):
            out.append("\\]")
        else:
            out.append(char)
    escaped = "".join(out)
    start = _BLOCK_START.match(escaped)
    if start is None:
        return escaped
    if escaped[0].isdigit():  # an ordered list item: escape its "." or ")"
        return f"{start.group()}\\{escaped[start.end():]}"
    return "\\" + escaped


def link_target(url: object) -> str | None:
    """``url`` as a markdown link's address when it is an absolute ``http(s)://`` URL or a
    relative one (no scheme, no host); None for any other scheme (``javascript:``, ``data:``,
    ``file:``, ...) and for text with spaces or control characters. Characters markdown or HTML
    would read (spaces, parentheses, backslashes, quotes, angle brackets, pipes) are
    percent-encoded and an ``&`` that would start a character reference is written ``&amp;``, so
    the address markdown reads is the one checked."""
    text = str(url)
    if not text or any(c.isspace() for c in text) or _LINE_BREAKING.search(text):
        return None
    try:
        parts = urlsplit(text)
    except ValueError:
        return None
    if parts.scheme:
        if parts.scheme not in ("http", "https") or not parts.netloc:
            return None
    elif parts.netloc or text.startswith("//"):
        return None
    return _REFERENCE.sub("&amp;", quote(text, safe=_URL_SAFE))


def markdown_link(text: object, url: object) -> str:
    """``[text](url)`` with the text escaped (:func:`markdown_text`) when ``url`` is a safe
    address (:func:`link_target`); otherwise the text and the address as plain escaped text,
    ``text (url)``, or the text alone when there is no address."""
    label = markdown_text(text)
    if url is None or str(url) == "":
        return label
    target = link_target(url)
    if target is None:
        return f"{label} ({markdown_text(url)})"
    return f"[{label}]({target})"


def format_parameters(parameters: Mapping[str, Any], prefix: str = "") -> str:
    """``k1=0.9, b=0.4``; nested mappings as dotted keys (``sparse.parameters.k1=0.9``), lists of
    mappings by position (``components[0].name=bm25``)."""
    items = []
    for key, value in parameters.items():
        if isinstance(value, Mapping):
            items.append(format_parameters(value, f"{prefix}{key}."))
        elif isinstance(value, (list, tuple)) and any(isinstance(v, Mapping) for v in value):
            for i, v in enumerate(value):
                if isinstance(v, Mapping):
                    items.append(format_parameters(v, f"{prefix}{key}[{i}]."))
                else:
                    items.append(f"{prefix}{key}[{i}]={v}")
        else:
            items.append(f"{prefix}{key}={value}")
    return ", ".join(item for item in items if item)


def corpus_size(corpus: Mapping[str, Any]) -> str:
    """``21015324 passages``, or ``corpus not opened`` when scoring never needed it (a run file
    that carries passage text)."""
    passages = corpus.get("passages")
    return f"corpus not opened ({corpus.get('name')})" if passages is None else f"{passages} passages"


def _label(metric: str, k: str) -> str:
    from harness import registry

    if metric in registry.metrics():
        return registry.metrics().get(metric).label.format(name=metric, k=k)
    return f"{metric}@{k}"


def reranked_depth(reranker: Mapping[str, Any]) -> str:
    """How deep a result's re-ranker went, in words: ``top 100``, or ``top 5 at most (100 asked;
    the first stage had fewer hits)`` when the result records that no question had more than 5
    hits to re-rank (``reranked``; the number varies by question, this is its largest)."""
    depth, reranked = reranker["depth"], reranker.get("reranked")
    if reranked is None or reranked >= depth:
        return f"top {depth}"
    return f"top {reranked} at most ({depth} asked; the first stage had fewer hits)"


def format_result_table(result: Mapping[str, Any]) -> str:
    """Each part's metrics and the macro average over parts, in percent. Names and parameters
    from the result are shown on one line each (:func:`one_line`)."""
    suite, retriever = result["suite"], result["retriever"]
    n_questions = sum(p["questions"] for p in suite["parts"])
    synthetic = " (SYNTHETIC data)" if suite.get("synthetic") else ""
    header = (
        f"suite {one_line(suite['name'])}{synthetic}: {n_questions} questions in {len(suite['parts'])} part(s), "
        f"{one_line(corpus_size(suite['corpus']))}, {suite['match']} matching\n"
        f"retriever {one_line(retriever['name'])} ({one_line(format_parameters(retriever['parameters']))})"
    )
    reranker = result.get("reranker")
    if reranker:
        header += (
            f"\nre-ranked by {one_line(reranker['name'])} ({reranked_depth(reranker)}; "
            f"{one_line(format_parameters(reranker['parameters']))})"
        )
    columns = [(metric, k) for metric, values in result["metrics"].items() for k in values["macro"]]
    headers = ["part", "questions"] + [one_line(_label(m, k)) for m, k in columns]
    sizes = {p["name"]: p["questions"] for p in suite["parts"]}
    rows = []
    parts = list(result["first_hit_ranks"])
    if len(parts) > 1:
        for part in parts:
            rows.append([one_line(part), sizes.get(part, "")] + [100 * result["metrics"][m]["parts"][part][k] for m, k in columns])
        average = f"macro average ({len(parts)} parts)"
    else:
        average = one_line(parts[0])
    rows.append([average, n_questions] + [100 * result["metrics"][m]["macro"][k] for m, k in columns])
    return header + "\n\n" + tabulate(rows, headers=headers, floatfmt=".2f")
