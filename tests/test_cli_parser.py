"""The shared ``s3`` parser: real defaults in every help, "did you mean" for unknown options."""

from __future__ import annotations

import argparse
from collections.abc import Iterator

import pytest

from gym_s3.cli import build_parser
from gym_s3.cli_parser import S3ArgumentParser, preset_values, suggest_options


def _all_parsers(
    parser: argparse.ArgumentParser, name: str = "s3"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every (sub)command parser under ``parser`` with its command line."""
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub_name, sub in action.choices.items():
                yield from _all_parsers(sub, f"{name} {sub_name}")


@pytest.fixture(scope="module")
def parsers() -> list[tuple[str, argparse.ArgumentParser]]:
    """All ``s3`` command parsers."""
    return list(_all_parsers(build_parser()))


def test_every_command_uses_the_shared_parser(parsers) -> None:
    """The class reaches every subcommand (argparse's parser_class inheritance)."""
    assert len(parsers) > 15
    assert all(isinstance(p, S3ArgumentParser) for _, p in parsers)


def test_no_help_prints_none_or_two_defaults(parsers) -> None:
    """No "(default: None)", no option stating its default twice, no "preset value if omitted"."""
    for name, parser in parsers:
        formatter = parser._get_formatter()
        for action in parser._actions:
            text = formatter._expand_help(action) if action.help else ""
            where = f"{name} {action.option_strings}: {text}"
            assert "default: None" not in text and "preset value if omitted" not in text, where
            assert text.lower().count("default:") + text.count("preset's:") <= 1, where
        assert "(default: None)" not in parser.format_help(), name


def test_preset_options_show_the_preset_values(parsers) -> None:
    """`s3 train --help` names the real per-preset values instead of a placeholder."""
    helps = {name: p.format_help() for name, p in parsers}
    train = " ".join(helps["s3 train"].split())
    assert "cars simulated in parallel; if omitted, the preset's: 2048 (bicycle" in train
    assert "64 (tiny)" in train
    pipeline = " ".join(helps["s3 pipeline"].split())
    assert "the preset's: 300 (quick)" in pipeline and "800 (quick)" in pipeline
    assert "about 7-11 minutes" in pipeline  # the same statement as the README's


def test_readme_states_the_quick_preset_time_as_the_help_does() -> None:
    """README and `s3 pipeline --help` give the quick preset the same duration."""
    from pathlib import Path

    from policies.pipeline.config import QUICK_DURATION

    readme = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert QUICK_DURATION in readme


@pytest.mark.parametrize(("argv", "hint"), [
    (["train", "--num_envs", "64"], "did you mean --num-envs?"),
    (["pipeline", "--ppo_seconds=30"], "did you mean --ppo-seconds?"),
    (["data", "generate", "--out", "x", "--episode_seconds", "3"], "did you mean --episode-seconds?"),  # noqa: E501
])  # fmt: skip
def test_unknown_options_suggest_the_close_ones(argv, hint, capsys) -> None:
    """An unknown option of a subcommand gets that subcommand's closest options."""
    with pytest.raises(SystemExit) as exit_info:
        build_parser().parse_args(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert hint in err and f"s3 {' '.join(a for a in argv[:2] if not a.startswith('-'))}" in err


def test_suggestions_and_preset_phrases() -> None:
    """The helpers behind the messages."""
    known = ["--num-envs", "--num-layouts", "--seed", "-h"]
    assert suggest_options("--num_envs", known)[0] == "--num-envs"
    assert suggest_options("--zzz", known) == []
    presets = {"a": {"n": 2}, "b": {"n": 2}, "c": {"n": None}}
    assert preset_values(presets, "n") == "if omitted, the preset's: 2 (a, b); none (c)"
