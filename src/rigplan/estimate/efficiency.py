"""Achievable efficiency of each kind of operation, per GPU architecture, from published microbenchmarks.

No figure here is fitted to rigplan's validation suite; each value carries the microbenchmark it
comes from. Four mechanisms:

GEMMs. A GEMM whose smaller dimension (of n, k and the token count m) is d reaches

    e(d) = e_max · d / (d + d_half)

of the dense tensor peak at the part's full-power clock: e_max is what cuBLAS / hipBLASLt reach on
large square GEMMs, d_half where a published size sweep falls to half of it (tile and wave
quantization of thin GEMMs; Calculon, Isaev et al. SC'23, uses the same size-dependent form).

Attention kernels (FlashAttention-2, FlashAttention-3, cuDNN fused attention) by sequence length and
head dimension, forward and backward weighted 1 : 2.5 as rigplan counts their FLOPs (the backward
recomputes the scores):

    e(s, d) = e_max · s / (s + s_half) · min(1, h(d) / h(128)),   h(d) = d / (d + 32)

A curve measured on one part carries that part's softmax cost: each score needs one exponential on the
special function units (MUFU.EX2) in the forward and one in the backward (P recomputed from the saved
log-sum-exp), beside 2·(d_qk + d_v) tensor FLOPs forward and 2.5 times that backward. The exponentials
do not hide behind the matrix products: the second product waits for the softmax of the first
(FlashAttention-4, Zadouri et al. 2026: on B200 the exponential unit needs as many cycles per tile as
the MMA at head dim 128; NVIDIA, "Making Softmax More Efficient with NVIDIA Blackwell Ultra"). A part
whose tensor peak outgrows its exponential rate therefore runs the same kernel further below its peak:

    1/e_part = 1/e_curve - R_ref + R_part,   R = P_bf16 / (X · F_exp),   F_exp = 1.75 · 2·(d_qk + d_v)

with X the part's exponentials per second (catalog `exp_tera_per_s`) and F_exp the tensor FLOPs per
exponential over forward and backward (7·d when d_qk = d_v = d). R_ref is that of the part the curve was
measured on (H100 SXM for the Hopper curves Blackwell inherits: FlashAttention-2, SDPA): 0.26 at head dim 128,
against 0.56
for GB200 (2.5 PFLOP/s, 5 TeraExponentials/s) and 0.26 for GB300 (10.7, Blackwell Ultra's doubled
SFU throughput). Checked against NVIDIA's figure for the change alone: with DeepSeek-V3's MLA shapes
(d_qk 192, d_v 128) in an FP8 forward, the model puts GB300 at 1.3-1.4x GB200 for any tensor
efficiency from 0.55 to 0.75, where NVIDIA reports about 35% more FPROP throughput
(tests/unit/test_efficiency.py).

cuDNN's fused attention has curves measured on each family by NVIDIA's SDPA training benchmark (cuDNN 9.19,
2026: an H200 for Hopper, a GB200 for Blackwell). The Blackwell curve is not moved between Blackwell parts: GB300
runs it at GB200's fraction times its sustained clock (1.08-1.11x measured, 1.080 by the clock), since the 2026
kernels emulate part of the exponentials on the FMA units as FlashAttention-4 does; the model above would give
1.16x more. FP8 attention runs such a curve at its measured fp8 / bf16 rate (KernelCurve.fp8_gain), curves
without one by the model's tensor_speedup (attention_kernel_efficiency).

Kernels written for sm80's warp-level MMA (FlashAttention-2, PyTorch SDPA's flash and memory-efficient
backends: KernelCurve.warp_mma) do not use Blackwell's tcgen05 instructions and run there at about the absolute
rate they reach on an H100 (WARP_MMA_B200_OVER_H100), not at the H100 curve's fraction of a 2.3x larger peak:
their matrix products enter the softmax model above with tensor_speedup P_H100 · 1.07 / P_part
(warp_mma_speedup).

Memory-bound work runs at a STREAM-like fraction of HBM bandwidth (`hbm`).

Sustained clock under a power limit (`clock_fraction`): dense tensor work is power-bound and dynamic
power scales as f·V². Inside the DVFS range the voltage rises with the clock but from a floor (V ≈ V0 +
k·f, V0 about a third of the top voltage), so d ln P / d ln f = 1 + 2·k·f/V ≈ 2 near the top of the
range rather than the 3 of V ∝ f: a part capped at P runs its tensor cores at ((P - P_idle) /
(P_tdp - P_idle))^(1/2) of the clock it holds at its design power (CLOCK_POWER_EXPONENT). The cube-root
law (V ∝ f) predicts a 5.6% loss for an H100 capped at 600 W, below the 10-15% step-time loss reported
for transformer pretraining at that cap (factryze.ai Scale Atlas, "Power capping", 2026); the square
root gives 8.3%. P_idle = 0.1 · TDP (an H100 SXM idles near 70 W of 700 W in nvidia-smi). The datasheet
peak and e_max belong to the design power; a 500 W-capped H100 gets 0.83 of them.

Left out: L2-cache effects of specific shapes, GEMM/communication co-scheduling (see the overlap
cost in estimate/step.py), grouped GEMMs of MoE experts (treated as one GEMM per expert shape).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from rigplan.domain.hardware import Gpu

Num = Any

IN_STEP_GEMM_FRACTION = 0.90
"""GEMMs inside a training step reach this share of their square-benchmark rate (transposed
backward layouts, caches shared with concurrent kernels, sustained rather than burst clocks).
Measured once, on A100: cuBLAS's ~0.87 of peak on large square GEMMs against ~0.78 in the GEMMs of
the Megatron-LM A100 runs (Narayanan et al. 2021, 163 TFLOP/s incl. recompute at 1T parameters);
applied unchanged to every architecture."""
NVFP4_OVER_BF16_SUSTAINED = 0.979
"""NVFP4's sustained fraction of the fp4 peak over bf16's of the bf16 peak, timed in one harness on a B200
(pytorch/ao #2427; python benchmarks/nvfp4_gemm_fit.py)."""
IDLE_POWER_FRACTION = 0.10
"""Idle board power / TDP; H100 SXM reports ~60-75 W idle against 700 W in nvidia-smi."""
CLOCK_POWER_EXPONENT = 0.5
"""Sustained clock ∝ (P - P_idle)^0.5 under a power cap: P_dyn = C·V²·f with V rising from a floor
(module docstring)."""


H100_SXM_BF16_FLOP_PER_S = 989.5e12
"""H100 SXM5 dense bf16 peak (datasheet), the part the Hopper attention curves were measured on."""
H100_SXM_EXP_PER_S = 4.18e12
"""H100 SXM5 exponentials per second: 16 exp2 results per clock per SM (CUDA C++ Programming Guide,
arithmetic instruction throughput, compute capability 9.0) x 132 SMs x 1.98 GHz maximum boost clock."""
WARP_MMA_B200_OVER_H100 = 1.07
"""FlashAttention-2's absolute rate on a B200 over an H100: its kernels use sm80's warp-level mma.sync, not
Blackwell's tcgen05 (FlashAttention-4, Zadouri et al. 2026, writes SM100 kernels for that), so they run at about
Hopper's speed on a part with 2.3x the tensor peak. Forward, head dim 128, non-causal, sequence about 4k:
353.9 TFLOP/s on a B200 (meta-pytorch/tritonbench PR #171, flash_v2, batch 8 x 16 heads x 4,096, 2025-03) over
329.5 on an H100 (pytorch/pytorch issue #142132, tritonbench, SDPA's flash backend, 24 heads x 4,608, 2024-12);
Dao-AILab/flash-attention issue #1589 (flash-attn 2.7.4 on a B200, head dim 64, non-causal) measures 300-346
TFLOP/s forward+backward from 1k to 16k tokens, the H100's range."""
CUDNN_BLACKWELL_FP8_GAIN = 1.26
"""cuDNN 9.19's fp8 attention over its bf16 attention on Blackwell, forward and backward (1 : 2.5 by FLOPs): median of
12 rows of NVIDIA's SDPA training benchmark (GB200 and GB300; llama3.1 and DeepSeek-V3 MLA shapes; sequence 4k-16k;
range 1.13-1.45), where the exponential model would give 1.58x on GB200 and 1.75x on GB300 at 4k: the backward, bound by
shared memory more than by the tensor cores (FlashAttention-4, Zadouri et al. 2026), gains only 1.09-1.40x."""
ATTENTION_FLOP_PER_EXP_FACTOR = 1.75
"""Tensor FLOPs per exponential over a forward and backward pass, in units of the forward's 2·(d_qk + d_v)
per score: forward 1 exponential per score, backward (2.5x the forward's FLOPs) 1 more, (1 + 2.5) / 2."""


@dataclass(frozen=True, kw_only=True, slots=True)
class KernelCurve:
    """Forward+backward efficiency of one attention kernel on one architecture (head dim 128, causal)."""

    max_fraction: float
    """Fraction of the bf16 dense peak at long sequences."""
    half_seq: float
    """Sequence length at which the kernel reaches half of max_fraction."""
    source: str
    reference_peak_flop_per_s: float = 0.0
    """bf16 dense peak of the part the curve was measured on (0 = unknown: no softmax adjustment)."""
    reference_exp_per_s: float = 0.0
    """Exponentials per second of that part (0 = unknown: no softmax adjustment)."""
    fp8_gain: float = 0.0
    """Rate of the kernel's fp8 path over its bf16 path, forward and backward weighted 1 : 2.5, measured on the curve's
    part (0: unmeasured, the exponential model's tensor_speedup gives it; attention_kernel_efficiency)."""
    warp_mma: bool = False
    """The kernel is built on the warp-level mma.sync instructions of sm80 (FlashAttention-2, PyTorch SDPA's flash
    and memory-efficient backends): on a part whose tensor cores are driven by newer instructions it keeps about the
    absolute rate of its reference part (warp_mma_speedup)."""


@dataclass(frozen=True, kw_only=True, slots=True)
class Efficiency:
    """Achievable fractions of peak for one GPU architecture, each from a published measurement."""

    family: str
    gemm_max: float
    """Large bf16/fp16 GEMMs, fraction of the dense peak at the design power."""
    gemm_half_dim: float
    """GEMM dimension at which efficiency is half of gemm_max."""
    fp8_gemm_max: float
    """Large fp8 GEMMs (the GEMM alone; casts are counted separately), fraction of the fp8 dense peak."""
    fp8_gemm_half_dim: float = 0.0
    """GEMM dimension at which the fp8 efficiency is half of fp8_gemm_max (0: gemm_half_dim). A tensor core that
    runs fp8 twice as fast as bf16 needs larger GEMMs to stay busy: measured on an H200, 910 against bf16's 380
    (docs/measurements/h200-2026-12.md, section 11)."""
    fp8_grouped_half_dim: float = 0.0
    """The same for an MoE layer's grouped expert GEMMs in fp8 (0: fp8_gemm_half_dim): with their per-expert
    quantization and scale-layout kernels, which the cast bytes (estimate.elementwise) do not cover, they gain
    less over bf16 at thin shapes than one large fp8 GEMM does. Blackwell: 3,000, the least-squares fit to the
    two published MXFP8 / BF16 pairs of one model, layout and stack (Megatron-LM MoE recipes 2026-07 on GB200,
    0.953; Megatron-Bridge #4439 on B200, 1.018; python benchmarks/fp8_grouped_half_dim.py). It puts fp8 expert
    GEMMs at 0.89x bf16 for Qwen3-30B-A3B (ffn 768), 1.12x at DeepSeek-V3's ffn 2048 and 1.37x at Llama 4's
    5120 x 8192: the order of torchao's B200 MXFP8 grouped GEMM benchmarks (forward + backward with quantization:
    1.19-1.60x at N 2048, K 7168; 1.64-1.81x at N 8192, K 5120; their bf16 baseline ran at 32-43% of peak) and of
    a user's 0.95x for a whole layer at dim 2048, ffn 1408 (pytorch/torchtitan #2086). Checked on two
    DeepSeek-V3 pairs it was not fitted on: 1.144 against 1.132 measured (revised 25.11 Megatron-Bridge tables,
    256 GB300) and 1.049 against 1.047 (Megatron-Bridge #1869, B200), where the dense fp8 curve gives 1.34 and
    1.25. Hopper: 1,070, the least-squares fit to the two published FP8 / BF16 pairs of one model, layout and stack
    on H100 (Megatron-LM MoE recipes 2026-07, Qwen3-30B-A3B on 32 H100, EP8, blockwise FP8 whose recipe also
    captures partial CUDA graphs, 1.010; NVIDIA DGX Cloud's Grok-1 recipe on NeMo 25.04, 512 H100, TP4 PP8 CP2 EP8,
    per-tensor delayed scaling, 1.186), which it reproduces at 1.006 and 1.189 where the dense fp8 curve (553)
    gives 1.065 and 1.334; checked on the same DGX Cloud release's Llama 4 Maverick pair it was not fitted on (512
    H100, EP128, the fp8 run with full CUDA graphs), 1.168 against 1.148 measured (python
    benchmarks/fp8_grouped_half_dim.py; tests/validation/test_fp8_grouped_pairs.py). Since the x86 host op went to
    36.2 us (estimate.moe_host.HOST_OP_S, 2026-12-06) the host paces the Qwen3-30B-A3B pair and it no longer bears
    on the curve (rigplan 1.158 at any half dimension); Grok-1 alone gives 1,070 -> 1.196, kept."""
    fp4_gemm_max: float = 0.0
    """Large NVFP4 GEMMs (the GEMM alone, E2M1 data with E4M3 scales per 16 elements), fraction of the fp4 dense
    peak (0: no NVFP4 tensor cores). Blackwell: gemm_max x 0.979, the ratio of the sustained fractions of peak
    of NVFP4 and bf16 timed in one harness on a B200 (torchao's bench_matmul.py, pytorch/ao #2427: 5.57 of 9
    PFLOP/s against 1.42 of 2.25 PFLOP/s, each from a straight-line fit of time against FLOPs over square GEMMs
    of 2,048-8,192; python benchmarks/nvfp4_gemm_fit.py). The curve keeps the fp8 half-efficiency dimension: the
    same fit gives NVFP4 a fixed ~5 us a call more than bf16, which at a training step's GEMMs is under 1% of
    their time and is left out."""
    warp_mma_over_reference: float = 0.0
    """Absolute rate of a warp_mma attention kernel on this family over its rate on the curve's reference part (0:
    the curve's fraction of peak applies unchanged, as on the family it was measured on)."""
    fp8_backward_rate: float = 1.0
    """Rate of the backward fp8 GEMMs (dgrad, wgrad) relative to the forward ones. Training recipes run the
    forward fp8 GEMM with cuBLAS fast accumulation and the backward ones with split accumulation (partial
    sums promoted to fp32 at intervals): Transformer Engine's recipes (fp8_gemm_fprop
    use_split_accumulator=False, fp8_gemm_dgrad / fp8_gemm_wgrad True) and torchao's Float8 config
    (use_fast_accum only for the output GEMM). On parts with a fast-accumulation mode that costs 1.1-1.2x
    (pytorch/ao issue #2377, H100); Blackwell's tensor cores accumulate fp8 in fp32 and have no such mode
    (TransformerEngine PR #2748 review: 'there is no fastAccuMode for sm100')."""
    attention: dict[str, KernelCurve] = field(default_factory=dict)
    """Attention kernels available on this architecture: 'fa2', 'fa3', 'cudnn'."""
    fused_attention_kernel: str = "fa2"
    """The kernel a fused stack (Transformer Engine, Megatron-Core) picks: cuDNN on Hopper/Blackwell."""
    eager_attention_kernel: str = "fa2"
    """The kernel PyTorch's scaled_dot_product_attention runs for the eager stack."""
    hbm: float
    """Achievable fraction of HBM bandwidth (STREAM triad / copy)."""
    source: str
    measured: bool
    """True when the figures were measured on this architecture; False when inherited from a neighbour."""


_FA2_A100 = KernelCurve(
    max_fraction=0.61, half_seq=300.0,
    source="FlashAttention-2 (Dao 2023, arXiv 2307.08691, Fig. 4): A100, causal, head dim 128, forward+backward "
           "~169 TFLOP/s at 2k and ~190 at 16k of 312")
_FA2_H100 = KernelCurve(
    reference_peak_flop_per_s=H100_SXM_BF16_FLOP_PER_S, reference_exp_per_s=H100_SXM_EXP_PER_S,
    max_fraction=0.33, half_seq=230.0, warp_mma=True,
    source="FlashAttention-3 paper (Shah et al. 2024, arXiv 2407.08608, Figs. 5-6): FlashAttention-2 on H100 SXM5, "
           "head dim 128, causal forward 298 (2k) / 335 (16k), backward 291 / 322 TFLOP/s of 989")
_SDPA_H100 = KernelCurve(
    reference_peak_flop_per_s=H100_SXM_BF16_FLOP_PER_S, reference_exp_per_s=H100_SXM_EXP_PER_S,
    max_fraction=0.24, half_seq=230.0, warp_mma=True,
    source="not re-derived: rigplan's earlier end-to-end figure for PyTorch SDPA (flash backend) under torchtitan on "
           "H100 (0.20 of peak, obtained on 500 W-capped parts, so 0.20 / 0.83 = 0.24 at the 700 W design clock), kept "
           "because the torchtitan context-parallel rows (32k-262k tokens, attention-bound) run well below "
           "FlashAttention-2's standalone 0.33; the cause is not modelled. Against it: NVIDIA's Llama-3.2-1B training "
           "benchmark (cudnn-frontend, PyTorch 2.7, H200) measures the flash backend's step at 1.18x the cuDNN "
           "backend's at 16k tokens, where this curve gives 1.49x and FlashAttention-2's 1.27x "
           "(python benchmarks/sdpa_backends_llama1b_check.py)")
_SDPA_EFFICIENT_H100 = KernelCurve(
    reference_peak_flop_per_s=H100_SXM_BF16_FLOP_PER_S, reference_exp_per_s=H100_SXM_EXP_PER_S,
    max_fraction=0.172, half_seq=360.0, warp_mma=True,
    source="PyTorch SDPA's memory-efficient backend (the CUTLASS kernel from xformers, sm80 warp-level MMA), which "
           "runs where the flash backend cannot (query and value heads of different sizes: MLA). From NVIDIA's "
           "Llama-3.2-1B training benchmark (cudnn-frontend benchmark/Llama-3.2-1B-Training, PyTorch 2.7, one H200 "
           "at its 1,500 MHz base clock, head dim 64, batch x sequence 24x768 to 1x16k): the attention time of a step "
           "is the EFFICIENT_ATTENTION step less the CUDNN_ATTENTION step plus the cuDNN attention time of rigplan's "
           "Hopper cuDNN curve at that clock; 0.10 (768) to 0.139 (16k) of the boost peak, fitted in head-dim-128 "
           "units. The same steps on a B200 put it at 146 TFLOP/s at 16k against the H200's 137 (1.07x: a warp-MMA "
           "kernel at its Hopper speed). python benchmarks/sdpa_backends_llama1b_check.py")
_SDPA_A100 = KernelCurve(
    max_fraction=0.30, half_seq=300.0,
    source="not re-derived: rigplan's earlier end-to-end figure for PyTorch SDPA (flash backend) in torchtitan on A100 "
           "(0.30 of peak), below FlashAttention-2's standalone 0.61; the cause is not modelled")
_TRITON_A100 = KernelCurve(
    max_fraction=0.32, half_seq=300.0,
    source="FlashAttention-2 paper (arXiv 2307.08691, Sec. 4.1): FlashAttention-2 is 1.3-2.5x faster than the Triton "
           "FlashAttention kernel; 0.61 / 1.9 (the range's middle)")
_FA3_H100 = KernelCurve(
    reference_peak_flop_per_s=H100_SXM_BF16_FLOP_PER_S, reference_exp_per_s=H100_SXM_EXP_PER_S,
    max_fraction=0.58, half_seq=290.0,
    source="FlashAttention-3 paper (arXiv 2407.08608, Figs. 5-6): H100 SXM5, head dim 128, causal forward 521 (2k) / "
           "616 (16k), backward 501 / 561 TFLOP/s")
_CUDNN_919 = ("NVIDIA/cudnn-frontend benchmark/sdpa_benchmark_training, cuDNN 9.19 (backend 91901, 2026-02), "
              "llama3.1 shape (64 query heads, 8 key-value heads, head dim 128), causal, bf16, batch 1, "
              "sequence 2k-32k; least squares of the forward+backward rate (1 : 2.5 by FLOPs) over the five "
              "sequences (python benchmarks/cudnn_attention_check.py)")
_CUDNN_HOPPER = KernelCurve(
    reference_peak_flop_per_s=H100_SXM_BF16_FLOP_PER_S, reference_exp_per_s=H100_SXM_EXP_PER_S,
    max_fraction=0.651, half_seq=1237.0, fp8_gain=0.90,
    source=f"{_CUDNN_919}, H200 (the H100 SXM's SMs, clock and peak): forward 484 (2k) / 591 (4k) / 673 (16k), "
           "backward 370 / 474 / 579 TFLOP/s. fp8: the same benchmark's causal fp8 rows on the H200 (forward "
           "854-1,010, backward 471-374 TFLOP/s at 4k-16k) run 1.08x, 0.90x and 0.76x the bf16 rate, median 0.90: "
           "the fp8 backward is slower than the bf16 one")
_CUDNN_BLACKWELL = KernelCurve(
    max_fraction=0.654, half_seq=1673.0, fp8_gain=CUDNN_BLACKWELL_FP8_GAIN,
    source=f"{_CUDNN_919}, GB200: forward 1,042 (2k) / 1,335 (4k) / 1,687 (16k), backward 836 / 1,132 / 1,402 TFLOP/s. "
           "Measured on the family, so no softmax adjustment moves it between Blackwell parts: GB300, with twice "
           "GB200's exponential rate, runs it 1.08-1.11x faster from 4k to 32k, its sustained-clock ratio (1.080), not "
           "the 1.16x the exponential model gives (the 2026 kernels emulate part of the exponentials on the FMA "
           "units, as FlashAttention-4 does)")

AMPERE = Efficiency(
    family="ampere", gemm_max=0.87, gemm_half_dim=128.0, fp8_gemm_max=0.0,
    attention={"fa2": _FA2_A100, "triton": _TRITON_A100, "sdpa": _SDPA_A100}, fused_attention_kernel="fa2",
    eager_attention_kernel="sdpa", hbm=0.85,
    source="cuBLAS bf16 on A100 reaches ~270 of 312 TFLOP/s on large square GEMMs (NVIDIA cuBLAS and CUTLASS "
           "published sweeps); d_half 128 kept from rigplan's earlier Calculon-style table (not re-measured); "
           "BabelStream triad ~1.7 of 2.0 TB/s on A100 80GB",
    measured=True,
)
FP8_SPLIT_ACCUMULATION_RATE = 1.0 / 1.15
"""Backward fp8 GEMMs with split accumulation run 1.1-1.2x slower than with fast accumulation (pytorch/ao
issue #2377, H100 benchmark, 2024); 1.15, the middle. cuBLAS of CUDA 13 narrows it: 0.95 median over 19 GEMMs on an
H200 (torch._scaled_mm use_fast_accum False / True; docs/measurements/h200-2026-12/fp8_gemm.json), kept aside
because the published fp8 runs rigplan is checked on used 2024-2025 libraries."""

HOPPER = Efficiency(
    family="hopper", gemm_max=0.78, gemm_half_dim=400.0, fp8_gemm_max=0.70, fp8_gemm_half_dim=553.0,
    fp8_grouped_half_dim=1070.0,
    fp8_backward_rate=FP8_SPLIT_ACCUMULATION_RATE,
    attention={"fa2": _FA2_H100, "fa3": _FA3_H100, "cudnn": _CUDNN_HOPPER, "sdpa": _SDPA_H100,
               "sdpa_efficient": _SDPA_EFFICIENT_H100},
    fused_attention_kernel="cudnn", eager_attention_kernel="sdpa", hbm=0.90,
    source="cuBLAS bf16 on a 700 W H100 SXM reaches ~750-800 of 989 TFLOP/s on large GEMMs (CUTLASS 3.x Hopper "
           "benchmarks: ~75% of peak at 8192^3, ~70% at 4096^3, ~58% at 1024^3, "
           "i.e. d_half ~400), fp8 ~1400 of 1979; STREAM triad ~3.07 of 3.35 TB/s "
           "measured on H100 80GB HBM3. Checked on an H200 (docs/measurements/h200-2026-12/fp8_gemm.json, 19 GEMMs "
           "of 0.1-2 TFLOP: square, MoE expert and Llama 3 8B shapes): bf16 fits (0.77, 380); fp8 with fast "
           "accumulation (torch._scaled_mm, per-tensor scales) fits (0.75, 910) jointly and 553 with rigplan's 0.70 "
           "ceiling, the fp8 curve used here (docs/measurements/h200-2026-12.md, section 11)",
    measured=True,
)
BLACKWELL = Efficiency(
    family="blackwell", gemm_max=0.78, gemm_half_dim=1090.0, fp8_gemm_max=0.70, fp8_grouped_half_dim=3000.0,
    fp4_gemm_max=round(0.78 * NVFP4_OVER_BF16_SUSTAINED, 3),
    warp_mma_over_reference=WARP_MMA_B200_OVER_H100,
    attention={"fa2": _FA2_H100, "cudnn": _CUDNN_BLACKWELL, "sdpa": _SDPA_H100, "sdpa_efficient": _SDPA_EFFICIENT_H100},
    fused_attention_kernel="cudnn",
    eager_attention_kernel="sdpa", hbm=0.90,
    source="GEMM ceiling inherited from Hopper (CUTLASS 3.8 reports ~95% of the SM100 peak for its best kernels, but "
           "no end-to-end cuBLAS sweep of B200 in rigplan's sources); the half-efficiency dimension measured against "
           "Hopper's in one harness: OpenXLA's default matmul performance table (matmul_interpolator_data.h, "
           "kDefaultMatmulPTable, sm_90 and sm_100 bf16 entries, 2025; the sm_100 part taken as B200's 2,250 TFLOP/s) "
           "gives, for each of its 81 GEMMs with every dimension >= 1024, the sm_100 fraction of peak over the sm_90 "
           "one (0.50-0.93: the 256-wide UMMA tiles of a 2.3x faster tensor core need larger GEMMs); carried onto "
           "Hopper's curve (0.78, 400) each ratio implies a d_half, median 1,090 (996 over the batched-by-4 entries, "
           "733 on the largest, 4 x 4096^3). fp8 on sm_100 reaches 0.729 of its 4,500 TFLOP/s on that largest GEMM, "
           "the bf16 fraction, and its 81 fp8 entries put fp8's half-efficiency dimension beside bf16's (702 against "
           "742 fitted directly in that table), so Blackwell's fp8 curve keeps bf16's (Hopper's does not: "
           "fp8_gemm_half_dim); the table's sm_90 fp8 entries exceed the H100's fp8 peak (up to 1.31x) and were not "
           "used; FlashAttention-3 has no SM100 kernels",
    measured=False,
)
ADA = Efficiency(
    family="ada", gemm_max=0.80, gemm_half_dim=128.0, fp8_gemm_max=0.60,
    fp8_backward_rate=FP8_SPLIT_ACCUMULATION_RATE,
    attention={"fa2": _FA2_A100, "sdpa": _SDPA_A100}, fused_attention_kernel="fa2", eager_attention_kernel="sdpa",
    hbm=0.85,
    source="inherited from Ampere (same SM lineage); GeForce fp32-accumulate halving is already in the catalog peak",
    measured=False,
)
VOLTA = Efficiency(
    family="volta", gemm_max=0.80, gemm_half_dim=128.0, fp8_gemm_max=0.0,
    attention={"fa2": KernelCurve(max_fraction=0.25, half_seq=300.0,
                                  source="FlashAttention-2 has no sm_70 kernels: memory-efficient attention "
                                         "(xformers) at about 0.25 of the V100 peak, inherited")},
    fused_attention_kernel="fa2", hbm=0.85,
    source="inherited from Ampere; FlashAttention-2 has no sm_70 kernels, so attention runs slower",
    measured=False,
)
CDNA = Efficiency(
    family="cdna", gemm_max=0.50, gemm_half_dim=192.0, fp8_gemm_max=0.45,
    attention={"fa2": KernelCurve(max_fraction=0.30, half_seq=400.0,
                                  source="Composable Kernel flash attention on MI300X, ~0.3 of the bf16 peak "
                                         "(inherited from the GEMM ratio to Hopper's FlashAttention-2)")},
    fused_attention_kernel="fa2", hbm=0.81,
    source="hipBLASLt bf16 on MI300X reaches about half of the 1307 TFLOP/s dense peak and ~81% of the 5.3 TB/s "
           "HBM bandwidth in public measurements (SemiAnalysis MI300X vs H100 training, Dec 2024; AMD ROCm blog "
           "'Measuring Max-Achievable FLOPs', 2025)",
    measured=True,
)
GAUDI = Efficiency(
    family="gaudi", gemm_max=0.55, gemm_half_dim=192.0, fp8_gemm_max=0.50,
    attention={"fa2": KernelCurve(max_fraction=0.25, half_seq=400.0, source="inherited; no public Gaudi 3 sweep")},
    fused_attention_kernel="fa2", hbm=0.75,
    source="inherited; no public Gaudi 3 GEMM sweep in rigplan's sources",
    measured=False,
)

DAVINCI = Efficiency(
    family="davinci", gemm_max=CDNA.gemm_max, gemm_half_dim=CDNA.gemm_half_dim, fp8_gemm_max=CDNA.fp8_gemm_max,
    attention={"fa2": KernelCurve(max_fraction=0.25, half_seq=400.0,
                                  source="inherited; no public Ascend FlashAttention sweep")},
    fused_attention_kernel="fa2", hbm=CDNA.hbm,
    source="inherited from CDNA 3 (a non-NVIDIA matrix engine behind a vendor BLAS); no public Ascend 910B/910C "
           "GEMM sweep in rigplan's sources",
    measured=False,
)

CN_ACCELERATOR = replace(
    DAVINCI, family="cn-accelerator",
    attention={"fa2": KernelCurve(max_fraction=0.25, half_seq=400.0,
                                  source="inherited; no public attention-kernel sweep of these parts")},
    source="inherited from CDNA 3 (a non-NVIDIA matrix engine behind a vendor BLAS); no public GEMM sweep of "
           "Cambricon, Moore Threads, Biren or Iluvatar parts in rigplan's sources",
)
CN_ACCELERATOR_VENDORS = frozenset({"cambricon", "moorethreads", "biren", "iluvatar"})
"""Vendors whose parts take CN_ACCELERATOR (chosen by vendor: their architecture names share no family word)."""


def efficiency_for(gpu: Gpu) -> Efficiency:
    """The efficiency data of the GPU's family, chosen by its architecture name (by vendor for China's
    domestic accelerators other than Ascend)."""
    if gpu.vendor in CN_ACCELERATOR_VENDORS:
        return CN_ACCELERATOR
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
    if "davinci" in arch:
        return DAVINCI
    return AMPERE


def sustained_tensor_scale(gpu: Gpu) -> float:
    """Sustained tensor rate over the datasheet peak for a part whose rate follows another of the same SM design
    by power (Gpu.power_basis = (P_peak,basis, W_basis)): P_peak,basis · ((W - W_idle) / (W_basis - W_idle,basis))^0.5
    / P_peak, with the square-root law of clock_fraction and idle at IDLE_POWER_FRACTION of each board power.

    Blackwell's datasheet peaks follow their power: B200 at 1,000 W is quoted at 2,250 TFLOP/s bf16 and GB200 at
    1,200 W at 2,500, where the law gives 2,500 · (900 / 1,080)^0.5 = 2,282. Blackwell Ultra keeps those figures at
    more power (B300 1,100 W, GB300 1,400 W) with the same SM count and clock ceiling (GB300: 152 SMs as GB200,
    facebookexperimental/triton PR #2768; 2,070 MHz maximum against GB200's 2,062), so from GB200 the law puts GB300
    at 2,700 and B300 at 2,390. Checked: cuBLAS reaches about 2,174 TFLOP/s bf16 on a GB300 at 1,400 W
    (facebookexperimental/triton PR #2023), 0.81 of 2,700 and 0.87 of 2,500, where an H100 reaches 0.80 of its peak
    (stas00/ml-engineering's maximum achievable matmul table, 794.5 of 989.5); that table has B300 at 1,769 against
    B200's 1,745 (1.01x, the law says 1.05x). AMD's MI325X is the same case: MI300X's die and 1,307.4 TFLOP/s at
    1,000 W against 750, 1.155x by the law, where that table measures 784.9 against 668.4 TFLOP/s (1.174x).
    1.0 without a basis."""
    if gpu.power_basis is None or not gpu.tdp_w or not gpu.peak_flop_per_s.get("bf16"):
        return 1.0
    basis_peak, basis_w = gpu.power_basis
    watts = min(gpu.power_limit_w or gpu.tdp_w, gpu.tdp_w)
    ratio = max(watts - IDLE_POWER_FRACTION * gpu.tdp_w, 0.05 * basis_w) / (basis_w * (1 - IDLE_POWER_FRACTION))
    return float(basis_peak * ratio**CLOCK_POWER_EXPONENT / gpu.peak("bf16"))


def clock_fraction(gpu: Gpu) -> float:
    """Sustained tensor clock under the part's power limit, relative to the clock of its datasheet peak: below the
    design power by the square-root law (module docstring), and for a part quoted at a sibling's peak at more
    power, sustained_tensor_scale."""
    if gpu.power_basis is not None:
        return sustained_tensor_scale(gpu)
    limit = gpu.power_limit_w or gpu.tdp_w
    if limit >= gpu.tdp_w:
        return 1.0
    idle = IDLE_POWER_FRACTION * gpu.tdp_w
    return float(max((limit - idle) / (gpu.tdp_w - idle), 0.05) ** CLOCK_POWER_EXPONENT)


def gemm_clock_fraction(gpu: Gpu) -> float:
    """Sustained rate of dense GEMMs relative to the family curve at the datasheet peak: clock_fraction times the
    part's measured gemm_power_fraction, where its board power does not hold the peak's clock under GEMM load
    (GB200: catalog gemm_power_limit). Attention keeps clock_fraction alone: its curves are measured on the parts
    (estimate.stage_time)."""
    return clock_fraction(gpu) * gpu.gemm_power_fraction


def gemm_efficiency(eff: Efficiency, dims: Num, *, fp8: bool = False, grouped: bool = False,
                    fp4: bool = False) -> Num:
    """Fraction of the dense peak for GEMMs whose smaller dimension is `dims` (array-friendly); `grouped`:
    an MoE layer's grouped expert GEMMs (fp8_grouped_half_dim); `fp4` (with `fp8`): NVFP4 GEMMs, a fraction
    of the fp4 peak (fp4_gemm_max) on the fp8 curve's shape."""
    d = np.asarray(dims, dtype=np.float64)
    top = (eff.fp4_gemm_max if fp8 and fp4 else eff.fp8_gemm_max if fp8 else eff.gemm_max) * IN_STEP_GEMM_FRACTION
    half = eff.fp8_gemm_half_dim if fp8 and eff.fp8_gemm_half_dim else eff.gemm_half_dim
    if fp8 and grouped and eff.fp8_grouped_half_dim:
        half = eff.fp8_grouped_half_dim
    return top * d / (d + half)


def attention_kernel_for(eff: Efficiency, kernels: str, requested: str | None = None,
                         head_dims: tuple[float, float] | None = None) -> str:
    """The attention kernel that runs: the requested one when this architecture has it, else the stack's. PyTorch
    SDPA's flash backend needs the query, key and value heads of one size ("Flash attention requires q,k,v to have
    the same last dimension", aten/src/ATen/native/transformers/cuda/sdp_utils); with `head_dims` (d_qk, d_v) unequal
    (MLA: 192, 128) SDPA dispatches to its memory-efficient backend, 'sdpa_efficient', where the family has it."""
    if requested and requested in eff.attention:
        kernel = requested
    elif kernels == "fused" and eff.fused_attention_kernel in eff.attention:
        kernel = eff.fused_attention_kernel
    elif eff.eager_attention_kernel in eff.attention:
        kernel = eff.eager_attention_kernel
    else:
        kernel = "fa2" if "fa2" in eff.attention else next(iter(eff.attention))
    if kernel == "sdpa" and head_dims and head_dims[0] != head_dims[1] and "sdpa_efficient" in eff.attention:
        return "sdpa_efficient"
    return kernel


def attention_efficiency(eff: Efficiency, kernel: str, seq_len: Num, head_dim: float) -> Num:
    """Fraction of the bf16 peak of one attention kernel at this sequence length and head dim."""
    curve = eff.attention[kernel]
    s = np.asarray(seq_len, dtype=np.float64)
    head = min(1.0, (head_dim / (head_dim + 32.0)) / (128.0 / 160.0))
    return curve.max_fraction * s / (s + curve.half_seq) * head


def attention_flop_per_exp(qk_head_dim: float, v_head_dim: float) -> float:
    """Tensor FLOPs per softmax exponential over forward and backward: 1.75 · 2·(d_qk + d_v)."""
    return ATTENTION_FLOP_PER_EXP_FACTOR * 2.0 * (qk_head_dim + v_head_dim)


def softmax_exp_ratio(peak_flop_per_s: float, exp_per_s: float, flop_per_exp: float) -> float:
    """R = P / (X · F_exp): the exponentials' seconds over the tensor FLOPs' seconds at peak (0 if unknown)."""
    if exp_per_s <= 0 or peak_flop_per_s <= 0 or flop_per_exp <= 0:
        return 0.0
    return peak_flop_per_s / (exp_per_s * flop_per_exp)


def softmax_adjusted_efficiency(e_curve: Num, curve: KernelCurve, *, peak_flop_per_s: float, exp_per_s: float,
                                flop_per_exp: float, tensor_speedup: float = 1.0) -> Num:
    """An attention curve's efficiency moved from the part it was measured on to this one by their
    softmax exponential rates: 1/e = 1/e_curve - R_ref + R_part (module docstring). Unchanged where
    either rate is unknown.

    tensor_speedup s > 1 runs the kernel's matrix products s times faster than the bf16 curve measured them
    (FP8 attention, s = P_fp8 / P_bf16) while its exponentials keep their rate: 1/e = (1/e_curve - R_ref)/s +
    R_part, still in units of the bf16 peak, so e may exceed 1. Checked on FlashAttention-3's own H100 forward
    figures (Shah et al. 2024, arXiv 2407.08608, Figs. 5 and 7, head dim 128, sequence 16k, forward only:
    R = P / (X · 2·(d_qk + d_v)) = 0.46): bf16 648 TFLOP/s predicts 995 in fp8, measured 1,008; cuDNN 595
    predicts 931, measured 1,005 (tests/unit/test_fp8_attention.py). A part without a published exponential
    rate is taken to balance exponentials and tensor work as the curve's part does (R_part = R_ref: the bf16 curve
    unchanged, the fp8 gain of that part); a curve measured on a part of unknown rate gets no fp8 gain, since its
    exponential share is unknown."""
    e = np.asarray(e_curve, dtype=np.float64)
    if curve.reference_exp_per_s <= 0:
        return e_curve
    r_ref = softmax_exp_ratio(curve.reference_peak_flop_per_s, curve.reference_exp_per_s, flop_per_exp)
    r_part = softmax_exp_ratio(peak_flop_per_s, exp_per_s, flop_per_exp) if exp_per_s > 0 else r_ref
    floor = 1.0 / tensor_speedup
    return 1.0 / np.maximum((1.0 / e - r_ref) / tensor_speedup + r_part, floor)


def warp_mma_speedup(eff: Efficiency, curve: KernelCurve, peak_flop_per_s: float) -> float:
    """How much faster than the curve's fraction of this part's peak a warp_mma kernel's matrix products run,
    as a tensor_speedup for softmax_adjusted_efficiency: P_ref · w / P_part, at most 1, with w the family's
    warp_mma_over_reference (Blackwell: WARP_MMA_B200_OVER_H100). 1 for other kernels, for families without the
    ratio, and for curves measured on this device (calibrations: no reference part)."""
    if (not curve.warp_mma or eff.warp_mma_over_reference <= 0 or curve.reference_peak_flop_per_s <= 0
            or peak_flop_per_s <= 0):
        return 1.0
    return min(1.0, curve.reference_peak_flop_per_s * eff.warp_mma_over_reference / peak_flop_per_s)


def attention_kernel_efficiency(eff: Efficiency, curve: KernelCurve, e_curve: Num, *, peak_flop_per_s: float,
                                exp_per_s: float, flop_per_exp: float, fp8_speedup: float = 1.0) -> Num:
    """Fraction of this part's bf16 peak an attention kernel reaches, from its curve's value e_curve: moved from the
    curve's part by the exponential rates (softmax_adjusted_efficiency), sm80 warp-MMA kernels held near their
    reference part's speed (warp_mma_speedup), and FP8 attention (fp8_speedup = P_fp8 / P_bf16 > 1) at the kernel's
    measured fp8 gain where it has one (KernelCurve.fp8_gain), else by the exponential model's tensor_speedup."""
    warp = warp_mma_speedup(eff, curve, peak_flop_per_s)
    kwargs = dict(peak_flop_per_s=peak_flop_per_s, exp_per_s=exp_per_s, flop_per_exp=flop_per_exp)
    if curve.fp8_gain > 0:
        gain = curve.fp8_gain if fp8_speedup > 1.0 else 1.0
        return softmax_adjusted_efficiency(e_curve, curve, tensor_speedup=warp, **kwargs) * gain
    return softmax_adjusted_efficiency(e_curve, curve, tensor_speedup=fp8_speedup * warp, **kwargs)


def attention_ceiling(eff: Efficiency, kernels: str) -> float:
    """Long-sequence fraction of peak of the attention kernel a stack runs ('fused' or eager): the
    single number that calibrations measure and override (`attention`, `attention_eager`)."""
    return eff.attention[attention_kernel_for(eff, kernels)].max_fraction
