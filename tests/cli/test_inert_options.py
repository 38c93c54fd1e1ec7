"""Options typed but inert (an empty value, a LoRA setting without LoRA), repeated names and malformed counts: one
line naming what is wrong, exit status 2 (found by fuzzing the CLI, 2026-12-07). The same options used as meant
still run."""

from __future__ import annotations

import pytest
from cli_run import run_main


def _run(argv: list[str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code, _, err = run_main(argv, monkeypatch, capsys)
    return code, err


REFUSED = [
    (["memory", "llama-3.1-8b", "--lora-rank", "64"],
     "--lora-rank applies only with --method lora/qlora, and --method is full"),
    (["memory", "llama-3.1-8b", "--lora-targets", "q,k,v"], "--lora-targets applies only with --method lora/qlora"),
    (["memory", "llama-3.1-8b", "--method", "lora", "--no-double-quant"],
     "--no-double-quant applies only with --method qlora, and --method is lora"),
    (["plan", "llama-3.1-8b", "--tokens", "1B", "--lora-rank", "8"], "--lora-rank applies only with"),
    (["compare", "llama-3.1-8b", "8xh100-sxm", "8xa100-80gb-sxm", "--tokens", "1B", "--lora-targets", "all"],
     "--lora-targets applies only with"),
    (["memory", "llama-3.1-8b", "--stage-layers", ""], "--stage-layers is empty"),
    (["memory", "llama-3.1-8b", "--pipeline-layout", " "], "--pipeline-layout is empty"),
    (["memory", "llama-3.1-8b", "--cuda-graph-scope", ""], "--cuda-graph-scope is empty"),
    (["tco", "--gpu", "h100-sxm", "--tou", ""], "--tou is empty"),
    (["plan", "llama-3.1-8b", "--tokens", "1B", "--plot", ""], "--plot is empty"),
    (["plan", "llama-3.1-8b", "--tokens", "1B", "--cluster", ""], "--cluster is empty"),
    (["memory", "llama-3.1-8b", "--catalog", ""], "--catalog is empty"),
    (["plan", "llama-3.1-8b", "--tokens", "1B", "--cluster", "2x8:"], "--cluster '2x8:' is not NODESxGPUS[:GPU]"),
    (["plan", "llama-3.1-8b", "--tokens", "1B", "--cluster", "\u00b2x8"], "is not NODESxGPUS[:GPU]"),
    (["compare", "llama-3.1-8b", "\u00b2xh100-sxm", "8xa100-80gb-sxm", "--tokens", "1B"], "is not COUNTxGPU"),
    (["memory", "llama-3.1-8b", "--method", "lora", "--lora-targets", "q,v,q"],
     "--lora-targets names q more than once"),
    (["tco", "--gpu", "h100-sxm", "--tou", "peak:8h@0.2,Peak:16h@0.1"], "band 'Peak' is given twice"),
    (["estimate", "llama-3.1-8b", "--tokens", "-1"], "--tokens must be >= 1 (allowed 1 to 1,000T); got '-1'"),
    (["estimate", "llama-3.1-8b", "--tokens", "0"], "--tokens must be >= 1 (allowed 1 to 1,000T); got '0'"),
]


@pytest.mark.parametrize(("argv", "says"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_inert_or_repeated_input_is_refused_in_one_line(argv, says, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    code, err = _run(argv, monkeypatch, capsys)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (argv, err)
    assert len(lines) == 1 and lines[0].startswith("rigplan: error: "), lines
    assert says in lines[0], lines[0]


ACCEPTED = [
    ["memory", "llama-3.1-8b", "--method", "lora", "--lora-rank", "64", "--lora-targets", "q,k,v"],
    ["memory", "llama-3.1-8b", "--method", "qlora", "--no-double-quant", "--lora-rank", "8"],
    ["tco", "--gpu", "h100-sxm", "--tou", "peak:8h@0.2,flat:8h@0.1,valley:8h@0.05"],
    ["memory", "llama-3.1-8b", "--method", "lora"],
]


@pytest.mark.parametrize("argv", ACCEPTED, ids=" ".join)
def test_the_same_options_used_as_meant_still_run(argv, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    code, err = _run(argv, monkeypatch, capsys)
    assert code == 0, (argv, err)
