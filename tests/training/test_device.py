"""Device decisions (CUDA paths included) tested on a CPU machine through DeviceCaps."""
from __future__ import annotations

import pytest
import torch

from playground.errors import ConfigError
from playground.training.device import device_caps


def test_cuda_with_bf16_gets_every_fast_path():
    caps = device_caps("cuda", "auto", compile=True, bf16_supported=True, compile_supported=True)
    assert caps.autocast_dtype is torch.bfloat16
    assert caps.tf32 and caps.fused_adamw and caps.pin_memory and caps.compile
    assert caps.defer_readback  # no per-step sync on the loss
    assert caps.optimizer_kwargs("adamw") == {"fused": True}
    assert caps.optimizer_kwargs("sgd") == {}
    assert "bf16" in caps.describe() and "fused AdamW" in caps.describe()


def test_cuda_without_bf16_falls_back_to_fp32_and_refuses_explicit_bf16():
    caps = device_caps("cuda:1", "auto", bf16_supported=False)
    assert caps.autocast_dtype is None and caps.tf32 and caps.device_type == "cuda"
    with pytest.raises(ConfigError, match="bf16"):
        device_caps("cuda", "bf16", bf16_supported=False)


def test_fp32_precision_on_cuda_disables_autocast_only():
    caps = device_caps("cuda", "fp32", bf16_supported=True)
    assert caps.autocast_dtype is None and caps.fused_adamw and caps.pin_memory


def test_cpu_is_fp32_with_fused_adamw_where_torch_has_it():
    caps = device_caps("cpu", fused_supported=False)
    assert not caps.defer_readback  # reading a CPU value costs nothing: every step is checked
    assert (caps.autocast_dtype, caps.tf32, caps.fused_adamw, caps.pin_memory, caps.compile) == (None, False, False, False, False)
    assert caps.optimizer_kwargs("adamw") == {}
    assert device_caps("cpu", fused_supported=True).optimizer_kwargs("adamw") == {"fused": True}
    real = device_caps("cpu")
    if real.fused_adamw:  # this torch has the CPU kernel: an optimizer builds with it
        p = torch.nn.Parameter(torch.ones(2))
        torch.optim.AdamW([p], **real.optimizer_kwargs("adamw"))
    x = torch.ones(2)
    assert caps.to_device(x) is x  # no copy on CPU
    with caps.autocast():
        assert torch.get_autocast_dtype("cpu") is not None  # nullcontext: nothing enabled
        assert not torch.is_autocast_enabled("cpu")


def test_cpu_bf16_autocast_on_request():
    caps = device_caps("cpu", "bf16")
    with caps.autocast():
        y = torch.nn.Linear(4, 4)(torch.ones(1, 4))
    assert y.dtype is torch.bfloat16


def test_mps_never_compiles_and_bad_inputs_are_errors():
    with pytest.raises(ConfigError, match="compile"):
        device_caps("mps", compile=True)
    assert device_caps("mps").fused_adamw is False
    with pytest.raises(ConfigError, match="precision"):
        device_caps("cpu", "fp8")
