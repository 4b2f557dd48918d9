"""The HTML board (harness.board.html): escaped, self-contained, deterministic, checked by
`harness leaderboard --check`, and usable in a real browser (sorting, filtering, drill-down).

The browser tests (Debian's chromium driven by playwright; they skip without either) save a
screenshot of each page they drive in pytest's ``tmp_path`` and, when ``HARNESS_TEST_ARTIFACTS``
names a folder, a copy there (the folder is made when missing): pytest does not keep ``tmp_path``,
so CI (``.ci/run``) sets it to ``test-artifacts/`` in the clone. The variable says where files go,
not how the harness behaves, so ``tests/conftest.py`` leaves it set.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from harness.api import PublishedRow, PublishedTable
from harness.cli.main import main
from harness.board.html import INDEX, LITERATURE, MANIFEST, TIER_NOTE, page_names, render_html, script_json
from harness.board.cells import cost_summary
from harness.board.sections import rerank_ceiling, sections
from harness.results.labels import part_title
from harness.results.schema import read_results, write_result

from helpers.result_docs import make_result
from helpers.board_cells import cells
from helpers.paths import REPO

ROOT = REPO
COMMITTED = ROOT / "leaderboard" / "results"

#: The folder the browser tests copy their screenshots into, when set.
ARTIFACTS_ENV = "HARNESS_TEST_ARTIFACTS"

EVIL_SCRIPT = "</script><script>alert(1)</script>"
EVIL_IMG = "<img src=x onerror=alert(2)>"


def ranks(hits):
    """Questions q0.. of one part: rank 0 where 1, else no hit."""
    return {"all": {f"q{i}": 0 if h else None for i, h in enumerate(hits)}}


def board_of(tmp_path: Path, docs: list[dict], published=()) -> tuple[list, dict[str, str]]:
    for doc in docs:
        write_result(doc, tmp_path / "results")
    board = sections(read_results(tmp_path / "results"), published)
    return board, render_html(board, output_dir=tmp_path / "html")


class Tags(HTMLParser):
    """Every start tag of a page with its attributes, and the text of each script element."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[str] = []
        self._in_script = False
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = True
            self.scripts.append("")

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.scripts[-1] += data


def board_data(page: str) -> list[dict]:
    """The JSON blocks of a page, read back."""
    return [json.loads(m) for m in re.findall(r'<script type="application/json" class="board-data">(.*?)</script>', page, re.S)]


def cost(**changes) -> dict:
    """A ``cost`` record as runs write it (harness.results.cost)."""
    record = {"device_kind": "cpu", "device_count": 1, "gpu_hours": 0.0, "seconds": 12.5, "peak_host_bytes": 1_234_000_000,
              "peak_host_scope": "run", "peak_gpu_bytes": None, "index_bytes": None, "embedding_bytes": None,
              "encode_passages_per_s": None, "search_queries_per_s": 3610.2}
    return {**record, **changes}


# --- (a) escaping ------------------------------------------------------------------------------


def evil_docs() -> tuple[list[dict], PublishedTable]:
    parts = {f"part{EVIL_SCRIPT}": {f"q{EVIL_SCRIPT}": 0, "q2": None}, f"p{EVIL_IMG}": {"q3": 2, f"q{EVIL_IMG}": 0}}
    doc = make_result(f"r{EVIL_SCRIPT}", params={"x": EVIL_SCRIPT + EVIL_IMG, "training": {"variant": f"v{EVIL_IMG}", "data": [EVIL_SCRIPT], "seed": 7, "seen": [f"part{EVIL_SCRIPT}"]}}, ranks=parts, suite=f"s{EVIL_IMG}")
    doc["suite"]["synthetic"] = False
    doc["reranker"] = {"name": f"rr{EVIL_IMG}", "plugin": "x", "parameters": {"model": EVIL_SCRIPT}, "depth": 5}
    # the re-ranking wins q<script> and q<img> at every cutoff, and loses q2 at 5 and deeper
    doc["first_stage_ranks"] = {f"part{EVIL_SCRIPT}": {f"q{EVIL_SCRIPT}": None, "q2": 3}, f"p{EVIL_IMG}": {"q3": 2, f"q{EVIL_IMG}": None}}
    doc["cost"] = cost(device_kind=f"cpu{EVIL_IMG}")
    other = make_result("plain", ranks={p: {q: None for q in qs} for p, qs in parts.items()}, suite=f"s{EVIL_IMG}")
    other["suite"]["synthetic"] = False
    table = PublishedTable(
        name=f"t{EVIL_SCRIPT}", title="T", citation=f"Someone {EVIL_IMG}", url="javascript:alert(3)",
        rows=(PublishedRow(system=f"S{EVIL_SCRIPT}", suite=f"s{EVIL_IMG}", values={20: 59.1}, note=EVIL_IMG),),
    )
    return [doc, other], table


