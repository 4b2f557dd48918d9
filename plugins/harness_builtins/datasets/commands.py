"""``harness data``: fetch, verify and prepare benchmark files, and make training data."""

from __future__ import annotations

from pathlib import Path

import click

from harness.cli.common import no_progress_option, parse_options
from harness.api import MAX_K
from harness.errors import HarnessError, UnknownNameError


def _catalog():
    from harness_builtins.datasets.catalog import catalog

    return catalog()


def _suites(catalog, names: tuple[str, ...], runs: tuple[str, ...] = (), releases: tuple[str, ...] = ()):
    """The suite specs among ``names`` (all when none is given); training set, published run
    (``runs``) and released embeddings (``releases``) names are skipped, any other name is an error."""
    from harness.registry import UnavailableNameError, unavailable

    for name in names:
        if name not in catalog.suites and name not in catalog.training and name not in runs and name not in releases:
            for kind, noun in (("suites", "suite"), ("training-data", "training set"), ("runs", "published run"),
                               ("embeddings", "released embeddings")):
                if unavailable(kind, name) is not None:
                    raise UnavailableNameError(noun, name, unavailable(kind, name))
            raise UnknownNameError(
                "suite, training set, published run or released embeddings with downloadable data", name,
                [*catalog.suites, *catalog.training, *runs, *releases],
            )
    if not names:
        return list(catalog.suites.values())
    return [catalog.suites[n] for n in names if n in catalog.suites]


def _training_sets(catalog, names: tuple[str, ...]):
    """The training set specs among ``names`` (all when none is given)."""
    return [catalog.training[n] for n in names if n in catalog.training] if names else list(catalog.training.values())


@click.group("data")
def data() -> None:
    """Fetch, verify and prepare benchmark files (questions and corpora)."""


@data.command("where")
def where() -> None:
    """Print the data folder ($HARNESS_DATA_DIR, else $HARNESS_CACHE_DIR/data)."""
    from harness.data.download import data_dir

    click.echo(data_dir())


def _fetched(label: str, result) -> str:
    state = "downloaded" if result.downloaded else "present"
    pin = "verified" if result.verified else f"sha256 {result.sha256} (no pinned checksum: recorded)"
    return f"{label}: {state}, {pin}: {result.path}"


def _published_runs() -> dict:
    from harness import registry

    return {run.name: run for run in registry.registry("runs")}


def _released_embeddings() -> dict:
    from harness import registry

    return {release.name: release for release in registry.registry("embeddings")}


def _check_unambiguous(catalog, runs: dict, names: tuple[str, ...], releases: dict | None = None) -> None:
    for name in names:
        if name in runs and (name in catalog.suites or name in catalog.training):
            kind = "suite" if name in catalog.suites else "training set"
            raise HarnessError(f"{name!r} is both a {kind} and a published run ({runs[name].source}); rename one of the specs")
        if releases and name in releases and (name in catalog.suites or name in catalog.training or name in runs):
            kind = "suite" if name in catalog.suites else "training set" if name in catalog.training else "published run"
            raise HarnessError(
                f"{name!r} is both a {kind} and released embeddings ({releases[name].source}); rename one of the specs"
            )


def _fetch_release(release, progress: bool) -> None:
    """Say what ``release`` needs on disk, then fetch its parts in order, one line per part."""
    import shutil

    from harness.data.embeddings import disk_at_least, disk_needed, disk_text, fetch_embeddings, gigabytes, part_path, size_text

    folder = part_path(release.parts[0]).parent
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free if probe.exists() else None
    present = sum(1 for part in release.parts if part_path(part).is_file())
    click.echo(
        f"released embeddings {release.name}: {len(release.parts)} part(s) ({present} already here), "
        f"{size_text(release)} to download, {disk_text(release)} on disk once imported "
        f"(downloads and the float32 store); {gigabytes(free)} free under {probe}"
    )
    needed = disk_needed(release)
    needed = disk_at_least(release) if needed is None else needed
    if free is not None and needed is not None and free < needed:
        click.echo(f"harness: warning: {release.name} needs {gigabytes(needed)} and only {gigabytes(free)} is free under {probe}", err=True)
    count = len(release.parts)
    fetch_embeddings(
        release, progress=progress,
        on_part=lambda index, result: click.echo(_fetched(f"{release.name} part {index + 1}/{count}", result)),
    )


