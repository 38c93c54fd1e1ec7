"""What only a GPU can tell about rigplan's estimators, measured in one short session on a CUDA device.

    python benchmarks/gpu_session.py gemm --out gemm.json
    python benchmarks/gpu_session.py hf --out hf.json [--subset allocator]
    python benchmarks/gpu_session.py gemm --smoke --out /tmp/g.json     # tiny sizes on a CPU: the code runs

Sections (each writes one JSON file; a failed case is recorded with its error and the rest go on):

gemm  Expert GEMMs of mixture-of-experts models as their frameworks run them: torch._grouped_mm
      (the grouped GEMM PyTorch and torchtitan call; one launch for all local experts) and the same work
      as one torch.mm per expert, fc1 (m x h) @ (h x 2f) and fc2 (m x f) @ (f x h) in bf16, for the
      expert shapes of Qwen3-30B-A3B (h 2048, f 768), Qwen3-235B-A22B (4096, 1536), DeepSeek-V3 (7168,
      2048) and gpt-oss-120b (2880, 2880), with m tokens per expert from 64 to 8192; plus one dense GEMM
      of each shape. rigplan's shape model (estimate/efficiency.py) gives each GEMM an efficiency from
      its smallest dimension; this measures the rate the hardware reaches at those shapes.
hf    Hugging Face transformers training steps (LlamaForCausalLM built from a config on the device,
      random weights, no download): bf16 weights or fp32 weights under autocast, fused AdamW, SDPA or
      eager attention, gradient checkpointing, LoRA through peft where installed. Records
      torch.cuda.max_memory_allocated / max_memory_reserved over the measured steps, the bytes the
      weights take after set-up, the median step time and tokens/s. With --subset allocator only the
      cases the allocator comparison needs run (run it under PYTORCH_CUDA_ALLOC_CONF=
      expandable_segments:True to compare with the default allocator).

Timing: CUDA events around each call, median of the repeats after warm-up (GEMMs); wall time between
synchronised step ends (training). The comparison with rigplan's estimates is made afterwards on any
machine from the JSON (docs/measurements/h200-2026-12.md says how).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import traceback
from typing import Any

EXPERT_SHAPES = {
    # model: (hidden, expert ffn, local experts in the measured group)
    "qwen3-30b-a3b": (2048, 768, 16),
    "qwen3-235b-a22b": (4096, 1536, 16),
    "deepseek-v3": (7168, 2048, 8),
    "gpt-oss-120b": (2880, 2880, 16),
}
TOKENS_PER_EXPERT = (64, 128, 256, 512, 1024, 2048, 4096, 8192)

LLAMA_32_1B = {"hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16, "num_attention_heads": 32,
               "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": True,
               "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}
LLAMA_32_3B = {**LLAMA_32_1B, "hidden_size": 3072, "num_hidden_layers": 28, "num_attention_heads": 24}
LLAMA_31_8B = {**LLAMA_32_1B, "hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
               "tie_word_embeddings": False}
HF_CASES: list[dict[str, Any]] = [
    # name, config, seq, micro-batch, weights dtype ("bf16": bf16-true, "fp32-autocast": HF Trainer bf16=True),
    # attention, gradient checkpointing, LoRA
    {"name": "llama-3.2-1b bf16 sdpa s4096 b2", "config": LLAMA_32_1B, "seq": 4096, "batch": 2,
     "weights": "bf16", "attn": "sdpa", "ckpt": False, "lora": False, "allocator": True},
    {"name": "llama-3.2-1b bf16 sdpa s4096 b2 ckpt", "config": LLAMA_32_1B, "seq": 4096, "batch": 2,
     "weights": "bf16", "attn": "sdpa", "ckpt": True, "lora": False, "allocator": True},
    {"name": "llama-3.2-1b bf16 eager s2048 b2", "config": LLAMA_32_1B, "seq": 2048, "batch": 2,
     "weights": "bf16", "attn": "eager", "ckpt": False, "lora": False},
    {"name": "llama-3.2-1b fp32-autocast sdpa s4096 b2", "config": LLAMA_32_1B, "seq": 4096, "batch": 2,
     "weights": "fp32-autocast", "attn": "sdpa", "ckpt": False, "lora": False, "allocator": True},
    {"name": "llama-3.2-3b bf16 sdpa s4096 b1", "config": LLAMA_32_3B, "seq": 4096, "batch": 1,
     "weights": "bf16", "attn": "sdpa", "ckpt": False, "lora": False},
    {"name": "llama-3.2-3b fp32-autocast sdpa s2048 b4 ckpt", "config": LLAMA_32_3B, "seq": 2048, "batch": 4,
     "weights": "fp32-autocast", "attn": "sdpa", "ckpt": True, "lora": False},
    {"name": "llama-3.1-8b bf16 sdpa s4096 b1", "config": LLAMA_31_8B, "seq": 4096, "batch": 1,
     "weights": "bf16", "attn": "sdpa", "ckpt": False, "lora": False, "allocator": True},
    {"name": "llama-3.1-8b lora-qv bf16 sdpa s2048 b4", "config": LLAMA_31_8B, "seq": 2048, "batch": 4,
     "weights": "bf16", "attn": "sdpa", "ckpt": False, "lora": True},
    {"name": "llama-3.1-8b lora-qv bf16 sdpa s4096 b2 ckpt", "config": LLAMA_31_8B, "seq": 4096, "batch": 2,
     "weights": "bf16", "attn": "sdpa", "ckpt": True, "lora": True},
]
QWEN3_30B_A3B_4L = {"hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768, "num_experts": 128,
                    "num_experts_per_tok": 8, "num_hidden_layers": 4, "num_attention_heads": 32,
                    "num_key_value_heads": 4, "head_dim": 128, "vocab_size": 151936, "tie_word_embeddings": False,
                    "max_position_embeddings": 40960, "norm_topk_prob": True, "decoder_sparse_step": 1,
                    "mlp_only_layers": [], "output_router_logits": False}
MOE_CASES: list[dict[str, Any]] = [
    {"name": f"qwen3-30b-a3b 4 layers bf16 s4096 b1 experts={impl}", "model_type": "qwen3_moe",
     "config": QWEN3_30B_A3B_4L, "seq": 4096, "batch": 1, "weights": "bf16", "attn": "sdpa", "ckpt": False,
     "lora": False, "experts": impl} for impl in ("grouped_mm", None)
]
FAMILIES: dict[str, tuple[str, dict[str, Any], str, list[str]]] = {
    # catalog id: (model_type, config of the released checkpoint, attention HF uses, LoRA target modules)
    "qwen2.5-7b": ("qwen2", {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28,
                             "num_attention_heads": 28, "num_key_value_heads": 4, "vocab_size": 152064,
                             "tie_word_embeddings": False, "rope_theta": 1e6, "max_position_embeddings": 32768},
                   "sdpa", ["q_proj", "v_proj"]),
    "mistral-7b": ("mistral", {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32,
                               "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 32000,
                               "tie_word_embeddings": False, "sliding_window": 4096,
                               "max_position_embeddings": 32768}, "sdpa", ["q_proj", "v_proj"]),
    "phi-3-mini": ("phi3", {"hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
                            "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064,
                            "tie_word_embeddings": False, "max_position_embeddings": 4096}, "sdpa", ["qkv_proj"]),
    "qwen3-8b": ("qwen3", {"hidden_size": 4096, "intermediate_size": 12288, "num_hidden_layers": 36,
                           "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 151936,
                           "tie_word_embeddings": False, "max_position_embeddings": 40960}, "sdpa",
                 ["q_proj", "v_proj"]),
    "gemma-2-9b": ("gemma2", {"hidden_size": 3584, "intermediate_size": 14336, "num_hidden_layers": 42,
                              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
                              "vocab_size": 256000, "tie_word_embeddings": True, "attn_logit_softcapping": 50.0,
                              "final_logit_softcapping": 30.0, "query_pre_attn_scalar": 256, "sliding_window": 4096,
                              "max_position_embeddings": 8192}, "eager", ["q_proj", "v_proj"]),
}
FAMILY_CASES: list[dict[str, Any]] = [
    case
    for model, (model_type, config, attn, targets) in FAMILIES.items()
    for case in (
        {"name": f"{model} full bf16 s2048 b2 ckpt", "catalog": model, "model_type": model_type, "config": config,
         "seq": 2048, "batch": 2, "weights": "bf16", "attn": attn, "ckpt": True, "lora": False},
        {"name": f"{model} lora r16 bf16 s2048 b4", "catalog": model, "model_type": model_type, "config": config,
         "seq": 2048, "batch": 4, "weights": "bf16", "attn": attn, "ckpt": False, "lora": True,
         "lora_modules": targets},
    )
]
SMOKE_CONFIG = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
                "num_key_value_heads": 2, "vocab_size": 512, "tie_word_embeddings": False,
                "max_position_embeddings": 1024}


def device_info(torch: Any) -> dict[str, Any]:
    info: dict[str, Any] = {"torch": torch.__version__, "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(name=props.name, memory_bytes=props.total_memory, sms=props.multi_processor_count,
                    capability=f"{props.major}.{props.minor}", cuda=torch.version.cuda)
    try:
        import transformers
        info["transformers"] = transformers.__version__
    except ImportError:
        pass
    return info


def time_call(torch: Any, fn: Any, device: Any, repeats: int, warmup: int = 3) -> float:
    """Median seconds of fn() (CUDA events on a GPU, perf_counter on a CPU)."""
    for _ in range(warmup):
        fn()
    times = []
    if device.type == "cuda":
        torch.cuda.synchronize()
        for _ in range(repeats):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1e3)
    else:
        for _ in range(repeats):
            t0 = time.perf_counter()
            fn()
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def gemm_section(torch: Any, device: Any, smoke: bool) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    shapes = {"smoke": (64, 32, 4)} if smoke else EXPERT_SHAPES
    tokens = (16, 64) if smoke else TOKENS_PER_EXPERT
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    repeats = 3 if smoke else 20
    for model, (hidden, ffn, experts) in shapes.items():
        for m in tokens:
            for op, k, n in (("fc1", hidden, 2 * ffn), ("fc2", ffn, hidden)):
                flop = 2.0 * experts * m * k * n
                row = {"model": model, "hidden": hidden, "expert_ffn": ffn, "experts": experts, "m": m, "op": op,
                       "k": k, "n": n, "flop": flop}
                try:
                    a = torch.randn(experts * m, k, device=device, dtype=dtype)
                    w = torch.randn(experts, n, k, device=device, dtype=dtype)  # (G, N, K): B is K-major
                    offs = torch.arange(m, experts * m + 1, m, device=device, dtype=torch.int32)
                    row["loop_s"] = time_call(torch, lambda a=a, w=w, m=m, g=experts: [
                        torch.mm(a[i * m:(i + 1) * m], w[i].t()) for i in range(g)], device, repeats)
                    row["dense_one_expert_s"] = time_call(torch, lambda a=a, w=w, m=m: torch.mm(a[:m], w[0].t()),
                                                          device, repeats)
                    if hasattr(torch, "_grouped_mm") and device.type == "cuda":
                        try:
                            row["grouped_s"] = time_call(torch, lambda a=a, w=w, o=offs: torch._grouped_mm(
                                a, w.transpose(-2, -1), offs=o), device, repeats)
                        except Exception as err:  # grouped GEMM unsupported on this device or build
                            row["grouped_error"] = f"{type(err).__name__}: {err}"[:300]
                    for key in ("loop_s", "grouped_s"):
                        if key in row:
                            row[key.replace("_s", "_flop_per_s")] = flop / row[key]
                    row["dense_one_expert_flop_per_s"] = flop / experts / row["dense_one_expert_s"]
                except Exception as err:
                    row["error"] = f"{type(err).__name__}: {err}"[:300]
                rows.append(row)
                a = w = offs = None  # release this shape's tensors before the next
    # Dense square-ish reference: m tokens x d x d, as rigplan probe sweeps it.
    for d in ((32, 64) if smoke else (256, 512, 1024, 2048, 4096, 8192)):
        m = 64 if smoke else 8192
        a = torch.randn(m, d, device=device, dtype=dtype)
        b = torch.randn(d, d, device=device, dtype=dtype)
        t = time_call(torch, lambda a=a, b=b: torch.mm(a, b), device, repeats)
        rows.append({"model": "square", "m": m, "k": d, "n": d, "op": "mm", "flop": 2.0 * m * d * d,
                     "dense_s": t, "dense_flop_per_s": 2.0 * m * d * d / t})
    return rows


def build_hf_model(torch: Any, case: dict[str, Any], device: Any) -> Any:
    import transformers

    model_type = case.get("model_type", "llama")
    config = transformers.AutoConfig.for_model(model_type, **case["config"])
    config.use_cache = False
    dtype = torch.bfloat16 if case["weights"] == "bf16" else torch.float32
    previous = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        with torch.device(device):
            kwargs = {"attn_implementation": case["attn"]}
            if case.get("experts"):
                kwargs["experts_implementation"] = case["experts"]
            model = transformers.AutoModelForCausalLM.from_config(config, **kwargs)
    finally:
        torch.set_default_dtype(previous)
    if case["ckpt"]:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if case["lora"]:
        import peft

        lora = peft.LoraConfig(r=case.get("lora_rank", 16), lora_alpha=32, lora_dropout=0.05,
                               target_modules=case.get("lora_modules", ["q_proj", "v_proj"]))
        model = peft.get_peft_model(model, lora)
    model.train()
    return model


def hf_case(torch: Any, case: dict[str, Any], device: Any, steps: int, warmup: int) -> dict[str, Any]:
    """One training run of `case`; `case["lengths"]` (one sequence length per step) replaces seq x steps."""
    row: dict[str, Any] = {k: v for k, v in case.items() if k not in ("config", "lengths")}
    row["config"] = dict(case["config"])
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    model = build_hf_model(torch, case, device)
    trainable = [p for p in model.parameters() if p.requires_grad]
    row["parameters"] = sum(p.numel() for p in model.parameters())
    row["trainable_parameters"] = sum(p.numel() for p in trainable)
    optimizer = torch.optim.AdamW(trainable, lr=1e-5, fused=cuda and not case.get("foreach", False),
                                  foreach=bool(case.get("foreach", False)))
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        row["after_build_allocated_bytes"] = torch.cuda.memory_allocated()
        row["setup_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    lengths = list(case.get("lengths") or [case["seq"]] * (warmup + steps))
    if case.get("lengths"):
        row["lengths"] = lengths
    autocast = case["weights"] == "fp32-autocast"
    ends, held = [], []
    for step, seq in enumerate(lengths):
        tokens = torch.randint(0, case["config"]["vocab_size"], (case["batch"], seq), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        del tokens
        if cuda:
            torch.cuda.synchronize()
            held.append(torch.cuda.memory_allocated() - (loss.numel() * loss.element_size()))
        ends.append(time.perf_counter())
        if step == 0 and cuda:
            row["first_step_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            row["first_step_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    if not case.get("lengths"):
        durations = [b - a for a, b in zip(ends[warmup - 1:], ends[warmup:], strict=False)] if warmup else []
        row["step_times_s"] = durations
        if durations:
            row["step_time_s"] = statistics.median(durations)
            row["tokens_per_s"] = case["batch"] * case["seq"] / row["step_time_s"]
    if cuda:
        row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        # churn as benchmarks/allocator_replay.py counts it: peak allocated minus what stays between steps
        row["held_between_steps_bytes"] = min(held[1:] or held)
        churn = row["peak_allocated_bytes"] - row["held_between_steps_bytes"]
        row["churn_bytes"] = churn
        cached = row["peak_reserved_bytes"] - row["peak_allocated_bytes"]
        row["reserved_over_churn"] = cached / churn if churn else None
        stats = torch.cuda.memory_stats()
        row["num_alloc_retries"] = stats.get("num_alloc_retries", 0)
        row["inactive_split_bytes"] = stats.get("inactive_split_bytes.all.peak", 0)
    row["loss"] = float(loss.detach().float())
    del model, optimizer, trainable, loss
    return row


def allocator_cases(smoke: bool) -> list[dict[str, Any]]:
    """The scenario grid of benchmarks/allocator_replay.py, run for real: Llama 3 8B and 3.2 1B widths with 8
    layers, full (fused and foreach AdamW) and LoRA r=8 on q,v, with and without checkpointing, fixed shapes
    (3 steps of 1 x 2048 and of 4 x 1024) and 24 padded batches of 2 (lengths as the replay draws them)."""
    import random

    from rigplan.measure.allocator_replay import padded_lengths

    rng = random.Random(0)
    widths = {"8b": {**LLAMA_31_8B, "num_hidden_layers": 8}, "1b": {**LLAMA_32_1B, "num_hidden_layers": 8,
                                                                     "tie_word_embeddings": False}}
    cases = []
    for dims, config in widths.items():
        for method, foreach in (("full", False), ("full", True), ("lora", False)):
            for ckpt in (False, True):
                kinds = [("fixed", (2048,) * 3, 1), ("fixed", (1024,) * 3, 4), ("varying", padded_lengths(24, rng), 2)]
                for shapes, lengths, batch in kinds:
                    name = f"{dims} {method}{'-foreach' if foreach else ''} ckpt={ckpt} {shapes} mb{batch}"
                    cases.append({"name": name, "config": SMOKE_CONFIG if smoke else config, "batch": batch,
                                  "seq": max(lengths), "lengths": [min(x, 64) for x in lengths] if smoke else lengths,
                                  "weights": "bf16", "attn": "sdpa", "ckpt": ckpt, "lora": method == "lora",
                                  "lora_rank": 8, "foreach": foreach, "dims": dims, "method": method, "shapes": shapes})
    return cases[:4] if smoke else cases


def hf_section(torch: Any, device: Any, smoke: bool, subset: str | None,
               save: Any = None) -> list[dict[str, Any]]:
    """The training cases of `subset`; `save(rows)` after each, so a run stopped by a time limit keeps its rows."""
    cases = HF_CASES
    if subset == "allocator":
        cases = [c for c in cases if c.get("allocator")]
    if smoke:
        cases = [{**c, "config": SMOKE_CONFIG, "seq": 64, "batch": 2} for c in cases[:3]]
    if subset == "grid":
        cases = allocator_cases(smoke)
    if subset == "families":
        cases = FAMILY_CASES
        if smoke:
            tiny = {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
                    "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512, "pad_token_id": 0}
            cases = [{**c, "config": {**c["config"], **tiny}, "seq": 64} for c in cases]
    if subset == "moe":
        cases = MOE_CASES
        if smoke:
            small = {**QWEN3_30B_A3B_4L, "hidden_size": 64, "intermediate_size": 128, "moe_intermediate_size": 32,
                     "num_experts": 8, "num_experts_per_tok": 2, "num_hidden_layers": 2, "num_attention_heads": 4,
                     "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 512}
            cases = [{**c, "config": small, "seq": 64} for c in cases]
    rows = []
    for case in cases:
        t0 = time.perf_counter()
        try:
            row = hf_case(torch, case, device, steps=2 if smoke else 4, warmup=1 if smoke else 2)
        except Exception as err:
            row = {"name": case["name"], "error": f"{type(err).__name__}: {err}"[:500],
                   "trace": traceback.format_exc()[-1500:]}
        row["wall_s"] = time.perf_counter() - t0
        rows.append(row)
        if save:
            save(rows)
        print(json.dumps({k: v for k, v in row.items() if k not in ("config", "trace", "step_times_s", "lengths")}),
              flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows


SAVED_SHAPES = {
    "llama": {"hidden_size": 384, "intermediate_size": 1024, "num_attention_heads": 6, "num_key_value_heads": 2},
    "qwen2": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 4},
    "qwen3": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 2,
              "head_dim": 64},
    "phi3": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 4,
             "pad_token_id": 0},
}


def saved_model(torch: Any, model_type: str, values: dict[str, Any], device: Any, targets: list[str] | None,
                dropout: float) -> tuple[Any, Any]:
    """A 3-layer bf16 model of `values` in training mode, peft LoRA r=16 on `targets` when given: (model to call
    for a loss, the causal LM whose decoder layers rigplan.measure.saved_tensors walks)."""
    import transformers

    config = transformers.AutoConfig.for_model(model_type, num_hidden_layers=3, **values)
    config.use_cache = False
    torch.manual_seed(0)
    with torch.device(device):
        model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    model = model.to(torch.bfloat16)
    net = model
    if targets:
        import peft

        model = peft.get_peft_model(model, peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=dropout,
                                                           target_modules=targets))
        net = model.base_model.model
    net.train()
    return model, net


def saved_section(torch: Any, device: Any) -> list[dict[str, Any]]:
    """Per-layer saved bytes of transformers' modules on this device, full training and peft LoRA (dropout 0
    and 0.05): the GPU's own attention kernels and dropout masks, where a CPU runs others."""
    from rigplan.measure.saved_tensors import saved_bytes_per_layer

    rows = []
    for model_type, shape in SAVED_SHAPES.items():
        for lora, dropout in ((False, 0.0), (True, 0.0), (True, 0.05)):
            row: dict[str, Any] = {"model_type": model_type, "lora": lora, "lora_dropout": dropout, **shape}
            try:
                targets = (["qkv_proj"] if model_type == "phi3" else ["q_proj", "v_proj"]) if lora else None
                _, net = saved_model(torch, model_type, {"vocab_size": 512, "max_position_embeddings": 4096, **shape},
                                     device, targets, dropout)
                batch, seq = 2, 160
                ids = torch.randint(0, 512, (batch, seq), device=device)
                row["saved_per_layer_bytes"] = saved_bytes_per_layer(net, ids)
                row["per_token_per_hidden"] = [b / (batch * seq * shape["hidden_size"])
                                               for b in row["saved_per_layer_bytes"]]
            except Exception as err:
                row["error"] = f"{type(err).__name__}: {err}"[:300]
            print(json.dumps({k: v for k, v in row.items() if k != "saved_per_layer_bytes"}), flush=True)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("section", choices=["gemm", "hf", "saved"])
    parser.add_argument("--out", required=True)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (a CPU run that checks the code)")
    parser.add_argument("--subset", choices=["allocator", "grid", "moe", "families"],
                        help="hf: allocator = the cases of the allocator comparison; grid = the scenario grid of "
                             "benchmarks/allocator_replay.py; moe = Qwen3-30B-A3B's shape with 4 layers; families = "
                             "Qwen2.5 7B, Mistral 7B, Phi-3-mini, Qwen3 8B, Gemma 2 9B, full and LoRA")
    args = parser.parse_args(argv)
    import os

    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    result: dict[str, Any] = {"device": device_info(torch), "section": args.section,
                              "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    t0 = time.perf_counter()

    def save(rows: list[dict[str, Any]]) -> None:
        result["rows"] = rows
        result["wall_s"] = time.perf_counter() - t0
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)

    if args.section == "gemm":
        save(gemm_section(torch, device, args.smoke))
    elif args.section == "saved":
        save(saved_section(torch, device))
    else:
        save(hf_section(torch, device, args.smoke, args.subset, save))
    failed = [r for r in result["rows"] if "error" in r]
    print(f"{args.section}: {len(result['rows'])} rows, {len(failed)} failed, {result['wall_s']:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