def test_names_parameters_parts_and_published_text_are_only_ever_escaped(tmp_path):
    docs, table = evil_docs()
    board, pages = board_of(tmp_path, docs, [table])
    assert len(pages) == 2 and INDEX in pages
    for name, page in pages.items():
        assert EVIL_SCRIPT not in page and EVIL_IMG not in page and "javascript:" not in page, name
        assert "<img" not in page and "alert(1)</script>" not in page
        parsed = Tags(page)
        assert not [t for t, _ in parsed.tags if t in ("img", "iframe", "object", "embed")]
        assert not [(t, a) for t, a in parsed.tags for key in a if key.startswith("on")]  # no event handlers
        scripts = [a for t, a in parsed.tags if t == "script"]
        assert all("src" not in a for a in scripts)
        # one data block and the page's own script: a name cannot open or close another
        assert [a.get("type") for a in scripts] == ["application/json", None]
        assert "</script" not in parsed.scripts[0] and "<" not in parsed.scripts[0]
        (data,) = board_data(page)
        texts = " ".join(row["text"] for row in data["rows"])
        assert EVIL_SCRIPT in texts and EVIL_IMG in texts  # read back as written
        if name == INDEX:
            assert html.escape(f"s{EVIL_IMG}") in page and {row["suite"] for row in data["rows"]} == {f"=s{EVIL_IMG}"}
            assert f'<option value="{html.escape(f"=s{EVIL_IMG}")}">{html.escape(f"s{EVIL_IMG}")}</option>' in page
            assert html.escape(f"r{EVIL_SCRIPT}") in page and html.escape(f"v{EVIL_IMG}") in page
            continue
        for text in (f"r{EVIL_SCRIPT}", EVIL_SCRIPT + EVIL_IMG, f"part{EVIL_SCRIPT}", f"p{EVIL_IMG}", f"S{EVIL_SCRIPT}", f"v{EVIL_IMG}", f"rr{EVIL_IMG}"):
            assert html.escape(text) in page, text
        assert "published" in page and html.escape(f"Someone {EVIL_IMG}") in page  # the text, without its link
        # the questions won and lost, by part/id, escaped like every other text
        won = html.escape(f"won 2: part{EVIL_SCRIPT}/q{EVIL_SCRIPT}, p{EVIL_IMG}/q{EVIL_IMG}")
        assert f"<li>top-1: {won}; lost 0</li>" in page
        assert f"<li>top-5: {won}; lost 1: {html.escape(f'part{EVIL_SCRIPT}/q2')}</li>" in page
    assert not re.search(r"[^A-Za-z0-9_.-]", "".join(page_names([f"s{EVIL_IMG}", "../x", "index", "a b", "a_b"]).values()).replace(".html", ""))


def test_script_json_cannot_end_its_element():
    data = {"a": "</script><!--<script>", "b": "\u2028\u2029&"}
    text = script_json(data)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == data


def test_page_names_are_safe_and_distinct():
    names = page_names(["nq", "NQ", "index", "../../etc", "", "a/b", "demo"])
    assert len(set(n.lower() for n in names.values())) == len(names)
    assert names["demo"] == "demo.html" and names["index"] != "index.html"
    assert all(re.fullmatch(r"[A-Za-z0-9_-]+\.html", n) for n in names.values())


