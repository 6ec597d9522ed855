"""schemathesis over the team server's OpenAPI document, shared by tests/test_server_fuzz.py and bench/schemathesis_run.py.

Two runs, each returning the failures it found (empty when the server held):
every operation on its own with generated input, and stateful scenarios that
follow the document's links (create a memory, then get, patch, restore,
delete it and read its history; upload a document, then poll it and its job).
A failure is a 5xx, a status, content type or body the document does not
declare, a created resource that cannot be read, or a deleted one that can.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    ensure_resource_availability,
    response_schema_conformance,
    status_code_conformance,
    use_after_free,
)

import funes
from funes.interfaces.server import create_app
from funes.providers.embed import HashEmbedder

TEAM = "fuzz"
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
STATEFUL_CHECKS = [*CHECKS, ensure_resource_availability, use_after_free]


def open_service(where: str) -> funes.Funes:
    """A service on ``where`` (a SQLite path or a PostgreSQL URL) with one seeded memory in the fuzzed team."""
    service = funes.open(where, embedder=HashEmbedder(32), worker="off")
    service.remember("A seeded memory for the fuzzer", tenant=TEAM)
    return service


def server_schema(service: funes.Funes) -> tuple[Any, str]:
    """The team server over ``service`` as a schemathesis schema, and an admin key of the fuzzed team."""
    key = service.keys.create(TEAM, "admin")[0]
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(service, mcp=False)), key


def _own_team(case: Any, bit: int) -> None:
    # Three cases in four hit the key's own team, so routes get past the team check; the rest check the 404.
    params = case.path_parameters
    if params is not None and "team" in params and bit:
        params["team"] = TEAM


def _message(label: str, error: BaseException) -> str:
    return f"{label}: {type(error).__name__}: {str(error)[:1500]}"


def run_operations(schema: Any, key: str, *, examples: int, seed: int | None = None) -> list[str]:
    """Every operation with ``examples`` generated inputs each; the failures, one line per operation."""
    headers = {"Authorization": f"Bearer {key}"}
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()

        @given(case=operation.as_strategy(), bit=st.integers(0, 3))
        @settings(
            max_examples=examples,
            deadline=None,
            database=None,
            derandomize=seed is None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def check(case: Any, bit: int) -> None:
            _own_team(case, bit)
            case.call_and_validate(headers=headers, checks=CHECKS)

        if seed is not None:
            check = _seeded(check, seed)
        try:
            check()
        except BaseException as error:
            if isinstance(error, KeyboardInterrupt):
                raise
            failures.append(_message(operation.label, error))
    return failures


def _seeded(test: Callable[[], None], seed: int) -> Callable[[], None]:
    from hypothesis import seed as with_seed

    return with_seed(seed)(test)


def run_stateful(schema: Any, key: str, *, scenarios: int, steps: int) -> list[str]:
    """``scenarios`` chains of up to ``steps`` calls that follow the links; the failures found (at most one)."""
    headers = {"Authorization": f"Bearer {key}"}
    base = schema.as_state_machine()

    class Workflow(base):  # type: ignore[misc, valid-type]
        def before_call(self, case: Any) -> None:
            if case.path_parameters is not None and "team" in case.path_parameters:
                case.path_parameters["team"] = TEAM

        def get_call_kwargs(self, case: Any) -> dict[str, Any]:
            return {"headers": headers}

        def validate_response(self, response: Any, case: Any, additional_checks: Any = None, **kwargs: Any) -> None:
            case.validate_response(
                response, checks=STATEFUL_CHECKS, transport_kwargs=kwargs or None, recorder=self.recorder
            )

    try:
        Workflow.run(
            settings=settings(
                max_examples=scenarios,
                stateful_step_count=steps,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
            )
        )
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        return [_message("stateful", error)]
    return []


def links(schema: Any) -> list[tuple[str, str]]:
    """(source operation, link name) of every link in the document."""
    out = []
    for path, operations in schema.raw_schema["paths"].items():
        for method, operation in operations.items():
            for response in operation.get("responses", {}).values():
                for name in response.get("links", {}):
                    out.append((f"{method.upper()} {path}", name))
    return out
