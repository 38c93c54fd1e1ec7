"""Out-of-sample check of NVFP4 training (--fp8-recipe nvfp4) on Megatron-Bridge's dense NVFP4 rows.

Megatron-Bridge's performance tables of the 26.02, 26.04 and 26.06 NeMo containers (docs/performance-summary.md)
time Llama 3 70B and Llama 3.1 405B in NVFP4 on GB300 and GB200, each beside an FP8 or MXFP8 row of the same
model. rigplan had no NVFP4 recipe when these rows were published; they were not used to set any of its
figures: the NVFP4 GEMM rate comes from torchao's B200 GEMM benchmark (benchmarks/nvfp4_gemm_fit.py) and the
rest of the step is the fp8 step's model with NVFP4's cast traffic and 4-bit weight and activation copies.

The rows are estimated with the conventions of the first dense out-of-sample check (Megatron-Core with
Transformer Engine, fused kernels and loss, fp32 main grads reduced in bf16, distributed optimizer, overlapped
parameter gather and pipeline p2p, TP communication overlap and sequence parallelism where tp > 1, no
recompute). Printed: each row's measured and predicted tokens/s per GPU, and for each NVFP4 row its gain over
the FP8 / MXFP8 row of the same table, measured and predicted. Not a gated validation group: no NVFP4 recipe
setting beyond the table's layout was read (Transformer Engine's NVFP4 recipe keeps some layers in BF16 when
asked, which these rows do not say).

Run: python benchmarks/bridge_nvfp4_check.py
"""

from __future__ import annotations

import statistics

from rigplan.validation.throughput_suite import ThroughputCase, evaluate_throughput_case

TABLES = {
    "2602": ("NVIDIA-NeMo/Megatron-Bridge", "df0289c180dd20ff26933455c7a0a11084f6a36f"),
    "2604": ("radixark/Megatron-Bridge", "d063066b4d66853c4c9308caf321a9c5b8836915"),
    "2606": ("NVIDIA-NeMo/Megatron-Bridge", None),
}
STACK = {"seq": 8192, "precision": "fp8", "attention": "flash", "kernels": "fused", "loss": "fused",
         "main_grads_fp32": True, "grad_reduce_dtype": "bf16", "overlap_param_gather": True,
         "pp_comm_overlap": True, "zero": 1, "recompute": "none"}
ROWS = [  # table, model, gpu, gpus, recipe, global batch, micro-batch, tp, pp, cp, vpp, measured tokens/s/GPU
    ("2602", "llama-3.1-70b", "gb300", 64, "nvfp4", 256, 1, 1, 4, 1, 5, 6798),
    ("2602", "llama-3.1-70b", "gb300", 64, "mxfp8", 256, 1, 1, 4, 1, 5, 4596),
    ("2602", "llama-3.1-405b", "gb300", 256, "nvfp4", 1536, 1, 4, 8, 1, 4, 1347),
    ("2602", "llama-3.1-405b", "gb300", 256, "current", 1536, 1, 4, 8, 1, 4, 988),
    ("2602", "llama-3.1-70b", "gb200", 64, "nvfp4", 256, 1, 2, 4, 1, 5, 5041),
    ("2602", "llama-3.1-70b", "gb200", 64, "mxfp8", 256, 1, 2, 4, 1, 5, 3887),
    ("2602", "llama-3.1-405b", "gb200", 256, "nvfp4", 1536, 1, 4, 16, 1, 8, 1145),
    ("2602", "llama-3.1-405b", "gb200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, 786),
    ("2604", "llama-3.1-70b", "gb300", 64, "nvfp4", 256, 1, 1, 4, 1, 5, 7397),
    ("2604", "llama-3.1-70b", "gb300", 64, "mxfp8", 256, 1, 1, 4, 1, 5, 4742),
    ("2604", "llama-3.1-70b", "gb200", 64, "nvfp4", 256, 1, 2, 4, 1, 5, 4898),
    ("2604", "llama-3.1-70b", "gb200", 64, "mxfp8", 256, 1, 2, 4, 1, 5, 3828),
    ("2604", "llama-3.1-405b", "gb300", 256, "nvfp4", 1536, 1, 4, 8, 1, 4, 1424),
    ("2604", "llama-3.1-405b", "gb300", 256, "current", 1536, 1, 4, 8, 1, 4, 1036),
    ("2604", "llama-3.1-405b", "gb200", 256, "nvfp4", 1536, 1, 4, 16, 1, 8, 1136),
    ("2604", "llama-3.1-405b", "gb200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, 793),
    ("2606", "llama-3.1-405b", "gb300", 256, "nvfp4", 1536, 1, 4, 8, 1, 4, 1413),
    ("2606", "llama-3.1-405b", "gb300", 256, "current", 1536, 1, 4, 8, 1, 4, 1048),
    ("2606", "llama-3.1-405b", "gb200", 256, "nvfp4", 1536, 1, 4, 16, 1, 8, 1166),
    ("2606", "llama-3.1-405b", "gb200", 256, "mxfp8", 1536, 1, 4, 16, 1, 8, 783),
]


def predict(row: tuple) -> tuple[float, float]:
    """(measured, predicted) tokens/s per GPU of one row."""
    table, model, gpu, gpus, recipe, global_batch, micro_batch, tp, pp, cp, vpp, measured = row
    repo, commit = TABLES[table]
    request = dict(STACK, model=model, gpu=gpu, gpus=gpus, fp8_recipe=recipe, global_batch=global_batch,
                   micro_batch=micro_batch, tp=tp, pp=pp, cp=cp, vpp=vpp)
    if tp > 1:
        request.update(tp_comm_overlap=True, sequence_parallel=True)
    case = ThroughputCase(
        id=f"bridge{table}-{gpu}-{model}-{recipe}", group=f"megatron_bridge_{table}_dense", reliability="high",
        source={"title": f"Megatron-Bridge performance summary, {table[:2]}.{table[2:]} NeMo container", "repo": repo,
                "path": "docs/performance-summary.md", "commit": commit},
        request=request, compare="tokens_per_s_per_gpu",
        measured={"value": measured, "unit": "tokens/s/GPU", "metric": "tokens_per_sec_per_gpu",
                  "as_printed": f"{measured} Tokens / sec / GPU"})
    result = evaluate_throughput_case(case)
    if result.predicted is None:
        raise SystemExit(f"{case.id}: not estimated: {result.message}")
    return float(measured), float(result.predicted)


def main() -> None:
    errors, gain_errors = [], []
    for i in range(0, len(ROWS), 2):
        fp4_row, partner = ROWS[i], ROWS[i + 1]
        (m4, p4), (m8, p8) = predict(fp4_row), predict(partner)
        errors.append(p4 / m4 - 1)
        gain_errors.append((p4 / p8) / (m4 / m8) - 1)
        table, model, gpu = fp4_row[:3]
        print(f"{table} {gpu:6s} {model:15s} nvfp4 measured {m4:6,.0f} rigplan {p4:6,.0f} ({p4 / m4 - 1:+6.1%}); "
              f"gain over {partner[4]}: measured {m4 / m8:.2f}x, rigplan {p4 / p8:.2f}x")
    print(f"NVFP4 rows: {len(errors)}, median |error| {statistics.median(abs(e) for e in errors):.1%}, "
          f"median signed {statistics.median(errors):+.1%}, worst {max(errors, key=abs):+.1%}")
    print(f"gain over the same table's fp8 row: median |error| {statistics.median(abs(e) for e in gain_errors):.1%}, "
          f"median signed {statistics.median(gain_errors):+.1%}")


if __name__ == "__main__":
    main()
