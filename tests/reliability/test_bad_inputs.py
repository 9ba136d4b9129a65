"""The bad-input catalogue (issue 11): every case raises the right error, clearly and in time.

Each row of the table feeds one bad input to the real code (env constructors, ``step`` and
``reset``, track and log loaders, checkpoint loading, the ``s3`` command line, simulator
connections) and checks that it raises the expected exception class, that the message names both
the problem and the fix, and that it does so within the case's timeout. Command-line cases must
also end with exit code 2 and print no traceback.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from badinput_ckpt_cases import CASES as CKPT_CASES
from badinput_cli_cases import CASES as CLI_CASES
from badinput_cli_cases import XFAIL
from badinput_env_cases import CASES as ENV_CASES
from badinput_file_cases import CASES as FILE_CASES
from badinput_journal_cases import CASES as JOURNAL_CASES
from badinput_plausibility_cases import CASES as PLAUSIBILITY_CASES
from badinput_sim_cases import CASES as SIM_CASES
from badinput_support import Case, CliExit

CASES: tuple[Case, ...] = (
    *ENV_CASES,
    *FILE_CASES,
    *JOURNAL_CASES,
    *PLAUSIBILITY_CASES,
    *CKPT_CASES,
    *CLI_CASES,
    *SIM_CASES,
)


def test_catalogue_is_large_and_unique() -> None:
    """The catalogue holds at least 30 cases with unique ids."""
    ids = [case.id for case in CASES]
    assert len(ids) >= 30, len(ids)
    assert len(set(ids)) == len(ids), sorted(i for i in ids if ids.count(i) > 1)


def _param(case: Case) -> object:
    """The pytest parameter of a case: its id, its timeout and a known-failure mark if any."""
    marks = [pytest.mark.timeout(case.timeout_s)]
    if case.id in XFAIL:
        marks.append(XFAIL[case.id])
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in CASES])
def test_bad_input_raises_a_clear_error(case: Case, tmp_path: Path) -> None:
    """The case raises ``case.error`` naming the problem and the fix, within its timeout."""
    start = time.monotonic()
    with pytest.raises(case.error) as info:
        case.run(tmp_path)
    elapsed = time.monotonic() - start
    message = str(info.value)
    flags = re.IGNORECASE | re.DOTALL
    assert re.search(case.problem, message, flags), f"problem not named: {message!r}"
    assert re.search(case.fix, message, flags), f"fix not named: {message!r}"
    assert elapsed < case.timeout_s
    if isinstance(info.value, CliExit):
        assert info.value.code == 2, message
        assert "Traceback" not in message, message
