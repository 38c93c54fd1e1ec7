"""--loss head-chunked: torchtitan's ChunkedLossWrapper runs the LM head and the loss on one of eight sequence
chunks at a time, so one chunk's logits live (with the unfused loss's 12 bytes a logit) and the hidden states'
gradient gathers in fp32."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from rigplan.catalog.load import load_catalog
from rigplan.cli.main import cli
from rigplan.estimate.logits import HEAD_CHUNKS
from rigplan.flow.memory import memory
from rigplan.flow.request import MemoryRequest

BASE = {"model": "gpt-oss-20b", "gpu": "b200", "gpus": 8, "seq": 8192, "micro_batch": 10, "zero": 3,
        "framework": "torchtitan", "compile": True, "precision": "bf16-true", "recompute": "full"}


def test_one_chunk_of_logits_lives_and_the_gradient_gathers_in_fp32() -> None:
    arch = load_catalog().model("gpt-oss-20b").to_domain()
    unfused = memory(MemoryRequest(**BASE, loss="unfused")).breakdown
    chunked = memory(MemoryRequest(**BASE, loss="head-chunked")).breakdown
    tokens = 10 * 8192
    assert HEAD_CHUNKS == 8
    # the unfused loss holds 12 B a logit of the whole sequence, the head-chunked one 12 B of one chunk, and
    # adds the fp32 gradient of the head's input
    assert unfused.logits_bytes - chunked.logits_bytes == pytest.approx(
        tokens * arch.vocab * 12 * (1 - 1 / HEAD_CHUNKS) - tokens * arch.hidden * 4)
    # Lambda's torchtitan sweep on 8 B200 (docs/bs_sweep_results.md @ fa57a4fd): 69.5 GiB reserved at batch 10;
    # the unfused loss alone would not fit the 179 GiB
    assert unfused.total_bytes > 179 * 2**30 > chunked.total_bytes


def test_the_cli_takes_it() -> None:
    result = CliRunner().invoke(cli, ["memory", "gpt-oss-20b", "--gpu", "b200", "--gpus", "8", "--seq", "8192",
                                      "--micro-batch", "10", "--zero", "3", "--framework", "torchtitan",
                                      "--recompute", "full", "--loss", "head-chunked", "--json"])
    assert result.exit_code == 0, result.output
    assert '"loss": "head-chunked"' in result.output
