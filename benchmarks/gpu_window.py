"""What a sliding-window attention mask makes a Hugging Face layer save, measured on a CUDA device.

    python benchmarks/gpu_window.py --out window.json
    python benchmarks/gpu_window.py --smoke --out /tmp/w.json     # tiny sizes on a CPU: the code runs

Phi-3-mini's modules (hidden 3072, 32 heads, ffn 8192, sliding_window 2047 as its config ships), 3 layers, bf16,
peft LoRA r 16 on qkv_proj (dropout 0.05) and full training, batch 4, at 2,047 tokens (within the window: SDPA's
causal flash path) and 2,048 and 4,096 tokens (beyond it: transformers passes an explicit mask), and at 2,048 tokens
with the window removed. Per case: the bytes each decoder layer saves for backward (rigplan.measure.saved_tensors),
and torch.cuda.max_memory_allocated over one forward and backward.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from typing import Any

PHI3_MINI = {"hidden_size": 3072, "intermediate_size": 8192, "num_attention_heads": 32, "num_key_value_heads": 32,
             "vocab_size": 32064, "max_position_embeddings": 4096, "pad_token_id": 0, "eos_token_id": 1,
             "bos_token_id": 2, "sliding_window": 2047}
SMOKE = {**PHI3_MINI, "hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
         "num_key_value_heads": 4, "vocab_size": 512, "sliding_window": 31}


def case_row(torch: Any, device: Any, config_values: dict[str, Any], seq: int, lora: bool) -> dict[str, Any]:
    from gpu_session import saved_model  # benchmarks/gpu_session.py, beside this script

    from rigplan.measure.saved_tensors import saved_bytes_per_layer

    row: dict[str, Any] = {"seq": seq, "lora": lora, "sliding_window": config_values.get("sliding_window")}
    model, net = saved_model(torch, "phi3", config_values, device, ["qkv_proj"] if lora else None, 0.05)
    batch = 4
    ids = torch.randint(0, config_values["vocab_size"], (batch, seq), device=device)
    per_layer = saved_bytes_per_layer(net, ids)
    row["saved_per_layer_bytes"] = per_layer
    row["per_token_per_hidden"] = [b / (batch * seq * config_values["hidden_size"]) for b in per_layer]
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        torch.cuda.synchronize()
        row["step_peak_over_held_bytes"] = torch.cuda.max_memory_allocated() - before
        del loss
    del model, net
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args(argv)
    import torch

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    values = SMOKE if args.smoke else PHI3_MINI
    window = values["sliding_window"]
    cases = [(values, window, True), (values, window + 1, True), (values, 2 * (window + 1), True),
             ({**values, "sliding_window": None}, window + 1, True), (values, window, False),
             (values, window + 1, False)]
    rows = []
    t0 = time.perf_counter()
    for config_values, seq, lora in cases:
        try:
            row = case_row(torch, device, config_values, seq, lora)
        except Exception as err:
            row = {"seq": seq, "lora": lora, "error": f"{type(err).__name__}: {err}"[:400],
                   "trace": traceback.format_exc()[-1500:]}
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if k not in ("trace", "saved_per_layer_bytes")}), flush=True)
        if device.type == "cuda":
            torch.cuda.empty_cache()
    with open(args.out, "w", encoding="utf-8") as handle:
        json.dump({"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu",
                   "torch": torch.__version__, "rows": rows, "wall_s": time.perf_counter() - t0}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
