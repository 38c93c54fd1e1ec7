"""Out-of-sample check of the dense step on Megatron-Bridge's 26.02 tables (Llama 3 70B and 3.1 405B, FP8).

The 26.02 NeMo container's pre-training tables (NVIDIA-NeMo/Megatron-Bridge docs/performance-summary.md at
commit df0289c180dd) give eight dense FP8 rows rigplan can reproduce on GB300, GB200 and H100. They are
estimated here with the conventions of the frontier suite's 25.11 rows (Megatron-Core with Transformer Engine,
fused kernels and loss, fp32 main grads reduced in bf16, distributed optimizer, overlapped parameter gather and
pipeline p2p, TP communication overlap and sequence parallelism where tp > 1, no recompute) and compared with
the printed tokens/s per GPU. Left out: the NVFP4 rows (rigplan has no fp4 training recipe) and the two
Megatron-FSDP 70B rows, whose presets offload activations of some layers to the Grace CPU.

They are not a gated validation group: their median |error| (8.8% when written) is over the 8% group rule
of `rigplan validate`, the GB300 rows slow and the GB200 rows fast by about as much, the GB300/GB200 gap
rigplan does not model (known gap of the MoE row recipes2607-gb300-qwen3-235b-mxfp8-full-cg).
This script keeps the check reproducible.

Run: python benchmarks/bridge2602_dense_check.py
"""

from __future__ import annotations

import statistics

from rigplan.validation.throughput_suite import ThroughputCase, evaluate_throughput_case

SOURCE = {"title": "NVIDIA NeMo Megatron-Bridge performance summary, 26.02 NeMo container tables",
          "repo": "NVIDIA-NeMo/Megatron-Bridge", "path": "docs/performance-summary.md",
          "commit": "df0289c180dd20ff26933455c7a0a11084f6a36f"}
STACK = {"seq": 8192, "precision": "fp8", "attention": "flash", "kernels": "fused", "loss": "fused",
         "main_grads_fp32": True, "grad_reduce_dtype": "bf16", "overlap_param_gather": True,
         "pp_comm_overlap": True, "zero": 1, "recompute": "none"}
ROWS = [  # id, model, gpu, gpus, fp8 recipe, global batch, micro-batch, tp, pp, cp, vpp, measured tokens/s/GPU
    ("gb300-llama3-70b-fp8mx", "llama-3.1-70b", "gb300", 64, "mxfp8", 256, 1, 1, 4, 1, 5, 4596),
    ("gb300-llama31-405b-fp8cs", "llama-3.1-405b", "gb300", 256, "current", 1536, 1, 4, 8, 1, 4, 988),
    ("gb300-llama31-405b-fp8mx", "llama-3.1-405b", "gb300", 256, "mxfp8", 1536, 1, 2, 8, 2, 4, 931),
    ("gb200-llama3-70b-fp8mx", "llama-3.1-70b", "gb200", 64, "mxfp8", 256, 1, 2, 4, 1, 5, 3887),
    ("gb200-llama31-405b-fp8cs", "llama-3.1-405b", "gb200", 256, "current", 1536, 1, 4, 16, 1, 4, 793),
    ("gb200-llama31-405b-fp8mx", "llama-3.1-405b", "gb200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, 786),
    ("h100-sxm-llama3-70b-fp8cs", "llama-3.1-70b", "h100-sxm", 64, "current", 256, 1, 4, 8, 1, 5, 1621),
    ("h100-sxm-llama31-405b-fp8cs", "llama-3.1-405b", "h100-sxm", 1024, "current", 1536, 1, 8, 8, 2, 8, 311),
]


def main() -> None:
    errors = []
    for row_id, model, gpu, gpus, recipe, global_batch, micro_batch, tp, pp, cp, vpp, measured in ROWS:
        request = dict(STACK, model=model, gpu=gpu, gpus=gpus, fp8_recipe=recipe, global_batch=global_batch,
                       micro_batch=micro_batch, tp=tp, pp=pp, cp=cp, vpp=vpp)
        if tp > 1:
            request.update(tp_comm_overlap=True, sequence_parallel=True)
        case = ThroughputCase(
            id=f"bridge2602-{row_id}", group="megatron_bridge_26_02_dense", source=SOURCE, reliability="high",
            request=request, compare="tokens_per_s_per_gpu",
            measured={"value": measured, "unit": "tokens/s/GPU", "metric": "tokens_per_sec_per_gpu",
                      "as_printed": f"{measured} Tokens / sec / GPU"})
        result = evaluate_throughput_case(case)
        if result.error is None or result.predicted is None:
            print(f"{case.id:40s} not estimated: {result.message}")
            continue
        errors.append(result.error)
        print(f"{case.id:40s} measured {measured:6,d}  rigplan {result.predicted:8,.0f}  error {result.error:+7.1%}")
    print(f"{len(errors)} rows: median |error| {statistics.median(abs(e) for e in errors):.1%}, "
          f"median signed {statistics.median(errors):+.1%}, worst {max(abs(e) for e in errors):.1%}")


if __name__ == "__main__":
    main()
