"""The service grounds each check as the server's settings say, unless a request says otherwise."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from verity.config import Settings
from verity.service.execute import LocalExecutor, plan
from verity.service.requests import CheckRequest

CLAIM = "The Eiffel Tower is in Paris."


def test_a_request_takes_the_servers_grounding_unless_it_names_one() -> None:
    assert plan(CheckRequest(claim=CLAIM), Settings()).grounding == "on"
    assert plan(CheckRequest(claim=CLAIM), Settings(grounding="off")).grounding == "off"
    asked = CheckRequest(claim=CLAIM, grounding="strict")
    assert plan(asked, Settings(grounding="off")).grounding == "strict"


def test_plans_that_differ_in_grounding_are_different_methods() -> None:
    on = plan(CheckRequest(claim=CLAIM, method="direct"), Settings())
    off = plan(CheckRequest(claim=CLAIM, method="direct", grounding="off"), Settings())
    assert on.key() != off.key()


def test_the_executor_builds_the_method_with_the_plans_grounding() -> None:
    executor = LocalExecutor(Settings(method="direct"))
    chosen = plan(CheckRequest(claim=CLAIM, grounding="strict"), executor.defaults)
    assert executor.method(chosen).grounding == "strict"


def test_an_unknown_grounding_mode_is_refused() -> None:
    with pytest.raises(ValidationError):
        CheckRequest(claim=CLAIM, grounding="maybe")
