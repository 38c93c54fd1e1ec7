"""Which layouts fit: rigplan's memory verdicts against what a published tuning guide says ran or ran out.

Alibaba PAI's "Megatron MoE Training Benchmark and Tuning Guide" (Qwen3-235B-A22B on 256 H800 80 GB,
Pai-Megatron-Patch 2b201af; the rows of group pai_megatron_patch_h800_qwen3 in the MoE suite) states, beside
the layouts it measured:
- "if we require no recompute (recompute=select is also approximately no recompute), then TP must be
  enabled, otherwise it will exceed single-card memory": TP1 with recompute=select does not fit;
- "The first pp8 configuration, since memory is basically full, once vpp is enabled, it will OOM": TP2 EP8
  PP8 with recompute=select fits, and the same with interleaving (VPP 2 or 4) does not;
- every layout it measured ran, so each fits.
recompute=select is --recompute-modules moe_act layernorm; embedding and loss count as one layer each in
the pipeline split (the guide's layout note). VPP 4 is left out: rigplan puts it 0.04 GiB over the usable
79.65 GiB, too close to the line to test either way.
"""

from __future__ import annotations

from typing import Any

import pytest

from rigplan import api
from rigplan.flow.request import EstimateRequest
from rigplan.validation.run import SUITES, load_case_file

BASE: dict[str, Any] = dict(
    model="qwen3-235b-a22b", gpu="h800-sxm", gpus=256, precision="bf16-mixed", seq=4096, zero=1, ep=8, etp=1,
    framework="megatron", attention="flash", embedding_layer_weight=1, head_layer_weight=1, balanced_routing=True,
    moe_dispatcher="alltoall", micro_batch=1, global_batch=2048, recompute="none", recompute_moe_act=True,
    recompute_layernorm=True)

GUIDE_OOM = {
    "tp1-pp32-vpp3-select (guide: TP must be enabled without recompute)": dict(tp=1, pp=32, vpp=3),
    "tp2-ep8-pp8-vpp2-select (guide: pp8 OOMs once vpp is enabled)": dict(tp=2, pp=8, vpp=2, sequence_parallel=True),
}


def _fits(request: dict[str, Any]) -> tuple[bool, float]:
    memory = api.estimate(EstimateRequest(**request)).memory
    return memory.fits, memory.breakdown.total_bytes / 2**30


@pytest.mark.parametrize("layout", sorted(GUIDE_OOM))
def test_layouts_the_guide_says_run_out_of_memory_do_not_fit(layout: str) -> None:
    fits, need_gib = _fits({**BASE, **GUIDE_OOM[layout]})
    assert not fits, f"{layout}: rigplan says it fits ({need_gib:.1f} GiB of 80 GB)"


def test_the_pp8_layout_the_guide_ran_without_interleaving_fits() -> None:
    fits, need_gib = _fits({**BASE, "tp": 2, "pp": 8, "vpp": 1, "sequence_parallel": True})
    assert fits, f"needs {need_gib:.1f} GiB"


PAI_ROWS = [c for c in load_case_file(SUITES["moe"].default_file).cases if c.group == "pai_megatron_patch_h800_qwen3"]


@pytest.mark.parametrize("case", PAI_ROWS, ids=[c.id for c in PAI_ROWS])
def test_every_layout_the_guide_measured_fits(case) -> None:  # type: ignore[no-untyped-def]
    fits, need_gib = _fits(case.request.model_dump(exclude_none=True))
    assert fits, f"{case.id}: the guide ran it; rigplan needs {need_gib:.1f} GiB"
