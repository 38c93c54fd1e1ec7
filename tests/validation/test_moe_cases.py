"""The MoE validation suite and the whole-run check of DeepSeek-V3's report.

Each case: |predicted / measured - 1| <= 0.25, or a known gap that names the unmodelled effect (and is
really outside tolerance, so a gap is dropped once the model covers it). The per-case errors are
printed by `rigplan validate --suite moe`.
"""

from __future__ import annotations

import pytest
from published_cases import check_published_case

from rigplan.flow import evidence
from rigplan.validation import regimes
from rigplan.validation.moe_suite import MOE_CASE_TOLERANCE, evaluate_moe_case
from rigplan.validation.run import SUITES, load_case_file

CASES = list(load_case_file(SUITES["moe"].default_file).cases)


def tokens_error(case) -> float:  # type: ignore[no-untyped-def]
    """A case's error as a tokens/s error: a step-time case's error e is a tokens/s error of 1/(1 + e) - 1."""
    error = regimes.tokens_error(evaluate_moe_case(case))
    assert error is not None
    return error


def errors_where_shown(note: str) -> list[float]:
    """The tokens/s errors of the MoE cases whose estimate shows `note` among its assumptions."""
    from rigplan.flow import estimate as speed

    return [tokens_error(case) for case in CASES if note in speed.estimate(case.request).setup.assumptions]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_moe_case(case) -> None:  # type: ignore[no-untyped-def]
    check_published_case(evaluate_moe_case(case), case, "moe", MOE_CASE_TOLERANCE)


def test_every_case_is_a_moe_model_with_a_source() -> None:
    from rigplan.catalog.load import load_catalog

    catalog = load_catalog()
    for case in CASES:
        assert case.request.model and catalog.model(case.request.model).moe is not None, case.id
        assert case.source.url and case.source.url.startswith("https://"), case.id


def test_small_microbatch_hopper_note_states_the_suite_as_it_is() -> None:
    """The figures SMALL_MICROBATCH_MOE_EVIDENCE quotes are those of the MoE cases whose estimate shows it."""
    import statistics


    errors = errors_where_shown(evidence.SMALL_MICROBATCH_MOE_EVIDENCE)
    assert len(errors) == 54
    assert round(-min(errors) * 100) == 30 and round(max(errors) * 100) == 478
    assert round(statistics.median(errors) * 100) == 32
    assert sum(e > 0.35 for e in errors) == 22


def test_gb300_moe_note_states_the_suite_as_it_is() -> None:
    """The figures GB300_MOE_EVIDENCE quotes are those of the MoE cases whose estimate shows it (gpt-oss apart), and the
    GB200 figure is the median of the suite's GB200 cases with the same kernels (fused, not NVFP4)."""
    import statistics

    from rigplan.flow import estimate as speed

    others, gpt_oss, gb200 = [], [], []
    for case in CASES:
        if evidence.GB300_MOE_EVIDENCE in speed.estimate(case.request).setup.assumptions:
            (gpt_oss if case.request.model.startswith("gpt-oss") else others).append(tokens_error(case))
        elif case.request.gpu == "gb200" and evidence.fused_not_nvfp4(speed.estimate(case.request).setup.job):
            gb200.append(tokens_error(case))
    assert (len(others), len(gpt_oss)) == (34, 16)
    assert round(max(others) * 100) == 5 and round(-min(others) * 100) == 30
    assert round(-statistics.median(others) * 100) == 12
    assert round(-min(gpt_oss) * 100) == 10 and round(max(gpt_oss) * 100) == 27
    assert round(-statistics.median(gpt_oss) * 100) == 2
    bridge_bf16 = sorted(gpt_oss)[-4:]
    assert round(bridge_bf16[0] * 100) == 24 and sum(e > 0.25 for e in gpt_oss) == 2
    assert round(-statistics.median(gb200) * 100) == 0


def test_mamba2_note_states_the_nemotron_rows_as_they_are() -> None:
    """MAMBA2_NOTE's figures are those of the suite's Mamba-2 hybrid cases, which it is shown beside (and the GB300
    MoE note is not: its runs have no linear-attention layers)."""
    import statistics

    from rigplan.flow import estimate as speed

    errors, nemotron = [], []
    for case in CASES:
        shown = speed.estimate(case.request).to_dict(with_advice=False)["assumptions"]
        if speed.MAMBA2_NOTE in shown:
            assert evidence.GB300_MOE_EVIDENCE not in shown
            errors.append(tokens_error(case))
            nemotron.append(case.id)
    assert len(errors) == 9
    assert round(min(errors) * 100) == -5 and round(max(errors) * 100) == 24
    assert round(statistics.median(errors) * 100) == 21
    nano = [e for case, e in zip(nemotron, errors, strict=True) if "nano" in case]
    assert len(nano) == 5 and round(min(nano) * 100) == 18
    dense_file = load_case_file(SUITES["dense_oos"].default_file)
    dense = [regimes.tokens_error(SUITES["dense_oos"].evaluate(case)) for case in dense_file.cases
             if speed.MAMBA2_NOTE in speed.estimate(case.request).setup.assumptions]
    assert len(dense) == 7 and all(e is not None for e in dense)
    shown = [e for e in dense if e is not None]
    assert round(min(shown) * 100) == 3 and round(max(shown) * 100) == 8
    assert round(statistics.median(shown) * 100) == 6


