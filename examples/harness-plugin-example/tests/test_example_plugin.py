"""The plugin's own tests (run after `pip install -e .`): conformance, registration and the suite."""

from __future__ import annotations

from harness.testing import check_retriever

from harness_plugin_example.suite import capitals_suite


def test_retriever_keeps_the_contract():
    # Looked up by name, so this also checks the entry point and the register_retrievers hook.
    check = check_retriever("example-overlap")
    assert check.parameters == {"lowercase": True}
    assert check.accuracy == {1: 1.0, 5: 1.0}  # the toy suite is easy for a lexical retriever


def test_retriever_option_and_own_suite():
    check = check_retriever("example-overlap", options={"lowercase": False}, suite=capitals_suite(), k=5)
    assert check.parameters == {"lowercase": False}


def test_suite_is_well_formed():
    suite = capitals_suite()
    assert len(suite.questions) == 10 and len(suite.corpus) == 20
    for question in suite.questions:
        # every question has a passage whose text contains its answer
        assert any(answer in passage.text for answer in question.answers for passage in suite.corpus)


def test_encoder_runs_on_the_dense_engine(tmp_path):
    # The dense plugin offers every registered encoder as a retriever of the same name.
    check = check_retriever("example-hashing", suite=capitals_suite(), k=5, cache_dir=tmp_path)
    assert check.parameters["dim"] == 256 and check.parameters["similarity"] == "inner_product"
