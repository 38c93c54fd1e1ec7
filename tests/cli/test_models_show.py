"""`rigplan models show MODEL`: a catalog record, or what a config.json, a hub name or a size resolves to."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

QWEN2_MOE_CONFIG = {
    # Qwen/Qwen2-57B-A14B config.json: 57B total, 14B active on its model card
    "architectures": ["Qwen2MoeForCausalLM"], "model_type": "qwen2_moe", "hidden_size": 3584,
    "intermediate_size": 18944, "moe_intermediate_size": 2560, "shared_expert_intermediate_size": 20480,
    "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4, "num_experts": 64,
    "num_experts_per_tok": 8, "vocab_size": 151936, "max_position_embeddings": 131072,
    "tie_word_embeddings": False, "decoder_sparse_step": 1, "mlp_only_layers": [],
}


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from rigplan.cli.main import main; main()", *args],
                          capture_output=True, text=True, timeout=120)


def test_a_config_json_shows_its_architecture_and_counts(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(QWEN2_MOE_CONFIG))
    out = run("models", "show", str(config), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["source"] == "hf-config"
    assert round(data["params_total"] / 1e9, 1) == 57.4 and round(data["params_active"] / 1e9, 1) == 14.2
    assert data["params_active_matmul"] < data["params_active"]  # the input embedding is a lookup
    assert data["architecture"]["num_layers"] == 28 and "moe" not in data["architecture"]
    assert data["moe"]["num_experts"] == 64 and data["moe"]["shared_expert_ffn"] == 20480
    assert "mla" not in data
    assert any("qwen2_moe" in note for note in data["notes"])
    folder = run("models", "show", str(tmp_path))  # a folder holding config.json, as text
    assert folder.returncode == 0, folder.stderr
    assert "moe: num_experts=64" in folder.stdout


def test_a_size_and_a_catalog_id_still_answer() -> None:
    size = json.loads(run("models", "show", "70b", "--json").stdout)
    assert size["source"] == "generic-size" and 65e9 < size["params_total"] < 75e9
    record = json.loads(run("models", "show", "deepseek-v3", "--json").stdout)
    assert record["id"] == "deepseek-v3" and record["sources"] and record["mla"]


def test_an_unknown_model_is_one_line_and_exit_2(tmp_path: Path) -> None:
    out = run("models", "show", "no-such-model-7q")
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and "unknown model 'no-such-model-7q'" in out.stderr
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "olmoe-next", "hidden_size": 8}))
    out = run("models", "show", str(bad))
    assert out.returncode == 2 and "not supported" in out.stderr and out.stderr.count("\n") == 1
