"""Whole-run check: DeepSeek-V3's pre-training as its report states it (arXiv 2412.19437).

Sec. 3.1-3.2 and Table 1: 14.8T tokens on 2,048 H800 GPUs, pipeline parallel 16 (DualPipe), expert
parallel 64 across 8 nodes, ZeRO-1 data parallel, no tensor parallelism, FP8 mixed precision with
fine-grained block scales (1 x 128 activation tiles, 128 x 128 weight blocks, Sec. 3.3.2: --fp8-recipe blockwise),
dispatch and combine hidden behind computation by DualPipe (20 SMs for communication; "near-zero
all-to-all communication overhead", Sec. 3.2.1), 2.664M H800 GPU-hours
for pre-training. Sequence 4096 and batch 15360 sequences after the ramp (Sec. 4.2). The layout of
the 61 layers is Megatron-Core's published one for DeepSeek-V3 PP16 VPP2, "Et|(tt|)*30mL"
(yanring/Megatron-MoE-ModelZoo best_practice/DeepSeekV3): one layer with the embedding, two per
chunk, the MTP module and the loss alone in the last chunk. DualPipe is taken as interleaved 1F1B
with two chunks per rank (its bubble is smaller still). Routing: the report's auxiliary-loss-free
balancing, "keeps a good load balance during its full training" with no token dropping
(Sec. 2.1.2), so balanced routing; at rigplan's dropless default (Megatron's auxiliary loss) the
ratio is printed too. rigplan must land within 0.7-1.2x of the reported GPU-hours.
"""

from __future__ import annotations

from rigplan.flow import estimate as speed
from rigplan.flow.request import EstimateRequest

REPORTED_GPU_HOURS = 2.664e6


def _request(**routing: object) -> EstimateRequest:
    return EstimateRequest(
        model="deepseek-v3", gpu="h800-sxm", gpus=2048, tp=1, pp=16, vpp=2, ep=64, etp=1, zero=1,
        precision="fp8", fp8_recipe="blockwise", seq=4096, global_batch=15360, micro_batch=1, recompute="none",
        a2a_overlap=True,
        a2a_overlap_schedule="dualpipe",
        stage_layers=[1] + [2] * 30 + [0], tokens="14.8T", **routing)


def test_deepseek_v3_pretraining_gpu_hours_within_0_7_to_1_2x() -> None:
    result = speed.estimate(_request(balanced_routing=True)).to_dict()
    ratio = result["gpu_hours"] / REPORTED_GPU_HOURS
    default = speed.estimate(_request()).to_dict()["gpu_hours"] / REPORTED_GPU_HOURS
    print(f"DeepSeek-V3 GPU-hours: predicted / reported = {ratio:.3f} (balanced); {default:.3f} at the dropless "
          "default")
    assert 0.7 <= ratio <= 1.2, f"{result['gpu_hours']:,.0f} GPU-hours predicted vs 2,664,000 reported ({ratio:.2f}x)"