def test_gb300_moe_note_is_not_shown_for_dense_nvfp4_or_other_parts() -> None:
    from rigplan.flow import estimate as speed
    from rigplan.flow.request import EstimateRequest

    base = {"gpu": "gb300", "gpus": 8, "precision": "fp8", "seq": 4096, "micro_batch": 1, "global_batch": 64,
            "framework": "megatron", "ep": 8}
    shown = speed.estimate(EstimateRequest(model="qwen3-30b-a3b", **base)).setup.assumptions
    assert evidence.GB300_MOE_EVIDENCE in shown
    for changed in ({"model": "llama-3.1-8b", "ep": 1}, {"model": "qwen3-30b-a3b", "fp8_recipe": "nvfp4"},
                    {"model": "qwen3-30b-a3b", "gpu": "gb200"}, {"model": "qwen3-30b-a3b", "kernels": "eager"}):
        request = EstimateRequest(**{**base, **changed})
        assert evidence.GB300_MOE_EVIDENCE not in speed.estimate(request).setup.assumptions, changed


def test_hopper_gpt_oss_note_states_the_suite_as_it_is() -> None:
    """HOPPER_GPT_OSS_EVIDENCE quotes the tokens/s errors of the MoE cases whose estimate shows it, and it is shown for
    gpt-oss on Hopper with fused kernels only."""
    import statistics

    from rigplan.flow import estimate as speed
    from rigplan.flow.request import EstimateRequest

    errors = errors_where_shown(evidence.HOPPER_GPT_OSS_EVIDENCE)
    assert len(errors) == 12
    assert round(-min(errors) * 100) == 29 and round(max(errors) * 100) == 116
    assert round(statistics.median(errors) * 100) == 24 and sum(e > 0.35 for e in errors) == 5
    base = {"model": "gpt-oss-20b", "gpu": "h100-sxm", "gpus": 8, "ep": 8, "framework": "megatron"}
    assert evidence.HOPPER_GPT_OSS_EVIDENCE in speed.estimate(EstimateRequest(**base)).setup.assumptions
    for changed in ({"gpu": "b200"}, {"model": "qwen3-30b-a3b"}, {"kernels": "eager"}):
        request = EstimateRequest(**{**base, **changed})
        assert evidence.HOPPER_GPT_OSS_EVIDENCE not in speed.estimate(request).setup.assumptions, changed


def test_blackwell_gpt_oss_note_states_the_suite_as_it_is() -> None:
    """BLACKWELL_GPT_OSS_EVIDENCE quotes the tokens/s errors of the MoE cases whose estimate shows it and of the same
    parts' gpt-oss cases with a full-iteration CUDA graph, and it is shown only without that graph."""
    import statistics

    from rigplan.flow import estimate as speed
    from rigplan.flow.request import EstimateRequest

    errors = errors_where_shown(evidence.BLACKWELL_GPT_OSS_EVIDENCE)
    assert len(errors) == 12
    assert round(min(errors) * 100) == 15 and round(max(errors) * 100) == 103
    assert round(statistics.median(errors) * 100) == 40 and sum(e > 0.35 for e in errors) == 8
    graphed = [tokens_error(case) for case in CASES
               if case.request.gpu in evidence.BLACKWELL_GPT_OSS_PARTS and case.request.model.startswith("gpt-oss")
               and case.request.cuda_graphs == "full"]
    assert len(graphed) == 14 and round(min(graphed) * 100) == -5 and round(max(graphed) * 100) == 4
    base = {"model": "gpt-oss-120b", "gpu": "b200", "gpus": 8, "ep": 8, "framework": "megatron"}
    assert evidence.BLACKWELL_GPT_OSS_EVIDENCE in speed.estimate(EstimateRequest(**base)).setup.assumptions
    for changed in ({"gpu": "gb300"}, {"gpu": "h100-sxm"}, {"model": "qwen3-30b-a3b"}, {"cuda_graphs": "full"},
                    {"kernels": "eager"}):
        request = EstimateRequest(**{**base, **changed})
        assert evidence.BLACKWELL_GPT_OSS_EVIDENCE not in speed.estimate(request).setup.assumptions, changed
