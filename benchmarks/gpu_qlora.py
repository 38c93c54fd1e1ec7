"""QLoRA as Hugging Face + peft + bitsandbytes run it, measured on a CUDA device.

    python benchmarks/gpu_qlora.py --out qlora.json            # on a GPU with bitsandbytes, peft, transformers
    python benchmarks/gpu_qlora.py --smoke --out /tmp/q.json    # tiny sizes: the code runs (CPU backend of bnb)

Train cases: a Llama 3.1 8B / Qwen2.5 7B shaped model built from its config on the device (random weights, no
download), every linear layer of the decoder replaced by a bitsandbytes NF4 `Linear4bit` (double quantization,
bf16 compute: what `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)` loads), then peft's
`prepare_model_for_kbit_training` (fp32 upcast of every parameter that is not 4-bit, gradient checkpointing unless
the case turns it off) and `get_peft_model` (r 16, alpha 32, dropout 0.05), fused AdamW over the adapters.
Records torch.cuda.max_memory_allocated / max_memory_reserved over the steps, the bytes the set-up holds, the
median step time.

Load case: the same recipe through `from_pretrained(..., quantization_config=...)` of a random Llama 3.2 3B
checkpoint saved on the device: the load-time peak of quantizing while loading.

rigplan's estimate for each case is compared afterwards on any machine (docs/measurements/h200-2026-12.md).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
import traceback
from typing import Any

LLAMA_31_8B = {"hidden_size": 4096, "intermediate_size": 14336, "num_hidden_layers": 32, "num_attention_heads": 32,
               "num_key_value_heads": 8, "vocab_size": 128256, "tie_word_embeddings": False,
               "max_position_embeddings": 131072, "rope_theta": 500000.0, "rms_norm_eps": 1e-5}
LLAMA_32_3B = {**LLAMA_31_8B, "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 28,
               "num_attention_heads": 24, "tie_word_embeddings": True}
QWEN25_7B = {"hidden_size": 3584, "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
             "num_key_value_heads": 4, "vocab_size": 152064, "tie_word_embeddings": False, "rope_theta": 1e6,
             "max_position_embeddings": 32768}
ALL_LINEAR = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
QV = ["q_proj", "v_proj"]
CASES: list[dict[str, Any]] = [
    # catalog id, model_type, config, LoRA targets, seq, micro-batch, gradient checkpointing
    {"name": "llama-3.1-8b qlora qv s2048 b1 ckpt", "catalog": "llama-3.1-8b", "model_type": "llama",
     "config": LLAMA_31_8B, "targets": QV, "seq": 2048, "batch": 1, "ckpt": True},
    {"name": "llama-3.1-8b qlora all s2048 b1 ckpt", "catalog": "llama-3.1-8b", "model_type": "llama",
     "config": LLAMA_31_8B, "targets": ALL_LINEAR, "seq": 2048, "batch": 1, "ckpt": True},
    {"name": "llama-3.1-8b qlora all s2048 b4 ckpt", "catalog": "llama-3.1-8b", "model_type": "llama",
     "config": LLAMA_31_8B, "targets": ALL_LINEAR, "seq": 2048, "batch": 4, "ckpt": True},
    {"name": "llama-3.1-8b qlora all s4096 b1 no-ckpt", "catalog": "llama-3.1-8b", "model_type": "llama",
     "config": LLAMA_31_8B, "targets": ALL_LINEAR, "seq": 4096, "batch": 1, "ckpt": False},
    {"name": "llama-3.1-8b qlora qv s2048 b2 no-ckpt", "catalog": "llama-3.1-8b", "model_type": "llama",
     "config": LLAMA_31_8B, "targets": QV, "seq": 2048, "batch": 2, "ckpt": False},
    {"name": "qwen2.5-7b qlora all s2048 b2 ckpt", "catalog": "qwen2.5-7b", "model_type": "qwen2",
     "config": QWEN25_7B, "targets": ALL_LINEAR, "seq": 2048, "batch": 2, "ckpt": True},
]
LLAMA_2_7B = {**LLAMA_31_8B, "intermediate_size": 11008, "num_key_value_heads": 32, "vocab_size": 32000,
              "max_position_embeddings": 4096, "rope_theta": 10000.0}
# Second set: under torch.autocast(bfloat16), as the Hugging Face Trainer runs with bf16=True, and a model with
# as many key/value heads as query heads (Llama 2 7B), with and without autocast.
AUTOCAST_CASES: list[dict[str, Any]] = [
    *({**c, "name": c["name"] + " autocast", "autocast": True} for c in CASES if c["catalog"] == "llama-3.1-8b"),
    {"name": "llama-2-7b qlora all s2048 b2 no-ckpt", "catalog": "llama-2-7b", "model_type": "llama",
     "config": LLAMA_2_7B, "targets": ALL_LINEAR, "seq": 2048, "batch": 2, "ckpt": False},
    {"name": "llama-2-7b qlora all s2048 b2 no-ckpt autocast", "catalog": "llama-2-7b", "model_type": "llama",
     "config": LLAMA_2_7B, "targets": ALL_LINEAR, "seq": 2048, "batch": 2, "ckpt": False, "autocast": True},
    {"name": "llama-2-7b qlora all s2048 b4 ckpt autocast", "catalog": "llama-2-7b", "model_type": "llama",
     "config": LLAMA_2_7B, "targets": ALL_LINEAR, "seq": 2048, "batch": 4, "ckpt": True, "autocast": True},
]
SAVED_SHAPES = {
    "llama": {"hidden_size": 384, "intermediate_size": 1024, "num_attention_heads": 6, "num_key_value_heads": 2},
    "qwen2": {"hidden_size": 256, "intermediate_size": 704, "num_attention_heads": 4, "num_key_value_heads": 4},
}
SMOKE = {"hidden_size": 128, "intermediate_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
         "num_key_value_heads": 2, "vocab_size": 512, "tie_word_embeddings": False, "max_position_embeddings": 1024}


def quantize_linears(torch: Any, model: Any, device: Any) -> None:
    """Every nn.Linear of the decoder layers becomes a bnb NF4 Linear4bit (double quant, bf16 compute), as
    transformers' bitsandbytes integration does (lm_head stays in bf16: its default skip list)."""
    import bitsandbytes as bnb

    for layer in model.model.layers:
        for parent in layer.modules():
            for child_name, child in list(parent.named_children()):
                if type(child) is not torch.nn.Linear:
                    continue
                quant = bnb.nn.Linear4bit(child.in_features, child.out_features, bias=child.bias is not None,
                                          compute_dtype=torch.bfloat16, compress_statistics=True, quant_type="nf4",
                                          device="meta")
                weight = child.weight.data
                quant.weight = bnb.nn.Params4bit(weight, requires_grad=False, compress_statistics=True,
                                                 quant_type="nf4", module=quant).to(device)
                if child.bias is not None:
                    quant.bias = torch.nn.Parameter(child.bias.data, requires_grad=False)
                setattr(parent, child_name, quant)
                del weight, child
        if device.type == "cuda":
            torch.cuda.empty_cache()
    model.is_loaded_in_4bit = True