# --- (b) self-contained, (c) deterministic ----------------------------------------------------


def assert_self_contained(page: str) -> None:
    """Nothing in ``page`` loads from elsewhere: no script, style sheet, image or frame with a
    network address, no ``<link>``, no CSS import or remote ``url()``, and a policy that forbids it."""
    for tag, attrs in Tags(page).tags:
        if tag in ("script", "link", "img", "iframe", "source", "embed", "object", "use", "image", "form", "video", "audio"):
            for key in ("src", "href", "xlink:href", "data", "srcset", "action"):
                assert not re.match(r"\s*(https?:)?//", attrs.get(key) or "", re.I), (tag, key, attrs.get(key))
        assert not (tag == "link" and "stylesheet" in (attrs.get("rel") or "").lower())
    assert not re.search(r"<link\b", page, re.I)
    assert not re.search(r"@import|url\(\s*['\"]?(https?:)?//", page, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_pages_load_nothing_from_the_network_and_are_deterministic(tmp_path):
    docs, table = evil_docs()
    first = board_of(tmp_path, docs, [table])[1]
    assert first == render_html(sections(read_results(tmp_path / "results"), [table]), output_dir=tmp_path / "html")
    for page in first.values():
        assert_self_contained(page)


# --- (d) the --check path, (e) content -------------------------------------------------------


@pytest.fixture(scope="module")
def committed_board(tmp_path_factory):
    """The committed results regenerated into a folder of their own: README.md, plots/, html/."""
    if not list(COMMITTED.glob("*.json")):
        pytest.skip("no committed results")
    folder = tmp_path_factory.mktemp("board")
    shutil.copytree(COMMITTED, folder / "results")
    assert main(["leaderboard", "--results-dir", str(folder / "results"), "--output", str(folder / "README.md")]) == 0
    return folder


def test_check_covers_the_html_board(committed_board, tmp_path, capsys):
    folder = tmp_path / "board"
    shutil.copytree(committed_board, folder)
    argv = ["leaderboard", "--results-dir", str(folder / "results"), "--output", str(folder / "README.md")]
    html_dir = folder / "html"
    assert sorted(p.name for p in html_dir.iterdir()) == ["demo.html", INDEX, LITERATURE, MANIFEST]
    assert "An interactive board (sortable, filterable, per-part drill-down): [html/index.html](html/index.html)" in (folder / "README.md").read_text()
    capsys.readouterr()
    assert main([*argv, "--check"]) == 0
    assert "3 HTML pages" in capsys.readouterr().out
    page = html_dir / "demo.html"
    original = page.read_text(encoding="utf-8")
    page.write_text(original.replace("83.83", "93.83", 1), encoding="utf-8")
    assert main([*argv, "--check"]) == 1
    err = capsys.readouterr().err
    assert f"{html_dir} is out of date" in err and "demo.html differs" in err and "run `harness leaderboard`" in err
    page.unlink()
    assert main([*argv, "--check"]) == 1 and "demo.html is missing" in capsys.readouterr().err
    # regenerating restores it; a page harness no longer writes is removed, files it never wrote stay
    (html_dir / "mine.html").write_text("<p>mine</p>")
    record = json.loads((html_dir / MANIFEST).read_text())
    (html_dir / "gone.html").write_text("old")
    (folder / "other.html").write_text("<p>not harness's</p>")
    (html_dir / MANIFEST).write_text(json.dumps({"pages": record["pages"] + ["gone.html", "../other.html"]}))
    assert main([*argv, "--check"]) == 1 and "gone.html" in capsys.readouterr().err
    assert main(argv) == 0
    assert page.read_text(encoding="utf-8") == original
    assert not (html_dir / "gone.html").exists() and (html_dir / "mine.html").exists() and (folder / "other.html").exists()
    assert main([*argv, "--check"]) == 0


def test_the_page_shows_rows_intervals_tiers_plots_and_parts(committed_board):
    page = (committed_board / "html" / "demo.html").read_text(encoding="utf-8")
    board = sections(read_results(committed_board / "results"))
    (section,) = board
    for row in section.rows:
        assert html.escape(row.label) in page
    assert page.count('<tbody class="entry"') == len(section.rows)
    # the markdown's numbers, cell for cell: bm25's top-20 "83.83 (81.6–85.9)" is "83.83" and "[81.6–85.9]"
    bm25 = next(row for row in cells((committed_board / "README.md").read_text(), raw=True) if row[0] == "bm25")
    value, interval = bm25[2 + section.ks.index(20)].replace("*", "").split(" ", 1)
    entry = re.search(r'<tbody class="entry" data-row="\d+" id="s0-r\d+"><tr><td data-sort="bm25">.*?</tbody>', page, re.S).group()
    assert value in entry and "[" + interval.strip("()") + "]" in entry
    # the best row: every cutoff in the tier, marked and explained
    best = re.search(r'<tbody class="entry" data-row="0" id="s0-r0">.*?</tbody>', page, re.S).group()
    assert best.count('class="num tier-best"') == len(section.ks) and TIER_NOTE in page
    assert 'class="synthetic-banner"' in page and "SYNTHETIC" in page
    assert page.count("<svg") == 2 and "<?xml" not in page and "<!DOCTYPE svg" not in page
    assert_self_contained(page)
    assert "Top-k by part" in page and "Seen and unseen parts" in page
    index = (committed_board / "html" / INDEX).read_text(encoding="utf-8")
    assert 'href="demo.html"' in index and "SYNTHETIC" in index and f">{len(section.rows)}<" in index


def test_published_rows_seeds_cost_and_ceiling(tmp_path):
    n = 200
    runs = {"best": [1] * 120 + [0] * 80, "close": [1] * 116 + [0] * 84, "far": [1] * 40 + [0] * 160}
    docs = [make_result(name, ranks=ranks(h), depth=20, k=[1, 20], suite="nq") for name, h in runs.items()]
    for doc in docs:
        doc["suite"]["synthetic"] = False
    docs[0]["cost"] = cost()
    rr = make_result("bm25", ranks=ranks([1] * 30 + [0] * 170), depth=20, k=[1, 20], suite="nq")
    rr["suite"]["synthetic"] = False
    rr["reranker"] = {"name": "upr", "plugin": "x", "parameters": {"model": "t5"}, "depth": 10}
    rr["first_stage_ranks"] = {"all": {f"q{i}": (i % 15 if i < 180 else None) for i in range(n)}}
    seeds = [make_result("t", params={"seed": s}, ranks=ranks([1] * (50 + s) + [0] * (150 - s)), depth=20, k=[1, 20], suite="nq",
                         created=f"2026-01-0{s}T00:00:00Z") for s in (1, 2)]
    for doc in seeds:
        doc["suite"]["synthetic"] = False
    table = PublishedTable(name="paper-t1", title="T1", citation="Someone 2020, Table 1", url="https://example.org/t1",
                           rows=(PublishedRow(system="BM25 (paper)", suite="nq", values={20: 59.1, 100: 73.7}),))
    (section,), pages = board_of(tmp_path, docs + [rr] + seeds, [table])
    page = pages["nq.html"]
    rows = {row.label: row for row in section.rows}
    assert sorted(rows) == ["best", "bm25 » upr(t5, top-10)", "close", "far", "t"] and rows["t"].seeds == 2
    # the tier: best and close (McNemar p = 0.125), not far nor the re-ranked row; a row over seeds never
    top1 = section.ks.index(1)
    assert {label for label, row in rows.items() if row.cells[top1].tier} == {"best", "close"}
    assert page.count('class="num tier-best"') == 2 * len(section.ks)
    close = rows["close"].cells[top1]
    assert f"[{100 * close.low:.1f}–{100 * close.high:.1f}]" in page
    assert f"± {100 * rows['t'].cells[top1].std:.2f}" in page
    # the published row, beside the results, with its source
    assert '<span class="published-mark">published</span>' in page and 'href="https://example.org/t1"' in page
    assert "59.1" in page and ">published rows<" in page
    # cost and re-rank ceiling: columns shown because some row has them
    assert cost_summary(rows["best"].cost) == "cpu ×1 · 0.00 GPU-h · host 1.2 GB · 3,610 q/s"
    assert "cpu ×1 · 0.00 GPU-h · host 1.2 GB · 3,610 q/s" in page and ">cost</button>" in page
    # first stage ranks 0..14 for 180 questions: 120 of them (ranks 0..9 in each block of 15) within the 10 re-ranked
    ceiling = rerank_ceiling(rows["bm25 » upr(t5, top-10)"].results)
    assert (ceiling.ceiling, ceiling.depth) == (pytest.approx(120 / 200), 10)
    assert "ceiling 60.0" in page and "(first stage top-10)" in page and ">re-rank ceiling</button>" in page
    # its details: first stage against re-ranked, wins and losses, at each cutoff
    top1 = next(a for a in ceiling.at if a.k == 1)
    assert "Re-ranking against its ceiling: 60.00% of questions had an answer in the first stage's top 10" in page
    assert f'<td class="num">{top1.wins} / {top1.losses}</td>' in page


def test_optional_columns_only_when_some_row_has_them(tmp_path):
    _, pages = board_of(tmp_path, [make_result("a"), make_result("b", ranks={"all": {"q1": None, "q2": 0, "q3": 1, "q4": None}})])
    page = pages["s.html"]
    assert ">cost</button>" not in page and "re-rank ceiling" not in page and 'class="published-mark"' not in page


def test_a_malformed_cost_or_first_stage_is_a_one_line_error(tmp_path):
    """Result files are validated when read: a board is never built from a broken cost or first stage."""
    import json

    from harness.errors import InputFileError
    from harness.results.schema import read_results

    doc = make_result("a")
    doc["cost"] = cost(gpu_hours="lots")
    (tmp_path / "x.json").write_text(json.dumps(doc))
    with pytest.raises(InputFileError, match=r"x\.json: 'cost.gpu_hours' is not a finite non-negative number") as info:
        read_results(tmp_path)
    assert "\n" not in str(info.value)
    (tmp_path / "x.json").unlink()
    doc = make_result("b")
    doc["reranker"] = {"name": "upr", "plugin": "x", "parameters": {}, "depth": 5}
    doc["first_stage_ranks"] = {"all": {"q1": "first"}}
    (tmp_path / "y.json").write_text(json.dumps(doc))
    with pytest.raises(InputFileError, match=r"y\.json: 'first_stage_ranks.all' must have the questions|y\.json: 'first_stage_ranks.all.q1' must be null"):
        read_results(tmp_path)


def test_the_index_is_one_filterable_table_of_every_suites_rows(tmp_path):
    """Two suites with other cutoffs: the index's table holds all their rows (each linking to its
    row on its suite's page), every cutoff either reports (– where one does not), no tier marks,
    and a suite box beside the others."""
    docs = [make_result("bm25", ranks=ranks([1, 0, 1, 1]), depth=20, k=[1, 20], suite="nq"),
            make_result("dpr", ranks=ranks([1, 1, 1, 1]), depth=20, k=[1, 20], suite="nq"),
            make_result("bm25", ranks=ranks([0, 0, 1]), depth=5, k=[1, 5], suite="tq")]
    board, pages = board_of(tmp_path, docs)
    index = pages[INDEX]
    assert_self_contained(index)
    (data,) = board_data(index)
    assert [(row["suite"], row["retriever"]) for row in data["rows"]] == [("=nq", "=dpr"), ("=nq", "=bm25"), ("=tq", "=bm25")]
    parsed = Tags(index)
    suite_box = re.search(r'<select data-field="suite">(.*?)</select>', index).group(1)
    assert re.findall(r'<option value="([^"]*)">', suite_box) == ["", "=nq", "=tq"]
    assert [a["data-field"] for t, a in parsed.tags if t == "select"] == ["suite", "retriever", "variant", "reranker", "seed", "domain"]
    headers = re.findall(r'<button type="button" class="sort">([^<]*)</button>', index)
    assert headers == ["configuration", "suite", "retriever", "variant", "re-ranker", "seeds", "top-1", "top-5", "top-20"]
    assert index.count('<tbody class="entry"') == 3 and "3 of 3 rows shown" in index
    links = [a["href"] for t, a in parsed.tags if t == "a" and a.get("class") == "label"]
    assert links == ["nq.html#s0-r0", "nq.html#s0-r1", "tq.html#s0-r0"]
    for link in links:
        name, anchor = link.split("#")
        assert f'id="{anchor}"' in pages[name]
    # tq reports no top-20 and nq no top-5; tiers are left to the suite pages
    tq = re.search(r'<tbody class="entry" data-row="2">.*?</tbody>', index, re.S).group()
    assert tq.count('<td class="num" data-sort="">–</td>') == 1 and "33.33" in tq
    assert "tier-best" not in re.search(r'<table class="rows">.*</table>', index, re.S).group()
    assert "tier-best" in pages["nq.html"]


def test_the_seed_box_filters_by_training_seed(tmp_path):
    """A row's seed values are its checkpoints' training seeds (training.seed); a row over two
    training seeds matches both; untrained rows (a plain ``seed`` parameter too) have none."""
    def trained(seed, hits, created):
        return make_result("trained", params={"variant": "dpr", "training": {"variant": "dpr", "data": ["d (sha256:1)"], "seed": seed}},
                           ranks=ranks(hits), depth=20, k=[1, 20], suite="nq", created=created)

    docs = [trained(1, [1, 0, 1, 0], "2026-01-01T00:00:00Z"), trained(2, [1, 1, 1, 0], "2026-01-02T00:00:00Z"),
            make_result("other", params={"variant": "qsft", "training": {"variant": "qsft", "data": ["d"], "seed": 3}},
                        ranks=ranks([1, 1, 0, 0]), depth=20, k=[1, 20], suite="nq"),
            make_result("plain", params={"seed": 5}, ranks=ranks([0, 1, 0, 0]), depth=20, k=[1, 20], suite="nq")]
    (section,), pages = board_of(tmp_path, docs)
    rows = {row.retriever: row for row in section.rows}
    assert (rows["trained"].seeds, rows["trained"].training_seeds) == (2, (1, 2))
    assert rows["other"].training_seeds == (3,) and rows["plain"].training_seeds == ()
    for name in ("nq.html", INDEX):
        page = pages[name]
        box = re.search(r'<label>training seed <select data-field="seed">(.*?)</select>', page).group(1)
        assert re.findall(r'<option value="([^"]*)">([^<]*)</option>', box) == [
            ("", "all"), ("=1", "1"), ("=2", "2"), ("=3", "3"), ("!", "none")]
        (data,) = board_data(page)
        assert {row["retriever"]: row["seed"] for row in data["rows"]} == {
            "=trained": ["=1", "=2"], "=other": ["=3"], "=plain": ["!"]}
        assert "training seeds 1, 2</small>" in page and "training seed 3</small>" in page
    assert 'select data-field="seeds"' not in pages["nq.html"]


# --- (f) in a headless browser ----------------------------------------------------------------

CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def _chromium() -> str | None:
    found = Path("/usr/bin/chromium")
    return str(found) if found.is_file() else shutil.which("chromium")


def keep_artifact(path: Path) -> Path | None:
    """A copy of ``path`` in the folder :data:`ARTIFACTS_ENV` names (made when missing), or None
    when it names none: pytest's ``tmp_path`` is not kept after a run."""
    folder = os.environ.get(ARTIFACTS_ENV)
    if not folder:
        return None
    target = Path(folder)
    target.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, target / path.name)
    return target / path.name


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium context (Debian's chromium driven by playwright), or a skip."""
    executable = _chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        sync_playwright = None
    if executable is None or sync_playwright is None:
        pytest.skip("no headless browser: install Debian's chromium and the playwright package (CI does)")
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path / "profile"), executable_path=executable, args=CHROMIUM_ARGS, headless=True,
            viewport={"width": 1400, "height": 1000},
        )
        try:
            yield context
        finally:
            context.close()


