"""Hostile CLI input (files, numbers, paths): each is one line `rigplan: error: ...` and exit status 2."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest
import yaml

SRC = Path(__file__).resolve().parents[2] / "src" / "rigplan"
DATA = Path(__file__).resolve().parents[1] / "data"


def _files(folder: Path) -> dict[str, str]:
    config = {"model_type": "llama", "num_hidden_layers": 2, "num_attention_heads": 2, "vocab_size": 10,
              "intermediate_size": 8}
    made = {
        "nan": {**config, "hidden_size": float("nan")}, "huge": {**config, "hidden_size": 1e30},
        "negative": {**config, "hidden_size": -8}, "wide": {**config, "hidden_size": 10**6, "vocab_size": 10**7},
    }
    paths = {}
    for name, data in made.items():
        paths[name] = str(folder / f"{name}.json")
        Path(paths[name]).write_text(json.dumps(data))
    paths["deep"] = str(folder / "deep.json")
    Path(paths["deep"]).write_text("[" * 100_000 + "]" * 100_000)
    paths["latin1"] = str(folder / "offers.yaml")
    Path(paths["latin1"]).write_bytes(b"- provider: caf\xe9\n")
    paths["fifo"] = str(folder / "fifo.json")
    os.mkfifo(paths["fifo"])
    paths["big"] = str(folder / "big.json")
    with open(paths["big"], "wb") as f:
        f.truncate(64 * 1024 * 1024)
    paths["folder"] = str(folder)
    deepseek = json.loads((DATA / "hf" / "deepseek-v3" / "config.json").read_text())
    paths["mtp"] = str(folder / "mtp.json")
    Path(paths["mtp"]).write_text(json.dumps({**deepseek, "num_nextn_predict_layers": 2**31}))
    offer = "- provider: X\n  pricing: on-demand\n  usd_per_gpu_hour: {price}\n  as_of: {date}\n  source: a quote\n"
    for name, price, date in (("baddate", "2", "2026-13-45"), ("hugeprice", "1e308", "2026-01-01"),
                              ("infprice", ".inf", "2026-01-01")):
        paths[name] = str(folder / f"{name}.yaml")
        Path(paths[name]).write_text(offer.format(price=price, date=date))
    build = yaml.safe_load((SRC / "servers" / "data" / "dgx-h100.yaml").read_text())
    paths["tinypower"] = str(folder / "tinypower.yaml")
    Path(paths["tinypower"]).write_text(yaml.safe_dump({**build, "max_power_w": 5e-324}))
    gpu = yaml.safe_load((SRC / "catalog" / "data" / "gpus" / "h100-sxm.yaml").read_text())
    (folder / "overlay" / "gpus").mkdir(parents=True)
    (folder / "overlay" / "gpus" / "zz-gpu.yaml").write_text(yaml.safe_dump({**gpu, "id": "zz-gpu",
                                                                             "usable_memory_mib": 1e308}))
    paths["overlay"] = str(folder / "overlay")
    (folder / "export").mkdir()
    os.mkfifo(folder / "export" / "megatron_args.sh")
    paths["exportdir"] = str(folder / "export")
    paths["notutf8"] = os.fsdecode(os.fsencode(str(folder)) + b"/caf\xe9.json")
    # found by fuzzing job files and calibrations (2026-12-07): a zero degree, counts no float holds, numbers beyond
    # Python's 4,300-digit conversion limit, TOML nested past the recursion limit, calibrations out of range
    texts = {"pp0.sh": "--pipeline-model-parallel-size 0 --num-layers 32 --num-layers-per-virtual-pipeline-stage 2",
             "samples.sh": "--seq-length 4096 --train-samples 1" + "0" * 400,
             "tp0.toml": "[parallelism]\ntensor_parallel_degree = 0\n",
             "steps.toml": "[training]\nseq_len = 4096\nglobal_batch_size = 8\nsteps = 1" + "0" * 400 + "\n",
             "bigint.toml": "[training]\nsteps = 1" + "0" * 5000 + "\n",
             "deep.toml": "[training]\nx = " + "[" * 5000 + "]" * 5000 + "\n",
             "bigint.json": json.dumps({**config, "hidden_size": 8}).replace('"vocab_size": 10', '"vocab_size": 1'
                                                                              + "0" * 5000)}
    calibration = {"schema": "rigplan-calibration/1", "device": {"name": "H100", "kind": "cuda", "gpu_id": "h100-sxm"}}
    overrides = {"cal_gemm": {"efficiency": {"gemm_max": 5}}, "cal_context": {"cuda_context_bytes": -1e12},
                 "cal_latency": {"nic_latency_s": -10}}
    texts.update({f"{name}.json": json.dumps({**calibration, "overrides": o}) for name, o in overrides.items()})
    texts["cal_inf.json"] = json.dumps({**calibration, "overrides": {"efficiency": {"gemm_half_dim": float("inf")}}})
    for name, text in texts.items():
        paths[name.replace(".", "_")] = str(folder / name)
        Path(paths[name.replace(".", "_")]).write_text(text)
    return paths


CORPUS = [
    "memory {nan}", "memory {huge}", "memory {negative}", "memory {wide}", "memory {deep}", "memory {fifo}",
    "memory {big}", "memory /dev/zero", "tco --offers /dev/zero", "tco --offers {latin1}", "tco --offers {fifo}",
    "tco --offers {folder}", "lint {fifo}", "memory {folder}/missing.json",
    "plan llama-3.1-8b --tokens 1T --gpu h100-sxm --markdown {folder}/no/such/dir/plan.md",
    "plan llama-3.1-8b --tokens 1T --gpu h100-sxm --markdown {folder}",
    "validate --case no-case-has-this-id", "validate --group no-group-has-this-name",
    "compare llama-3.1-8b 0xh100-sxm 8xh100-sxm --tokens 1B",
    "compare llama-3.1-8b 99999999xh100-sxm 8xh100-sxm --tokens 1B",
    "plan llama-3.1-8b --tokens 1T --cloud --onprem",
    "memory llama-3.1-8b --global-batch 0", "estimate llama-3.1-8b --tokens 0", "estimate llama-3.1-8b --tokens 1e30",
    "estimate llama-3.1-8b --tokens -5", "estimate llama-3.1-8b --tokens nan",
    "memory --hidden 1000000 --vocab 10000000 --layers 10 --heads 10", "memory llama-3.1-8b --tp 0",
    "memory llama-3.1-8b --gpus 99999999", "tco --hours -5", "tco --utilisation nan", "tco --gpu-price 1e300",
    "plan llama-3.1-8b --tokens 1T --deadline -3d", "plan llama-3.1-8b --tokens 1T --budget -5",
    "plan llama-3.1-8b --tokens 1T --budget 0",
    # beyond the list: the smallest float, over-large keys and prices, files that block, bad bytes
    "tco --years 5e-324", "tco --utilisation 5e-324", "tco --hours 5e-324", "tco --gpu-price 1e-300",
    "estimate llama-3.1-8b --nic 5e-324 --gpus 16", "estimate llama-3.1-8b --checkpoint-interval-s 5e-324",
    "plan llama-3.1-8b --tokens 1T --budget 0.5", "plan llama-3.1-8b --tokens 1T --deadline 1e-300s",
    "estimate llama-3.1-8b --preemptions-per-node-month -1", "memory llama-3.1-8b --fsdp-prefetch 65",
    "memory {mtp}", "tco --offers {baddate}", "tco --offers {hugeprice}", "tco --offers {infprice}",
    "lint {tinypower}", "memory llama-3.1-8b --gpu zz-gpu --catalog {overlay}",
    "export llama-3.1-8b --framework megatron --gpus 8 --output-dir {exportdir} --force",
    "calibrate --runs {fifo}", "calibrate --runs /dev/zero", "memory {notutf8}",
    "estimate llama-3.1-8b --tokens {notutf8}", "validate --case=", "validate --group=",
    "serve --data-dir {latin1}", "serve --time-cap inf", "serve --workers 0", "serve --host 203.0.113.1",
    "lint dgx-h100 --for llama-3.1-8b --seq 99999999", "tco --tou valley:8h@-1,peak:16h@0.1",
    "tco --tou valley:24h@1e308", "tco --price-per-kwh -0.1",
    # found by fuzzing MoE flag mixes: parts the catalog gives no fp32 rate, and fp8 scaling their stack lacks
    "estimate gpt-oss-20b --gpu tpu-v5p --precision fp32 --json",
    "memory llama-3.1-8b --gpu ascend-910b --precision fp32",
    "estimate llama-3.1-8b --gpu l40s --precision fp8 --fp8-recipe blockwise",
    "memory llama-3.1-8b --megatron-args {pp0_sh}", "memory llama-3.1-8b --megatron-args {samples_sh}",
    "memory llama-3.1-8b --gpus 8 --torchtitan-config {tp0_toml}",
    "memory llama-3.1-8b --torchtitan-config {steps_toml}", "memory llama-3.1-8b --torchtitan-config {bigint_toml}",
    "memory llama-3.1-8b --torchtitan-config {deep_toml}", "memory {bigint_json}",
    "memory llama-3.1-8b --calibration {cal_gemm_json}", "memory llama-3.1-8b --calibration {cal_context_json}",
    "estimate llama-3.1-8b --gpus 16 --calibration {cal_latency_json}",
    "estimate llama-3.1-8b --gpus 8 --calibration {cal_inf_json}", "tco --gpu h100-sxm --gpus 8 --licence 1e30",
    "memory llama-3.1-8b --zero 1 --fsdp", "plan llama-3.1-8b --tokens 1T --budget 1$000", "export llama-3.1-8b",
    "tco --server dgx-h100 --gpu a100-80gb-sxm --gpus 8", "plan llama-3.1-8b --tokens 1T --server dgx-h100 --gpu l40s",
]


@pytest.fixture(scope="module")
def files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _files(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("line", CORPUS)
def test_hostile_cli_input_is_one_line_and_exit_2(files, line, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    from rigplan.cli.main import main

    monkeypatch.setattr(sys, "argv", ["rigplan", *line.format(**files).split()])
    with pytest.raises(SystemExit) as info:
        main()  # an exception other than SystemExit escaping here would be a traceback
    assert info.value.code == 2, line
    lines = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("rigplan: error: "), (line, lines)
    assert not re.search(r"\de\+\d", lines[0]), lines[0]  # never 1e+30 (5e-324 keeps its exponent)