def qlora_model(torch: Any, model_type: str, config_values: dict[str, Any], targets: list[str], ckpt: bool,
                device: Any, dropout: float = 0.05) -> Any:
    """A random model of `config_values` prepared as QLoRA (NF4 double-quant, peft's k-bit preparation, LoRA r 16)."""
    import peft
    import transformers

    config = transformers.AutoConfig.for_model(model_type, **config_values)
    config.use_cache = False
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation="sdpa")
    finally:
        torch.set_default_dtype(previous)
    quantize_linears(torch, model, device)
    model = peft.prepare_model_for_kbit_training(model, use_gradient_checkpointing=ckpt)
    lora = peft.LoraConfig(r=16, lora_alpha=32, lora_dropout=dropout, target_modules=targets, task_type="CAUSAL_LM")
    model = peft.get_peft_model(model, lora)
    model.train()
    return model


def train_case(torch: Any, case: dict[str, Any], device: Any, steps: int, warmup: int) -> dict[str, Any]:
    row: dict[str, Any] = {k: v for k, v in case.items() if k != "config"}
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(0)
    model = qlora_model(torch, case["model_type"], case["config"], case["targets"], case["ckpt"], device)
    row["gradient_checkpointing"] = bool(getattr(model, "is_gradient_checkpointing", False))
    trainable = [p for p in model.parameters() if p.requires_grad]
    row["trainable_parameters"] = sum(p.numel() for p in trainable)
    row["dtypes"] = sorted({str(p.dtype) for p in model.parameters()})
    optimizer = torch.optim.AdamW(trainable, lr=1e-4, fused=cuda)
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        row["after_setup_allocated_bytes"] = torch.cuda.memory_allocated()
        row["setup_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    ends = []
    for step in range(warmup + steps):
        tokens = torch.randint(0, case["config"]["vocab_size"], (case["batch"], case["seq"]), device=device)
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=bool(case.get("autocast"))):
            loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        if cuda:
            torch.cuda.synchronize()
        ends.append(time.perf_counter())
        if step == 0 and cuda:
            row["first_step_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
            row["first_step_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    durations = [b - a for a, b in zip(ends[warmup - 1:], ends[warmup:], strict=False)]
    row["step_times_s"] = durations
    row["step_time_s"] = statistics.median(durations)
    row["tokens_per_s"] = case["batch"] * case["seq"] / row["step_time_s"]
    if cuda:
        row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        row["peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
        row["held_after_steps_bytes"] = torch.cuda.memory_allocated()
    row["loss"] = float(loss.detach().float())
    del model, optimizer, trainable, loss
    return row


def saved_rows(torch: Any, device: Any) -> list[dict[str, Any]]:
    """Per-layer saved bytes of QLoRA-prepared Hugging Face layers on this device's kernels (dropout 0.05 and 0,
    with and without autocast): rigplan.measure.saved_tensors."""
    from rigplan.measure.saved_tensors import saved_bytes_per_layer

    rows = []
    for model_type, shape in SAVED_SHAPES.items():
        for targets in (QV, ALL_LINEAR):
            for autocast in (False, True):
                for dropout in (0.05, 0.0):
                    row: dict[str, Any] = {"model_type": model_type, "targets": targets, "autocast": autocast,
                                           "lora_dropout": dropout, **shape}
                    torch.manual_seed(0)
                    values = {"num_hidden_layers": 3, "vocab_size": 512, "max_position_embeddings": 4096, **shape}
                    model = qlora_model(torch, model_type, values, targets, False, device, dropout)
                    batch, seq = 2, 160
                    ids = torch.randint(0, 512, (batch, seq), device=device)
                    with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
                        per_layer = saved_bytes_per_layer(model.base_model.model, ids)
                    row["saved_per_layer_bytes"] = per_layer
                    row["per_token_bytes"] = [b / (batch * seq) for b in per_layer]
                    rows.append(row)
                    del model
    return rows


def load_case(torch: Any, device: Any, smoke: bool, folder: str) -> dict[str, Any]:
    """Save a random bf16 checkpoint, then load it quantized: the peak of quantizing while loading."""
    import transformers

    config_values = SMOKE if smoke else LLAMA_32_3B
    row: dict[str, Any] = {"name": "llama-3.2-3b from_pretrained nf4 dq", "catalog": "llama-3.2-3b"}
    config = transformers.AutoConfig.for_model("llama", **config_values)
    torch.manual_seed(0)
    previous = torch.get_default_dtype()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device(device):
            model = transformers.AutoModelForCausalLM.from_config(config)
    finally:
        torch.set_default_dtype(previous)
    model.save_pretrained(folder)
    del model
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
    quant = transformers.BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
                                            bnb_4bit_use_double_quant=True, bnb_4bit_compute_dtype=torch.bfloat16)
    t0 = time.perf_counter()
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, quantization_config=quant,
                                                              device_map={"": device.index or 0}
                                                              if device.type == "cuda" else None,
                                                              dtype=torch.bfloat16)
    row["load_s"] = time.perf_counter() - t0
    if device.type == "cuda":
        torch.cuda.synchronize()
        row["loaded_allocated_bytes"] = torch.cuda.memory_allocated()
        row["load_peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        row["load_peak_reserved_bytes"] = torch.cuda.max_memory_reserved()
    row["dtypes"] = sorted({str(p.dtype) for p in model.parameters()})
    del model
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (a CPU run that checks the code)")
    parser.add_argument("--checkpoint-dir", default="/tmp/rigplan-qlora-ckpt")
    parser.add_argument("--set", choices=["first", "second"], default="first",
                        help="first: the QLoRA runs without autocast and the load peak; second: per-layer saved "
                             "bytes, the runs under autocast and Llama 2 7B")
    args = parser.parse_args(argv)
    import bitsandbytes
    import peft
    import torch
    import transformers

    device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
    result: dict[str, Any] = {"versions": {"torch": torch.__version__, "transformers": transformers.__version__,
                                           "peft": peft.__version__, "bitsandbytes": bitsandbytes.__version__},
                              "device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
                              "rows": []}
    t0 = time.perf_counter()

    def save() -> None:
        result["wall_s"] = time.perf_counter() - t0
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)

    chosen = CASES if args.set == "first" else AUTOCAST_CASES
    cases = [{**c, "config": {**c["config"], **SMOKE}, "seq": 64} for c in chosen[:2]] if args.smoke else chosen
    jobs: list[Any] = [lambda c=c: train_case(torch, c, device, 2 if args.smoke else 3, 1 if args.smoke else 2)
                       for c in cases]
    if args.set == "first":
        jobs.append(lambda: load_case(torch, device, args.smoke, args.checkpoint_dir))
    else:
        jobs.insert(0, lambda: {"name": "saved bytes per layer", "saved": saved_rows(torch, device)})
    for job in jobs:
        start = time.perf_counter()
        try:
            row = job()
        except Exception as err:
            row = {"error": f"{type(err).__name__}: {err}"[:500], "trace": traceback.format_exc()[-2000:]}
        row["wall_s"] = time.perf_counter() - start
        result["rows"].append(row)
        save()
        print(json.dumps({k: v for k, v in row.items() if k not in ("trace", "step_times_s")}), flush=True)
        gc.collect()
        if device.type == "cuda":
            torch.cuda.empty_cache()
    failed = [r for r in result["rows"] if "error" in r]
    print(f"qlora: {len(result['rows'])} rows, {len(failed)} failed, {result['wall_s']:.1f} s -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