class Watched:
    """A page of ``context`` whose script errors and requests are recorded."""

    def __init__(self, context):
        self.page = context.new_page()
        self.page.set_default_timeout(30_000)
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.on("request", lambda request: self.requests.append(request.url))

    def screenshot(self, path: Path) -> None:
        """A screenshot at ``path``, kept in the artifacts folder too (:func:`keep_artifact`)."""
        self.page.screenshot(path=str(path), full_page=False)
        kept = keep_artifact(path)
        print(f"screenshot: {path}" + (f" (kept as {kept})" if kept else ""))

    def assert_clean(self) -> None:
        assert not self.errors
        assert all(u.startswith(("file:", "data:", "about:")) for u in self.requests), self.requests


def test_the_board_in_a_headless_browser(browser, committed_board, tmp_path):
    (section,) = sections(read_results(committed_board / "results"))
    top20 = section.ks.index(20)
    column = 5 + top20  # label, retriever, variant, re-ranker, seeds, then the cutoffs
    url = (committed_board / "html" / "demo.html").as_uri()
    watched = Watched(browser)
    page = watched.page
    page.goto(url)
    entries = page.locator("section#s0 table.rows > tbody.entry")
    visible = page.locator("section#s0 table.rows > tbody.entry:visible")
    assert visible.count() == len(section.rows) == entries.count()

    def shown_values() -> list[float]:
        return [float(v) for v in visible.evaluate_all(
            f"bodies => bodies.map(b => b.rows[0].cells[{column}].getAttribute('data-sort'))")]

    header = page.locator("section#s0 thead th").nth(column)
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "descending"
    assert shown_values() == sorted(shown_values(), reverse=True)
    header.locator("button").click()
    assert header.get_attribute("aria-sort") == "ascending"
    assert shown_values() == sorted(shown_values())
    # an interval is visible in a cell, the best row carries the tier mark
    bm25 = next(row for row in section.rows if row.label == "bm25").cells[top20]
    interval = f"[{100 * bm25.low:.1f}–{100 * bm25.high:.1f}]"
    assert page.get_by_text(interval, exact=True).first.is_visible()
    best = page.locator("section#s0 tbody.entry[data-row='0'] td.tier-best")
    assert best.count() == len(section.ks) and "McNemar" in best.first.get_attribute("title")
    # typing in the filter hides rows that do not match; the variant box narrows further
    page.locator("section#s0 input.filter-text").fill("bm25")
    expected = sum(
        "bm25" in " ".join([r.label, r.retriever, r.variant or "", r.reranker or "", r.all_parameters, *r.training_data]).lower()
        for r in section.rows
    )
    assert 0 < visible.count() == expected < len(section.rows)
    page.locator("section#s0 input.filter-text").fill("")
    variant = next(row.variant for row in section.rows if row.variant)
    page.locator("section#s0 select[data-field='variant']").select_option(f"={variant}")
    assert visible.count() == sum(row.variant == variant for row in section.rows)
    page.locator("section#s0 select[data-field='variant']").select_option("")
    assert visible.count() == len(section.rows)
    # the training seed box: the rows trained with that seed; "none" the others
    seed = next(row.training_seeds[0] for row in section.rows if row.training_seeds)
    page.locator("section#s0 select[data-field='seed']").select_option(f"={seed}")
    assert 0 < visible.count() == sum(seed in row.training_seeds for row in section.rows) < len(section.rows)
    page.locator("section#s0 select[data-field='seed']").select_option("!")
    assert visible.count() == sum(not row.training_seeds for row in section.rows)
    page.locator("section#s0 select[data-field='seed']").select_option("")
    # the domain box: zero-shot rows only (bm25 on demo), then the in-domain ones (trained on demo-train)
    for value in ("zero-shot", "in-domain"):
        page.locator("section#s0 select[data-field='domain']").select_option(f"={value}")
        assert 0 < visible.count() == sum(row.domain == value for row in section.rows) < len(section.rows)
    page.locator("section#s0 select[data-field='domain']").select_option("")
    # a row opens into its parts
    drill = page.locator("section#s0 tbody.entry[data-row='0'] tr.drill")
    assert not drill.is_visible()
    page.locator("section#s0 tbody.entry[data-row='0'] button.expand").click()
    assert drill.is_visible() and drill.locator("table.parts").first.is_visible()
    first_part = section.parts[0]  # a relation id, shown with the relation's name
    assert drill.get_by_text(part_title(first_part), exact=True).first.is_visible()
    watched.screenshot(tmp_path / "board-demo.png")
    watched.assert_clean()


