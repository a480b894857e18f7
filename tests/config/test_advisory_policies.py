"""The advisories a policyEntry asks for (issue 39 item 1): ``advisoryForDelivery``,
``advisoryForConsumed``, ``advisoryForSlowConsumers``, ``advisoryForFastProducers``,
``advisoryWhenFull`` are typed settings with their line, listed by ``--check-config``
(no "does not implement" warning), a bad value an error naming its line, and handed to
each destination's ``DestinationPolicy.advise``."""

from __future__ import annotations

from pathlib import Path

import pytest

from broker.cli import main
from broker.core.base.settings import ADVISE_CONSUMED, ADVISE_DELIVERY, ADVISE_FAST, ADVISE_FULL, ADVISE_SLOW
from broker.policies import destination_policy
from config.model import RedeliveryPolicy
from tests.config.helpers import FIRST_BODY_LINE, broker_file, load_body, one_error, warnings_of

FLAGS = (
    'advisoryForDelivery="true" advisoryForConsumed="true" advisoryForSlowConsumers="true" '
    'advisoryForFastProducers="true" advisoryWhenFull="true"'
)


def _entries(*attributes: str) -> str:
    return (
        "<destinationPolicy><policyMap><policyEntries>\n"
        + "\n".join(f'<policyEntry queue="Q{i}" {more}/>' for i, more in enumerate(attributes))
        + "\n</policyEntries></policyMap></destinationPolicy>\n"
    )


def test_each_flag_is_read_and_handed_to_the_destination(tmp_path: Path) -> None:
    loaded = load_body(tmp_path, _entries(FLAGS, 'advisoryForConsumed="true"', ""))
    assert "advisory" not in warnings_of(loaded)
    every, consumed, none = loaded.config.policies.entries
    assert every.advisory_for_delivery and every.advisory_when_full
    assert every.origins["advisory_for_delivery"].line == FIRST_BODY_LINE + 1
    policy = destination_policy(every, RedeliveryPolicy())
    assert policy.advise == ADVISE_DELIVERY | ADVISE_CONSUMED | ADVISE_SLOW | ADVISE_FAST | ADVISE_FULL
    assert destination_policy(consumed, RedeliveryPolicy()).advise == ADVISE_CONSUMED
    assert destination_policy(none, RedeliveryPolicy()).advise == 0


def test_a_bad_value_is_an_error_naming_its_line(tmp_path: Path) -> None:
    error = one_error(tmp_path, _entries('advisoryWhenFull="sometimes"'))
    assert error.line == FIRST_BODY_LINE + 1
    assert "advisoryWhenFull" in str(error)


def test_check_config_lists_them_with_their_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = broker_file(tmp_path, _entries(FLAGS))
    assert main(["--check-config", str(path)]) == 0
    out = capsys.readouterr().out
    line = FIRST_BODY_LINE + 1
    for name in (
        "advisoryForDelivery",
        "advisoryForConsumed",
        "advisoryForSlowConsumers",
        "advisoryForFastProducers",
        "advisoryWhenFull",
    ):
        assert any(
            row.split()[:3] == [name, "=", "true"] and row.endswith(f"{path}:{line}")
            for row in out.splitlines()
        )
    assert "does not implement" not in out