@data.command("fetch")
@click.argument("suites", nargs=-1, required=True)
@click.option("--corpus", "with_corpus", is_flag=True, help="Also fetch and prepare each suite's corpus (DPR's Wikipedia is 13 GB).")
@no_progress_option
def fetch_command(suites: tuple[str, ...], with_corpus: bool, no_progress: bool) -> None:
    """Download SUITES' question files, training sets (harness list training-data), published
    runs (harness list runs) or released embeddings (harness list embeddings: every part, in
    order, after saying the disk they need), checksummed and resumable, into the data folder."""
    from harness.runfiles.published import fetch_run
    from harness_builtins.datasets.loading import fetch_file, open_corpus

    catalog = _catalog()
    runs = _published_runs()
    releases = _released_embeddings()
    _check_unambiguous(catalog, runs, suites, releases)
    for spec in _suites(catalog, suites, tuple(runs), tuple(releases)):
        for part in spec.parts:
            click.echo(_fetched(f"{spec.name}/{part.name}", fetch_file(part.file, progress=not no_progress)))
        corpus = catalog.corpora[spec.corpus]
        if with_corpus:
            opened = open_corpus(corpus, progress=not no_progress)
            click.echo(f"{spec.name}: corpus {corpus.name} ready, {len(opened)} passages")
        else:
            from harness.data.download import size_text

            click.echo(f"{spec.name}: corpus {corpus.name} ({corpus.file.url}, {size_text(corpus.file.size)}) is fetched "
                       f"on first use or with --corpus (`harness data missing {spec.name} --corpus` lists what is not here)")
    for spec in _training_sets(catalog, suites):
        click.echo(_fetched(spec.name, fetch_file(spec.file, progress=not no_progress)))
    for name in suites:
        if name in runs:
            click.echo(_fetched(f"published run {name}", fetch_run(runs[name], progress=not no_progress)))
        elif name in releases:
            _fetch_release(releases[name], not no_progress)


def _suite_files(catalog, name: str, with_corpus: bool) -> list:
    """The question files of suite ``name`` (and its corpus's with ``with_corpus``); none for a
    suite that is not a spec'd one (the demo suites ship with the harness)."""
    from harness_builtins.datasets.loading import suite_needs

    spec = catalog.suites.get(name)
    if spec is None:
        return []
    questions, corpus = suite_needs(spec, catalog.corpora[spec.corpus] if with_corpus else None)
    return questions + corpus


def _release_files(release, remote_of) -> list:
    from harness.data.needs import Needed

    parts = release.parts
    return [Needed(f"released embeddings {release.name}, part {i + 1}/{len(parts)}", remote_of(part))
            for i, part in enumerate(parts)]


@data.command("missing")
@click.argument("names", nargs=-1)
@click.option("--corpus", "with_corpus", is_flag=True, help="Also each suite's corpus (DPR's Wikipedia is 13 GB), as a run needs it.")
@click.option("--retriever", "-r", default=None, help="Also what this retriever downloads (e.g. art: its checkpoint archive).")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="The retriever's options, as for harness run (e.g. -o checkpoint=nq-t0-3b).")
@click.option("--format", "output_format", type=click.Choice(["table", "tsv"]), default="table", show_default=True,
              help="table: to read; tsv: one line per file, url<TAB>path<TAB>size<TAB>sha256<TAB>what ('-' where not published), no header.")
