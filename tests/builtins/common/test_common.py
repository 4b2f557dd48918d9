"""The built-ins' shared package (harness_builtins.common): one device and precision resolution
for every model user (what ``auto`` is on a GPU is the caller's), the template check, and a light
import."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.errors import HarnessError


def test_precision_auto_is_fp32_on_cpu_and_the_caller_s_choice_on_gpu(monkeypatch):
    import torch

    from harness_builtins.common.devices import resolve_precision
    from harness_builtins.dense.pipeline import encoder_precision

    for gpu_auto in ("bf16", "fp16"):
        assert resolve_precision("auto", "cpu", gpu_auto=gpu_auto) == "fp32"
        assert resolve_precision(None, "cpu", gpu_auto=gpu_auto) == "fp32"
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: True)
    assert resolve_precision("auto", "cuda:1") == "bf16"  # sequence-to-sequence models: T5 overflows in fp16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda *a, **k: False)
    assert resolve_precision("auto", "cuda") == "fp32"
    assert encoder_precision("auto", "cuda") == "fp16" == resolve_precision("auto", "cuda", gpu_auto="fp16")
    assert resolve_precision("bf16", "cpu") == "bf16" and resolve_precision("fp16", "cuda") == "fp16"
    for precision, device, fragment in (("fp16", "cpu", "fp16 needs a GPU"), ("fp8", "cpu", "precision must be one of")):
        with pytest.raises(HarnessError, match=fragment):
            resolve_precision(precision, device)
        with pytest.raises(HarnessError, match=fragment):
            encoder_precision(precision, device)


def test_one_device_resolution(monkeypatch):
    import torch

    from harness_builtins.common.devices import resolve_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == resolve_device(None) == resolve_device("") == "cpu"
    assert resolve_device(torch.device("cpu")) == "cpu"
    for device, fragment in (("cuda:0", "device: 'cuda:0' was asked for but torch sees no GPU"),
                             ("bogus", "device must be auto, cpu, cuda or cuda:N, got 'bogus'"),
                             (3, "device must be auto, cpu, cuda or cuda:N, got 3")):
        with pytest.raises(HarnessError, match=fragment):
            resolve_device(device)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == "cuda" and resolve_device("cuda:1") == "cuda:1"
    with pytest.raises(HarnessError, match=r"torch sees 2 GPUs \(cuda:0 to cuda:1\)"):
        resolve_device("cuda:2")


def test_importing_the_shared_package_and_registering_imports_nothing_heavy():
    code = (
        "import sys\n"
        "import harness_builtins.common.devices, harness_builtins.common.seq2seq\n"
        "import harness_builtins.rerank, harness_builtins.training\n"
        "import harness_builtins.training.losses as _losses_needs_torch_only\n"
        "print(sorted(m for m in ('transformers', 'harness_builtins.rerank.upr') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"  # the losses import no transformers and nothing of the rerank plugin
