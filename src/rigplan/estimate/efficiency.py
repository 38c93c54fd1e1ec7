"""Achievable efficiency of each kind of operation, per GPU family: data, not one global MFU.

A GEMM whose smaller dimension (of n and k; m is the token count) is d reaches

    e(d) = e_max · d / (d + d_half)

of the dense tensor peak: large square GEMMs run near e_max, thin ones (left after a high tensor-
parallel degree, or in a small model) fall off, as in Calculon's size-dependent efficiency tables
(Isaev et al., SC'23) and in published cuBLAS sweeps. Attention kernels (FlashAttention) reach
their own fraction of peak; memory-bound element-wise work runs at a fraction of HBM bandwidth.

Where the numbers come from is stated per family. "fitted" means fitted to rigplan's validation
suite (src/rigplan/validation/cases, `rigplan validate`): A100 on the Megatron-LM, Korthikanti,
MosaicML and torchtitan rows; H100 on the torchtitan and NeMo rows. Families without published
end-to-end runs in the suite inherit from the nearest measured family, scaled by vendor GEMM
benchmarks where those exist, and say so; treat their speed predictions as less certain.
"""

from __future__ import annotations

from dataclasses import dataclass

from rigplan.domain.hardware import Gpu


@dataclass(frozen=True, kw_only=True, slots=True)
class Efficiency:
    """Achievable fractions of peak for one GPU family."""

    family: str
    gemm_max: float
    """Large bf16/fp16 GEMMs, fraction of the dense peak."""
    gemm_half_dim: float
    """GEMM inner/outer dimension at which efficiency is half of gemm_max."""
    fp8_gemm_max: float
    """Large fp8 GEMMs (scaling included), fraction of the dense fp8 peak."""
    attention: float
    """Fused attention kernels (cuDNN / FlashAttention-3 in TransformerEngine), forward+backward,
    fraction of the bf16 dense peak."""
    attention_eager: float
    """FlashAttention-2 through PyTorch SDPA (or Triton flash kernels), forward+backward."""
    hbm: float
    """Element-wise and optimizer kernels, fraction of HBM bandwidth."""
    elementwise_passes_eager: float
    """Multiplier on the minimal element-wise traffic for the eager stack: unfused PyTorch re-reads
    tensors (norms upcast to fp32, separate casts and multiplies)."""
    elementwise_passes_fused: float = 1.0
    """The same for the fused stack (1 = every element-wise op fused into one read and one write)."""
    source: str
    measured: bool
    """True when fitted on published runs of this family; False when inherited."""


AMPERE = Efficiency(
    family="ampere", gemm_max=0.78, gemm_half_dim=128.0, fp8_gemm_max=0.0, attention=0.30, attention_eager=0.30,
    hbm=0.80, elementwise_passes_eager=2.0, elementwise_passes_fused=1.5,
    source="fitted on 163 A100 runs (Megatron-LM 2021, Korthikanti 2022, MosaicML llm-foundry, torchtitan 2024-04): "
           "median error 4%; gemm_max 0.78 is below cuBLAS's ~0.87 on large square GEMMs because real layers "
           "mix shapes; flash attention at 0.30 of peak matches the Triton/FlashAttention-2 kernels those runs used",
    measured=True,
)
HOPPER = Efficiency(
    family="hopper", gemm_max=0.60, gemm_half_dim=128.0, fp8_gemm_max=0.65, attention=0.30, attention_eager=0.20,
    hbm=0.80, elementwise_passes_eager=6.0, elementwise_passes_fused=1.5,
    source="fitted on 17 H100 runs (torchtitan 2024-12 bf16/fp8, NeMo 24.07 fp8): median error 5%. The torchtitan "
           "H100s were 500 W power-capped HBM2e parts, so the bf16 and eager-stack figures are conservative for "
           "a 700 W H100 SXM (cuBLAS reaches ~0.7-0.75 of the bf16 peak there)",
    measured=True,
)
BLACKWELL = Efficiency(
    family="blackwell", gemm_max=0.60, gemm_half_dim=192.0, fp8_gemm_max=0.65, attention=0.30, attention_eager=0.20,
    hbm=0.80, elementwise_passes_eager=6.0, elementwise_passes_fused=1.5,
    source="inherited from Hopper (no end-to-end B200/GB200 run in the suite); larger MMA tiles need larger "
           "GEMMs, hence a larger half-efficiency dimension",
    measured=False,
)
ADA = Efficiency(
    family="ada", gemm_max=0.78, gemm_half_dim=128.0, fp8_gemm_max=0.55, attention=0.30, attention_eager=0.30,
    hbm=0.80, elementwise_passes_eager=2.0, elementwise_passes_fused=1.5,
    source="inherited from Ampere (same SM lineage); GeForce fp32-accumulate halving is already in the catalog peak",
    measured=False,
)
VOLTA = Efficiency(
    family="volta", gemm_max=0.75, gemm_half_dim=128.0, fp8_gemm_max=0.0, attention=0.20, attention_eager=0.20,
    hbm=0.80, elementwise_passes_eager=2.0, elementwise_passes_fused=1.5,
    source="inherited from Ampere; FlashAttention-2 has no sm_70 kernels, so attention runs slower",
    measured=False,
)
CDNA = Efficiency(
    family="cdna", gemm_max=0.45, gemm_half_dim=192.0, fp8_gemm_max=0.40, attention=0.20, attention_eager=0.15,
    hbm=0.75, elementwise_passes_eager=4.0, elementwise_passes_fused=1.5,
    source="inherited and scaled: MI300X bf16 GEMMs reach about half of the 1307 TFLOP/s dense peak in public "
           "benchmarks (SemiAnalysis, MI300X vs H100 training, Dec 2024), against ~0.7 on H100",
    measured=False,
)
GAUDI = Efficiency(
    family="gaudi", gemm_max=0.55, gemm_half_dim=192.0, fp8_gemm_max=0.50, attention=0.25, attention_eager=0.20,
    hbm=0.75, elementwise_passes_eager=4.0, elementwise_passes_fused=1.5,
    source="inherited; no public end-to-end Gaudi 3 training run in the suite",
    measured=False,
)


def efficiency_for(gpu: Gpu) -> Efficiency:
    """The efficiency data of the GPU's family, chosen by its architecture name."""
    arch = gpu.architecture.lower()
    if "hopper" in arch:
        return HOPPER
    if "blackwell" in arch:
        return BLACKWELL
    if "ada" in arch:
        return ADA
    if "volta" in arch:
        return VOLTA
    if "cdna" in arch:
        return CDNA
    if "gaudi" in arch:
        return GAUDI
    return AMPERE