def missing_command(names: tuple[str, ...], with_corpus: bool, retriever: str | None, options: tuple[str, ...],
                    output_format: str) -> None:
    """List every file NAMES (suites, training sets, published runs with their suite's questions,
    released embeddings) and --retriever (with -o embeddings=NAME: that release's parts) would
    download and the data folder does not have: what it is for, its size, where to save it, its
    URL and sha256. --corpus adds each suite's (and release's) corpus. Nothing is downloaded.

    On a machine with no network: run this there, fetch the list elsewhere (--format tsv), copy
    each file to its path, and run with HARNESS_OFFLINE=1.

    Example: harness data missing entityquestions --corpus --retriever art --format tsv
    """
    from harness import registry
    from harness.data.download import data_dir
    from harness.data.embeddings import remote_file as release_file
    from harness.data.needs import Needed, format_table, format_tsv, missing, retriever_needs, total_text
    from harness.runfiles.published import remote_file as run_file
    from harness_builtins.datasets.loading import corpus_needed, remote, suite_needs

    if not names and retriever is None:
        raise click.UsageError("name a suite, training set, published run or released embeddings, or give --retriever")
    found = registry.resolve("retrievers", retriever, parse_options(options)) if retriever is not None else None
    catalog = _catalog()
    runs = _published_runs()
    releases = _released_embeddings()
    _check_unambiguous(catalog, runs, names, releases)
    needed: list[Needed] = []
    if names:
        for spec in _suites(catalog, names, tuple(runs), tuple(releases)):
            questions, corpus = suite_needs(spec, catalog.corpora[spec.corpus] if with_corpus else None)
            needed += questions + corpus
        for spec in _training_sets(catalog, names):
            needed.append(Needed(f"training set {spec.name}", remote(spec.file)))
        for name in names:
            if name in runs:
                needed.append(Needed(f"published run {name}", run_file(runs[name])))
                needed += _suite_files(catalog, runs[name].suite, with_corpus)  # scoring reads its suite
            elif name in releases:
                needed += _release_files(releases[name], release_file)
                if with_corpus and releases[name].corpus in catalog.corpora:
                    needed.append(corpus_needed(catalog.corpora[releases[name].corpus]))
    if found is not None:
        needed += retriever_needs(found.spec.name, found.options)
        release = found.options.get("embeddings")  # a dense retriever searching released vectors
        if isinstance(release, str) and release in releases:
            needed += _release_files(releases[release], release_file)
    absent = missing(needed)
    if output_format == "tsv":
        click.echo(format_tsv(absent), nl=False)
        return
    root = data_dir()
    if not absent:
        click.echo(f"nothing missing: the {len(needed)} file(s) are all in the data folder {root}")
        return
    click.echo(format_table(absent))
    click.echo(f"\n{total_text(absent)} missing under {root}; harness data fetch NAMES downloads them here, "
               "or fetch them elsewhere (--format tsv), save each at its path and run with HARNESS_OFFLINE=1")


