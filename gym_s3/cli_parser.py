"""The argument parser of every ``s3`` command: honest defaults and "did you mean" errors.

:class:`S3ArgumentParser` is the parser class of ``s3`` and, through argparse's
``parser_class`` inheritance, of every subcommand registered under it. It

* formats help with :class:`S3HelpFormatter`: ``(default: X)`` is added only where the help
  does not state its default already and the default is a real value (not ``None``), so no option
  prints two defaults or ``(default: None)``;
* answers an unknown option with the closest known ones of the command that was typed
  (``--num_envs`` -> "did you mean --num-envs?"), through :mod:`difflib`.

:func:`preset_values` writes the "if omitted" part of options whose default comes from a named
preset, with the real values of every preset.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Mapping, Sequence
from typing import Any, NoReturn

__all__ = ["S3ArgumentParser", "S3HelpFormatter", "preset_values", "suggest_options"]


class S3HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help formatter that states each default once, and only when there is one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            "default" in text.lower()
            or "if omitted" in text.lower()
            or action.default is None
            or action.default is argparse.SUPPRESS
            or isinstance(action, argparse._StoreConstAction | argparse._HelpAction)
            or not (action.option_strings or action.nargs in (argparse.OPTIONAL, "*"))
        ):
            return action.help
        return f"{text} (default: %(default)s)"


#: formatter classes that are replaced by :class:`S3HelpFormatter` in an :class:`S3ArgumentParser`
_PLAIN_FORMATTERS = (argparse.HelpFormatter, argparse.ArgumentDefaultsHelpFormatter)


def suggest_options(unknown: str, known: Sequence[str], *, count: int = 2) -> list[str]:
    """Known option strings closest to ``unknown`` (``_`` read as ``-``, ``=value`` dropped)."""
    word = unknown.split("=", 1)[0]
    exact = [word.replace("_", "-")]
    hits = [k for k in known if k in exact]
    close = difflib.get_close_matches(word.replace("_", "-"), known, n=count, cutoff=0.6)
    return list(dict.fromkeys([*hits, *close]))[:count]


class S3ArgumentParser(argparse.ArgumentParser):
    """``argparse.ArgumentParser`` with :class:`S3HelpFormatter` and option suggestions.

    Subparsers made with ``add_subparsers().add_parser`` are of this class too (argparse's
    default ``parser_class`` is the parent's class); a plain or ``ArgumentDefaultsHelpFormatter``
    ``formatter_class`` passed by a subcommand is upgraded to :class:`S3HelpFormatter`.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        if kwargs.get("formatter_class", argparse.HelpFormatter) in _PLAIN_FORMATTERS:
            kwargs["formatter_class"] = S3HelpFormatter
        super().__init__(*args, **kwargs)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None):
        """As argparse, but unknown options are reported by the subcommand that was typed."""
        argv = list(sys.argv[1:] if args is None else args)
        parsed, extras = self.parse_known_args(argv, namespace)
        if extras:
            self._typed_command(argv)._unknown(extras)
        return parsed

    def _typed_command(self, argv: Sequence[str]) -> S3ArgumentParser:
        """The innermost (sub)command parser named on the command line."""
        parser: S3ArgumentParser = self
        for token in argv:
            subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
            if subs and token in subs[0].choices:
                child = subs[0].choices[token]
                if not isinstance(child, S3ArgumentParser):
                    break
                parser = child
        return parser

    def _unknown(self, extras: Sequence[str]) -> NoReturn:
        """Exit with ``unrecognized arguments`` and the closest known options."""
        known = [s for a in self._actions for s in a.option_strings]
        hints = []
        for word in extras:
            if word.startswith("-"):
                near = suggest_options(word, known)
                if near:
                    hints.append(f"{word.split('=', 1)[0]}: did you mean {' or '.join(near)}?")
        message = f"unrecognized arguments: {' '.join(extras)}"
        self.error(message + ("\n  " + "\n  ".join(hints) if hints else ""))


def preset_values(presets: Mapping[str, Any], field: str, *, unit: str = "") -> str:
    """The help phrase for an option whose default is the chosen preset's ``field``.

    Presets with the same value are grouped, e.g. ``"if omitted, the preset's: 2048 (bicycle,
    ddm, trans, dytr, oracle), 64 (tiny)"``.

    Args:
        presets: preset name -> config object (a dataclass with attribute ``field``) or mapping.
        field: the attribute the option overrides.
        unit: unit text appended to each value (e.g. ``" s"``).
    """
    groups: dict[str, list[str]] = {}
    for name, config in presets.items():
        value = config.get(field) if isinstance(config, Mapping) else getattr(config, field)
        if isinstance(value, tuple | list):
            shown = ",".join(str(v) for v in value) or "none"
        elif isinstance(value, float):
            shown = f"{value:g}"
        else:
            shown = "none" if value is None else str(value)
        groups.setdefault(f"{shown}{unit}", []).append(name)
    parts = [f"{value} ({', '.join(names)})" for value, names in groups.items()]
    return "if omitted, the preset's: " + "; ".join(parts)