def test_the_index_in_a_headless_browser(browser, committed_board, tmp_path):
    """The committed results and a second suite: the index's suite box shows one suite's rows, the
    other boxes narrow them, and a configuration's link opens its row on the suite's page."""
    from harness.board.html import sync_html_dir

    shutil.copytree(committed_board / "results", tmp_path / "results")
    extra = [make_result(name, ranks=ranks(h), depth=20, k=[1, 20], suite="other")
             for name, h in (("bm25", [1, 0, 1]), ("late", [1, 1, 0]))]
    board, pages = board_of(tmp_path, extra)
    sync_html_dir(pages, tmp_path / "html", check=False)
    counts = {section.suite: len(section.rows) for section in board}
    assert sorted(counts) == ["demo", "other"]
    watched = Watched(browser)
    page = watched.page
    page.goto((tmp_path / "html" / INDEX).as_uri())
    visible = page.locator("section#all table.rows > tbody.entry:visible")
    shown = page.locator("section#all .shown")
    total = sum(counts.values())
    assert visible.count() == total and shown.text_content() == f"{total} of {total} rows shown"
    suite_box = page.locator("section#all select[data-field='suite']")
    suite_box.select_option("=other")
    assert visible.count() == 2 and shown.text_content() == f"2 of {total} rows shown"
    assert sorted(visible.locator("a.label").all_text_contents()) == ["bm25", "late"]
    # boxes combine: bm25 of the suite other only
    page.locator("section#all select[data-field='retriever']").select_option("=bm25")
    assert visible.count() == 1
    page.locator("section#all select[data-field='retriever']").select_option("")
    suite_box.select_option("=demo")
    assert visible.count() == counts["demo"]
    (demo,) = [section for section in board if section.suite == "demo"]
    page.locator("section#all select[data-field='seed']").select_option("!")
    assert visible.count() == sum(not row.training_seeds for row in demo.rows)
    page.locator("section#all select[data-field='seed']").select_option("")
    suite_box.select_option("")
    assert visible.count() == total
    # sorting the whole table by top-20, then a link to a row on its suite's page
    column = 6 + [k for k in sorted({k for s in board for k in s.ks})].index(20)
    page.locator("section#all thead th").nth(column).locator("button").click()
    values = [float(v) for v in visible.evaluate_all(
        f"bodies => bodies.map(b => b.rows[0].cells[{column}].getAttribute('data-sort'))")]
    assert values == sorted(values, reverse=True)
    watched.screenshot(tmp_path / "board-index.png")
    suite_box.select_option("=other")
    visible.first.locator("a.label").click()
    page.wait_for_load_state()
    assert re.search(r"/other\.html#s0-r\d$", page.url)
    assert page.locator(f"#{page.url.rsplit('#', 1)[1]}").is_visible()
    watched.assert_clean()


def test_the_literature_page_filters_by_domain_in_a_headless_browser(browser, committed_board):
    from harness import registry
    from harness.board.sections import literature

    lit = literature(list(registry.registry("published")), [])
    position, nq = next((i, s) for i, s in enumerate(lit) if s.suite == "nq")
    watched = Watched(browser)
    page = watched.page
    page.goto((committed_board / "html" / "literature.html").as_uri())
    visible = page.locator(f"section#l{position} table.rows > tbody.entry:visible")
    assert page.locator(f"section#l{position} h2").text_content().startswith("nq")
    assert visible.count() == len(nq.entries)
    for value in ("zero-shot", "in-domain"):
        page.locator(f"section#l{position} select[data-field='domain']").select_option(f"={value}")
        assert 0 < visible.count() == sum(e.domain == value for e in nq.entries) < len(nq.entries)
    watched.assert_clean()