@data.command("verify")
@click.argument("suites", nargs=-1)
@no_progress_option
def verify_command(suites: tuple[str, ...], no_progress: bool) -> None:
    """Re-hash the downloaded files of SUITES, training sets and published runs (harness list
    runs; default: all) and the suites' corpora, and the parts of the released embeddings named
    (also against the publisher's md5); exit 1 on a mismatch."""
    from harness.data.download import ChecksumError, DownloadError, data_dir, recorded_sha256, verify
    from harness.data.embeddings import md5_file
    from harness.runfiles.published import remote_file

    catalog = _catalog()
    runs = _published_runs()
    releases = _released_embeddings()
    _check_unambiguous(catalog, runs, suites, releases)
    files = {}
    named: dict[str, str] = {}  # a file asked for by name -> that name
    for name in suites:
        if name in releases:
            for part in releases[name].parts:
                files[part.path] = part
                named[part.path] = name
        elif name in runs:
            files[runs[name].path] = remote_file(runs[name])
            named[runs[name].path] = name
    if not suites:  # every published run that is in the data folder, as every suite's files
        for run in runs.values():
            files[run.path] = remote_file(run)
    for spec in _suites(catalog, suites, tuple(runs), tuple(releases)):
        for part in spec.parts:
            files[part.file.path] = part.file
        files.setdefault(catalog.corpora[spec.corpus].file.path, catalog.corpora[spec.corpus].file)
    for spec in _training_sets(catalog, suites):
        files[spec.file.path] = spec.file
    root, bad, checked = data_dir(), 0, 0
    for rel, file in sorted(files.items()):
        path = root / rel
        if not path.exists():
            if rel in named:  # asked for by name: say that it is not there
                click.echo(f"---  {path} is not fetched (harness data fetch {named[rel]})")
            continue
        recorded = None if file.sha256 else recorded_sha256(path)
        try:  # with no pinned checksum, verify compares with the digest recorded at the first download
            verify(path, sha256=file.sha256, size=file.size, progress=not no_progress)
        except (ChecksumError, DownloadError) as exc:
            bad += 1
            click.echo(f"BAD  {exc}")
            continue
        md5 = getattr(file, "md5", None)
        if md5 is not None and (found := md5_file(path, progress=not no_progress)) != md5:
            bad += 1
            click.echo(f"BAD  {path} does not match its published checksum (expected md5 {md5}, got {found})")
            continue
        checked += 1
        how = "pinned sha256" if file.sha256 else ("recorded sha256" if recorded else "no checksum known: recorded now")
        how += " and published md5" if md5 is not None else ""
        click.echo(f"ok   {path} ({how})")
    click.echo(f"{checked} file(s) ok, {bad} bad, under {root}")
    if bad:
        raise click.exceptions.Exit(1)


