

def test_token_counts_read_as_people_write_them() -> None:
    from rigplan.units import format_count, format_tokens

    assert format_tokens(5e10) == "50B tokens"
    assert format_tokens(1e12) == "1T tokens"
    assert format_tokens(2.5e6) == "2.5M tokens"
    assert format_tokens(300e9) == "300B tokens"
    assert "e+" not in format_count(999.9e9) and "e+" not in format_count(999_999)


def test_no_output_writes_tokens_in_exponent_notation(tmp_path) -> None:
    import re

    from click.testing import CliRunner

    from rigplan.cli.main import cli

    md = tmp_path / "plan.md"
    runner = CliRunner()
    outputs = [
        runner.invoke(cli, ["plan", "llama-3.2-1b", "--tokens", "50B", "--gpu", "h100-sxm", "--gpus-max", "8",
                            "--markdown", str(md)]).output,
        runner.invoke(cli, ["estimate", "llama-3.2-1b", "--gpu", "h100-sxm", "--tokens", "50B"]).output,
        runner.invoke(cli, ["compare", "llama-2-7b", "8xa100-80gb-sxm", "4xh100-sxm", "--tokens", "2B"]).output,
        runner.invoke(cli, ["lint", "dgx-h100", "--for", "llama-3.1-70b", "--tokens", "1T"]).output,
    ]
    outputs.append(md.read_text(encoding="utf-8"))
    assert "50B tokens" in outputs[0] + outputs[4]
    for text in outputs:
        assert not re.search(r"\d(?:\.\d+)?e[+-]\d", text), text
