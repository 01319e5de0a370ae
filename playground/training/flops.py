"""Model FLOPs utilisation (MFU): the share of the accelerator's peak a training run achieves.

MFU = (units per second x training FLOPs per unit) / peak FLOP/s of the precision the matrices
run in. The FLOPs per unit come from the family (``Family.sizes.train_flops_per_unit``); the
peaks below are NVIDIA's dense (no sparsity) datasheet figures. Anything not in the table (CPUs,
other GPUs) has no MFU: we print none rather than a guess.
"""
from __future__ import annotations

import torch

# (name fragment, precision) -> peak FLOP/s, dense. The first matching fragment wins, so the
# PCIe H100 comes before the plain "H100" of the SXM card. H200 has the H100 SXM's compute.
PEAK_FLOPS: tuple[tuple[str, dict[str, float]], ...] = (
    ("H100 PCIe", {"bf16": 756e12, "tf32": 378e12, "fp32": 51.2e12}),
    ("H100", {"bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12}),
    ("H200", {"bf16": 989.4e12, "tf32": 494.7e12, "fp32": 66.9e12}),
    ("A100", {"bf16": 312e12, "tf32": 156e12, "fp32": 19.5e12}),
)


def peak_flops(device_name: str, precision: str) -> float | None:
    """Peak dense FLOP/s of the GPU called ``device_name`` in ``precision`` (bf16, tf32, fp32), or None."""
    for fragment, peaks in PEAK_FLOPS:
        if fragment in device_name:
            return peaks.get(precision)
    return None


def matmul_precision(autocast_dtype: torch.dtype | None, tf32: bool) -> str:
    """The precision the run's matrix products use: bf16/fp16 under autocast, else tf32 or fp32."""
    if autocast_dtype in (torch.bfloat16, torch.float16):
        return "bf16"  # fp16 tensor cores have bf16's peak on these GPUs
    return "tf32" if tf32 else "fp32"


def mfu(units_per_s: float | None, flops_per_unit: int | None, peak: float | None) -> float | None:
    """Achieved / peak FLOP/s, in [0, 1] for a sane measurement; None when any part is unknown."""
    if not units_per_s or not flops_per_unit or not peak:
        return None
    return units_per_s * flops_per_unit / peak


def device_peak(device: str, autocast_dtype: torch.dtype | None, tf32: bool) -> float | None:
    """The peak FLOP/s of the CUDA device ``device`` in the precision the run uses (None off CUDA)."""
    dev = torch.device(device)
    if dev.type != "cuda" or not torch.cuda.is_available():
        return None
    return peak_flops(torch.cuda.get_device_name(dev), matmul_precision(autocast_dtype, tf32))
