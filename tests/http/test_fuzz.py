"""Schemathesis reads the served OpenAPI document and fuzzes every operation (valid and invalid
inputs, deterministic, bounded): no 5xx, and every refusal is problem+json with a code."""

from __future__ import annotations

import json

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

from tests.http.support import API, Server

# The chat import takes a SillyTavern chat file (application/jsonl), which schemathesis cannot make
# from the document's `binary` schema: lines of JSON objects, or any bytes.
_JSON_LINE = st.dictionaries(st.sampled_from(["user_name", "character_name", "mes", "is_user", "swipes",
                                              "swipe_id", "variables", "chat_metadata"]),
                             st.none() | st.booleans() | st.integers() | st.text(max_size=20), max_size=5)
schemathesis.openapi.media_type("application/jsonl", st.one_of(
    st.lists(_JSON_LINE, max_size=4).map(lambda lines: "\n".join(json.dumps(line) for line in lines).encode()),
    st.binary(max_size=64)))

EXAMPLES = 160
CHECKS = [not_a_server_error, response_schema_conformance, status_code_conformance, content_type_conformance]


def test_fuzz_the_published_openapi(server: Server) -> None:
    schema = schemathesis.openapi.from_url(f"{server.base}{API}/openapi.json", headers=server.auth)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) == 30  # 24, chat import and export, observed request, changes, diff, a turn's reply
    strategy = st.one_of([operation.as_strategy(generation_mode=mode) for operation in operations
                          for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)])
    seen: set[int] = set()

    @settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
              suppress_health_check=list(HealthCheck))
    @given(case=strategy)
    def run(case: schemathesis.Case) -> None:
        response = case.call(base_url=server.base, headers=server.auth, timeout=30)
        case.validate_response(response, checks=CHECKS)
        seen.add(response.status_code)
        if response.status_code >= 400:
            assert list(response.headers["content-type"]) == ["application/problem+json"], response.text
            body = json.loads(response.text)
            assert body["status"] == response.status_code and isinstance(body.get("code"), str), body

    run()
    assert 400 in seen and 200 in seen
