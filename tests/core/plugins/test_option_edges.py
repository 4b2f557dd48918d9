"""Option values at the edges: text kept as typed after ``-o``, numbers bounded for every built-in
option, and a refused value leaves nothing behind."""

from __future__ import annotations

import json
import pickle

import pytest

from harness.api import Option, OptionError, check_options, integer, number, positive_int, text
from harness.api.options import INT_LIMIT
from harness.cli.common import parse_options
from harness.registry import KINDS, declared_options, registry


def _declarations(want):
    """(kind, spec name, option name, Option) of every built-in declaration ``want`` accepts."""
    found = []
    for kind in KINDS:
        for entry in registry(kind).entries():
            options = declared_options(entry.spec)
            for name in options:
                option = options.declaration(name)
                if want(option):
                    found.append((kind, entry.spec.name, name, option))
    return found


def _is_free_text(option: Option) -> bool:
    return option.type is str and option.choices is None and option.fields is None and not option.literals


#: Texts a user types for a text option (a commit prefix, a number-like tag, a zero-padded
#: name, a list-like label) that JSON reads as something else or rewrites.
TYPED = ["6e35", "1234", "0123", "1.50", "1E3", "-0", "[1, 2]", '{"a": 1}', "12345678901234567890123"]


def test_every_builtin_text_option_keeps_the_text_as_typed():
    found = _declarations(_is_free_text)
    assert {name for _, _, name, _ in found} >= {"revision", "model", "device", "query_model", "path"}
    for kind, spec, name, option in found:
        for raw in TYPED:
            given = parse_options([f"{name}={raw}"])[name]
            value = option.check(given, name, f"{kind} {spec}")
            assert value == raw and type(value) is str, (kind, spec, name, raw, value)


def test_a_commit_prefix_reaches_the_loader_as_text():
    found = registry("retrievers").entry("dpr-nq")
    assert found.spec.options["revision"] is None
    from harness import registry as reg

    resolved = reg.resolve("retrievers", "dpr-nq", parse_options(["revision=6e35", "max_length=0128"]))
    assert resolved.options == {"revision": "6e35", "max_length": 128}


def test_typed_values_stay_the_values_everywhere_else():
    given = parse_options(["depth=12", "scale=6e35", "items=[1, 2]", "map={\"a\": 1}", "word=hello", "flag=true", "none=null"])
    assert given == {"depth": 12, "scale": 6e35, "items": [1, 2], "map": {"a": 1}, "word": "hello", "flag": True, "none": None}
    assert json.loads(json.dumps(given)) == given
    assert pickle.loads(pickle.dumps(given)) == given
    assert repr(given["depth"]) == "12" and repr(given["scale"]) == "6e+35"
    declared = {"depth": positive_int(1), "scale": number(1.0), "items": Option([], type=list), "map": Option({}, type=dict),
                "word": text("x"), "flag": Option(False, type=bool), "none": text(None)}
    checked = check_options(declared, given)
    assert checked == given
    # what reaches a loader is of the plain types, never a subclass that remembers its text
    assert [type(checked[k]) for k in ("depth", "scale", "items", "map")] == [int, float, list, dict]
    plain = check_options({"anything": 0}, parse_options(["anything=7"]))
    assert type(plain["anything"]) is int


def test_integers_beyond_64_bits_and_beyond_floats_are_refused_in_one_line():
    with pytest.raises(OptionError) as info:
        integer(1).check(10**30, "depth", "retriever 'r'")
    assert str(info.value) == (f"retriever 'r': option depth must be an integer (at most {INT_LIMIT:,} in magnitude), "
                               f"got {10**30}")
    assert integer(1).check(INT_LIMIT, "depth") == INT_LIMIT
    with pytest.raises(OptionError, match=r"option depth must be an integer .*got -9223372036854775808$"):
        integer(1).check(-INT_LIMIT - 1, "depth")
    with pytest.raises(OptionError, match=r"^option scale must be a number, got 1000"):
        number(1.0).check(10**400, "scale")  # no OverflowError
    given = parse_options(["shard_size=99999999999999999999"])
    with pytest.raises(OptionError, match=r"got 99999999999999999999$"):
        positive_int(1).check(given["shard_size"], "shard_size")


def test_every_builtin_integer_option_refuses_a_typo_of_thirty_digits():
    found = _declarations(lambda option: option.type is int)
    assert len(found) > 50
    for kind, spec, name, option in found:
        with pytest.raises(OptionError) as info:
            option.check(parse_options([f"{name}={10**30}"])[name], name, f"{KINDS[kind].noun} {spec!r}")
        assert f"option {name} must be" in str(info.value) and str(info.value).endswith(f"got {10**30}")


def test_the_dense_engines_numeric_options_have_a_declared_bound():
    from harness_builtins.dense.options import INDEX_OPTIONS, RUNTIME_OPTIONS

    for options in (INDEX_OPTIONS, RUNTIME_OPTIONS):
        for name, option in options.declarations.items():
            if option.type is int:
                assert option.max is not None and option.max < 2**31, name


@pytest.mark.parametrize("option", ["hnsw_ef_search=1000000000000000000000000000000", "shard_size=99999999999999999999",
                                    "ivf_nlist=99999999999999999999", "batch_size=99999999999999999999"])
def test_a_huge_dense_option_leaves_nothing_behind(capsys, tmp_path, monkeypatch, option):
    from harness.cli.main import main

    cache, results = tmp_path / "cache", tmp_path / "results"
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(cache))
    code = main(["run", "-r", "minilm", "-s", "demo", "-o", option, "--results-dir", str(results), "--no-progress"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if not line.startswith("harness: warning:")]
    name, value = option.split("=")
    assert code == 2 and len(lines) == 1, err
    assert lines[0].startswith(f"harness: error: retriever 'minilm': option {name} must be an integer from 1 to ")
    assert lines[0].endswith(f"got {value}")
    assert not cache.exists() and not results.exists()