@data.command("split")
@click.argument("articles", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("output", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--words", type=click.IntRange(min=1), default=100, show_default=True, help="Words per passage.")
@no_progress_option
def split_command(articles: Path, output: Path, words: int, no_progress: bool) -> None:
    """Split ARTICLES (JSONL of {"title", "text"}) into DPR-style passages, written as a DPR TSV."""
    from harness.data.passages import split_articles

    if output.exists() and output.resolve() == articles.resolve():
        raise HarnessError(f"{output}: the output would overwrite the input")
    count = split_articles(articles, output, words=words)
    click.echo(f"wrote {count} passages to {output}")


@data.command("make-training")
@click.option("--suite", "-s", required=True, help="Suite whose questions become training examples (e.g. demo-train).")
@click.option("--retriever", "-r", required=True, help="Retriever that finds positives and hard negatives (e.g. bm25).")
@click.option("--option", "-o", "options", multiple=True, metavar="KEY=VALUE", help="A retriever option, e.g. -o k1=1.2 (repeatable).")
@click.option("--negatives", type=click.IntRange(min=0), default=1, show_default=True, help="Hard negatives per question (DPR: 1).")
@click.option("--depth", type=click.IntRange(min=1, max=MAX_K), default=100, show_default=True, help="Passages retrieved per question.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="DPR training JSON to write (.gz: compressed; .jsonl: JSON lines).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where indexes are cached (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@click.option("--threads", type=click.IntRange(min=1), default=None, help="Threads for indexing and search (default: all cores).")
@no_progress_option
def make_training_command(suite, retriever, options, negatives, depth, output, cache_dir, threads, no_progress) -> None:
    """Make DPR training data from SUITE by distant supervision with RETRIEVER.

    Per question, the positive is the best-ranked passage whose text contains an answer and the hard
    negatives the best-ranked passages with no answer in title or text; questions with no positive
    in the top --depth are dropped.

    Example: harness data make-training --suite demo-train --retriever bm25 --output train.json
    """
    from harness import registry
    from harness.data.passages import check_output
    from harness.data.training import suite_training_examples, write_training_examples
    from harness.evaluate import make_context

    found = registry.resolve("retrievers", retriever, parse_options(options))  # names checked before any work
    check_output(output, what="--output")  # before the retrieval, which may take hours
    loaded_suite = registry.suites().get(suite).load()
    model = registry.load("retrievers", retriever, found.options).value
    context = make_context(loaded_suite, cache_dir=cache_dir, threads=threads, show_progress=not no_progress)
    examples, dropped = suite_training_examples(
        loaded_suite, model, name=retriever, context=context, depth=depth, negatives=negatives
    )
    written = write_training_examples(output, examples)
    short = sum(1 for e in examples if len(e.hard_negatives) < negatives)
    note = f", {short} with fewer than {negatives} hard negatives" if short else ""
    click.echo(
        f"{suite}: {len(loaded_suite.questions)} questions, {written} examples written to {output}, "
        f"{dropped} dropped (no passage with an answer in the top {depth}){note}"
    )


@data.command("generate-questions")
@click.argument("corpus")
@click.option("--model", "-m", required=True, help="Question generator: a sequence-to-sequence model's hub id or directory.")
@click.option("--output", required=True, type=click.Path(dir_okay=False, path_type=Path), help="DPR training JSON to write (.gz: compressed; .jsonl: JSON lines).")
@click.option("--answers", type=click.Choice(["extract", "generate"]), default="extract", show_default=True, help="extract: answers taken from the passage, the model writes the question; generate: the model writes question and answer.")
@click.option("--prompt", default=None, help="The model's input template: {answer} {title} {text} (extract) or {title} {text} (generate).")
@click.option("--separator", default=" answer: ", show_default=True, help="generate: what separates question and answer in the model's output.")
@click.option("--per-passage", type=click.IntRange(min=1), default=1, show_default=True, help="Answers (extract) or beams (generate) per passage.")
@click.option("--passages", type=click.IntRange(min=1), default=None, help="Use a seeded sample of this many passages (default: all).")
@click.option("--negatives", type=click.IntRange(min=0), default=1, show_default=True, help="BM25 hard negatives per example.")
@click.option("--batch-size", type=click.IntRange(min=1), default=None, help="Prompts per generation batch (default: 32 on GPU, 16 on CPU).")
@click.option("--max-new-tokens", type=click.IntRange(min=1), default=32, show_default=True, help="Longest output in tokens.")
@click.option("--num-beams", type=click.IntRange(min=1), default=1, show_default=True, help="Beam search width (1: greedy).")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True, help="Seed of the passage sample, the answer choice and torch.")
@click.option("--label", default="generated", show_default=True, help="Label of every example.")
@click.option("--device", default="auto", show_default=True, help="cpu, cuda, cuda:N (auto: cuda when available).")
@click.option("--precision", type=click.Choice(["auto", "fp32", "bf16", "fp16"]), default="auto", show_default=True, help="Model precision (auto: bf16 on a GPU that has it, else fp32).")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path), default=None, help="Where indexes and corpus stores are cached (default: $HARNESS_CACHE_DIR or ~/.cache/harness).")
@no_progress_option
def generate_questions_command(corpus, model, output, answers, prompt, separator, per_passage, passages, negatives,
                               batch_size, max_new_tokens, num_beams, seed, label, device, precision, cache_dir,
                               no_progress) -> None:
    """Generate question-answer training data from CORPUS (a suite name, or a DPR .tsv / .jsonl
    corpus file) with a question generator, PAQ-style: only questions whose answer is in the
    passage and not in the question are kept, with BM25 hard negatives.

    An interrupted run goes on where it stopped when run again with the same settings
    (progress is kept in OUTPUT.partial.jsonl); OUTPUT.meta.json records settings and counts.

    Example: harness data generate-questions demo --model DIR --passages 1000 --output gen.json
    """
    from harness_builtins.datasets.generate import generate_questions

    stats = generate_questions(
        corpus, model, output=output, answers=answers, prompt=prompt, separator=separator, per_passage=per_passage,
        passages=passages, negatives=negatives, batch_size=batch_size, max_new_tokens=max_new_tokens,
        num_beams=num_beams, seed=seed, label=label, device=device, precision=precision, cache_dir=cache_dir,
        progress=not no_progress,
    )
    short = f", {stats.fewer_negatives} with fewer than {negatives} hard negatives" if stats.fewer_negatives else ""
    click.echo(f"{corpus}: {stats.summary()}{short}; written to {output}")
