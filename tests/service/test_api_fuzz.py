"""The API fuzzed from its own OpenAPI schema: no 5xx, and every answer as the schema says.

Schemathesis generates requests for every operation of ``/openapi.json`` (valid ones and
invalid ones) and checks each answer: not a server error, a documented status, the
documented content type, headers and body, invalid data refused. Checks that pass
validation are run by a scripted fake executor, so they end at once.

A request can fit the schema and still be refused: the schema gives the shape of a
method, model or source name, not the names this server offers (400, with the valid
ones), nor each method's own settings or the server's size limits (422). Those two
statuses are therefore among the answers a well-formed request may get.

The schema is loaded when this module is (schemathesis's lazy fixture loading does not
work with this pytest), so the app is built here, over an in-memory job store, and its
service is started and stopped by a module fixture.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from verity.domain import Article, Claim, Label, Verdict
from verity.service.app import create_app
from verity.service.core import Service, ServiceSettings
from verity.service.jobs import JobStore

# A modest number per operation: the whole run stays well under a minute.
EXAMPLES = 40


def fake_executor(request, listener) -> Verdict:
    """A fake: SUPPORTED for a claim, REAL for an article, at once."""
    subject = request.subject() or Article(text="The fetched page.", url=request.url)
    label = Label.SUPPORTED if isinstance(subject, Claim) else Label.REAL
    return Verdict(label=label, method="fake", subject=subject)


# A queue that never fills: a 429 would be right, but would say nothing here. The
# fuzzer's client sends Host: testserver.
service = Service(
    ServiceSettings(queue_size=1_000_000, workers=2, allowed_hosts=("testserver",)),
    store=JobStore(":memory:"),
    executor=fake_executor,
)
app = create_app(service)
schema = schemathesis.openapi.from_dict(
    app.openapi(),
    config=schemathesis.Config.from_dict(
        {
            "generation": {"max-examples": EXAMPLES},
            "seed": 20_241_105,
            "checks": {
                "positive_data_acceptance": {
                    "expected-statuses": ["2xx", "400", "401", "404", "409", "422", "429"]
                }
            },
        }
    ),
)
schema.app = app


@pytest.fixture(scope="module", autouse=True)
def running() -> Iterator[None]:
    service.start()  # the fuzzer's client does not run the app's lifespan
    try:
        yield
    finally:
        service.stop()
        service.store.close()


@schema.parametrize()
@settings(suppress_health_check=[HealthCheck.too_slow])
def test_the_api_keeps_to_its_schema(case) -> None:
    case.call_and_validate()
