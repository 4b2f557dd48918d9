"""ART's and REALM's encoders resolve ``device`` as every other built-in model user does
(:func:`harness_builtins.common.devices.resolve_device`), and the presets' catalogue loads no
encoder code when plugins register."""

from __future__ import annotations

import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from harness.errors import HarnessError  # noqa: E402


def _art(device):
    from transformers import MegatronBertConfig, MegatronBertModel

    from harness_builtins.dense.art import ArtEncoder

    config = MegatronBertConfig(vocab_size=64, hidden_size=8, num_hidden_layers=1, num_attention_heads=2,
                                intermediate_size=16, max_position_embeddings=32)
    towers = [MegatronBertModel(config, add_pooling_layer=False) for _ in range(2)]
    return ArtEncoder(*towers, None, max_length=16, device=device)


def _realm(device):
    from harness_builtins.dense.realm import REALM_CONFIG_DEFAULTS, RealmEmbedderModel, RealmEncoder, bert_config_from_realm

    config = {**REALM_CONFIG_DEFAULTS, "vocab_size": 64, "hidden_size": 8, "num_hidden_layers": 1,
              "num_attention_heads": 2, "intermediate_size": 16, "max_position_embeddings": 32}
    model = RealmEmbedderModel(bert_config_from_realm(config), projection_size=4)
    return RealmEncoder(model, model, None, device=device)


@pytest.mark.parametrize("build", [_art, _realm], ids=["art", "realm"])
def test_art_and_realm_resolve_devices_alike(build):
    expected = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    assert build(None).device == expected
    assert build("auto").device == expected
    assert build("cpu").device == torch.device("cpu")
    assert build(torch.device("cpu")).device == torch.device("cpu")
    with pytest.raises(HarnessError, match=r"^device: 'cuda:99' was asked for but torch sees"):
        build("cuda:99")
    with pytest.raises(HarnessError, match=r"^device must be auto, cpu, cuda or cuda:N, got 'gpu please'$"):
        build("gpu please")


def test_the_preset_catalogue_imports_no_encoder_code():
    """Registering the built-in encoders reads the catalogue only: neither the encoders' modules
    nor the hub loader, numpy or torch are imported until an encoder is built."""
    code = (
        "import sys\n"
        "from harness_builtins.dense.presets import encoder_specs\n"
        "encoder_specs()\n"
        "heavy = ('harness_builtins.dense.encoders', 'harness_builtins.dense.hub', 'numpy', 'torch', 'transformers')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
