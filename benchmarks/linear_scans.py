"""The regular expressions issue 31 replaced, against their replacements, on the adversarial text
that made each super-linear. Prints one line per case; the LAST line is JSON.

For each case: the old pattern's time at n and 2n characters (a ratio near 4 is quadratic, near 8
cubic), the new scan's at the same sizes (near 2: linear), the speed-up at 2n, and the new scan's
time at the input's size limit (where the old one would run for hours). The old patterns are
those ``tests/test_linear_scans.py`` keeps as its oracles.

Run (from the repository's root): PYTHONPATH=. .venv/bin/python benchmarks/linear_scans.py
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

from mvu_store.cards.imports import imported_urls
from mvu_store.cards.png import MAX_DECODED_BYTES
from mvu_store.js.numbers import _NUMBER_TEXT
from mvu_store.js.values import MAX_TEXT
from mvu_store.processor.repair import repairs
from mvu_store.prompt import macro_paths
from mvu_store.service.openings import MAX_GREETING_BYTES, _array_blocks_as_patches
from mvu_store.store_host.events import MAX_REPLY_BYTES
from tests.test_linear_scans import OLD_ARRAY_BLOCK, OLD_FENCE_END, OLD_IMPORT, OLD_MACRO, OLD_NUMBER

MACRO_PROMPT_LIMIT = 2 * 1024 * 1024  # a prompt request's body


@dataclass(frozen=True)
class Case:
    name: str
    make: Callable[[int], str]
    old: Callable[[str], object]
    new: Callable[[str], object]
    n: int
    limit: int


def _repair_body(n: int) -> str:
    return '<UpdateVariable>[{"op":"replace","path":"/a","value":1}' + " " * n + "x```</UpdateVariable>"


CASES = (
    Case("script imports", lambda n: "import " * (n // 7), lambda text: list(OLD_IMPORT.finditer(text)),
         lambda text: list(imported_urls(text)), 10_000, MAX_DECODED_BYTES),
    Case("world-book macro", lambda n: "{{format_message_variable::" * (n // 27),
         lambda text: list(OLD_MACRO.finditer(text)), macro_paths, 40_000, MACRO_PROMPT_LIMIT),
    Case("greeting array blocks", lambda n: "<UpdateVariable>[</UpdateVariable>" * (n // 34),
         lambda text: OLD_ARRAY_BLOCK.sub("", text), _array_blocks_as_patches, 40_000, MAX_GREETING_BYTES),
    Case("number text", lambda n: "1" * n + "x", OLD_NUMBER.fullmatch, _NUMBER_TEXT.fullmatch, 2_500, MAX_TEXT - 1),
    Case("reply closing fence", _repair_body, lambda text: OLD_FENCE_END.sub("", text), repairs, 10_000,
         MAX_REPLY_BYTES - 100),
)


def seconds(work: Callable[[str], object], text: str) -> float:
    started = time.perf_counter()
    work(text)
    return time.perf_counter() - started


def main() -> None:
    figures: dict[str, dict[str, float]] = {}
    for case in CASES:
        small, large = case.make(case.n), case.make(2 * case.n)
        old = (seconds(case.old, small), seconds(case.old, large))
        new = (seconds(case.new, small), seconds(case.new, large))
        at_limit = seconds(case.new, case.make(case.limit))
        figures[case.name] = {"n": case.n, "old_s": round(old[1], 4), "new_s": round(new[1], 6),
                              "old_growth": round(old[1] / old[0], 2),
                              "new_growth": round(new[1] / max(new[0], 1e-9), 2),
                              "speedup": round(old[1] / max(new[1], 1e-9)), "new_at_limit_s": round(at_limit, 3),
                              "limit": case.limit}
        print(f"{case.name}: old {old[0]:.3f} s -> {old[1]:.3f} s (x{old[1] / old[0]:.1f} for 2x text); "
              f"new {new[1] * 1000:.2f} ms ({figures[case.name]['speedup']}x faster); "
              f"new at the limit ({case.limit:,} chars): {at_limit:.3f} s", flush=True)
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
