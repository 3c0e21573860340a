"""Benchmark declarations' regular expressions on RE2 (issue 29).

Two side-by-side measurements in one run:

- hostile: ``/^(a+)+$/.test('a' * n + 'b')``, the textbook catastrophic pattern, through our
  RegExp and through Python's backtracking ``re`` (what a JavaScript engine without a budget
  would do), for growing ``n``: the ratio grows without bound, ours stays flat;
- card work: a global ``replace`` and a global ``match`` over a 10 KiB Chinese text with line
  breaks, through our RegExp and, when node is available, through V8 in the same run.

``--quick`` uses smaller sizes (the smoke test). The last line is one JSON object.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import time
from typing import Any

from mvu_store.js.values import Budget
from mvu_store.schema import string_patterns
from mvu_store.schema.regex import compile_regex

CARD_TEXT = "\n".join(f"第{index}天 勇者 等级{index % 50}级 金币 {index * 37} 枚  状态: 正常" for index in range(250))


def per_call(action: Any, seconds: float) -> float:
    """Seconds per call of ``action``, averaged over about ``seconds`` of calls."""
    calls, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        action()
        calls += 1
    return (time.perf_counter() - start) / calls


def hostile(sizes: list[int]) -> list[dict[str, Any]]:
    rows = []
    backtracking = re.compile(r"^(a+)+$")
    for size in sizes:
        text = "a" * size + "b"
        budget = Budget(fuel=10**9)
        ours = compile_regex("^(a+)+$", "", budget)
        ours_seconds = per_call(lambda: ours.matches(text, budget), 0.05)  # noqa: B023 (read now)
        start = time.perf_counter()
        assert backtracking.match(text) is None
        re_seconds = time.perf_counter() - start
        rows.append({"n": size, "oursUs": round(ours_seconds * 1e6, 1), "backtrackingUs": round(re_seconds * 1e6, 1),
                     "ratio": round(re_seconds / ours_seconds, 1)})
    return rows


NODE_SCRIPT = r"""
const text = process.argv[1];
function perCall(action, seconds) {
  let calls = 0; const start = process.hrtime.bigint();
  while (Number(process.hrtime.bigint() - start) / 1e9 < seconds) { action(); calls += 1; }
  return Number(process.hrtime.bigint() - start) / 1e9 / calls;
}
const replace = perCall(() => text.replace(/\s+/g, ' '), 0.3);
const match = perCall(() => text.match(/(\d+)级/g), 0.3);
console.log(JSON.stringify({ replace, match }));
"""


def card_work(seconds: float) -> dict[str, Any]:
    budget = Budget(fuel=10**12)
    spaces = compile_regex(r"\s+", "g", budget)
    levels = compile_regex(r"(\d+)级", "g", budget)
    replace = string_patterns.replace(every=False)
    ours = {
        "replace": per_call(lambda: replace(budget, CARD_TEXT, [spaces, " "]), seconds),
        "match": per_call(lambda: string_patterns.match(budget, CARD_TEXT, [levels]), seconds),
    }
    figures: dict[str, Any] = {f"{name}OursUs": round(value * 1e6, 1) for name, value in ours.items()}
    node = shutil.which("node")
    if node:
        done = subprocess.run([node, "-e", NODE_SCRIPT, CARD_TEXT], capture_output=True, text=True, check=True,
                              timeout=60)
        v8 = json.loads(done.stdout)
        for name, value in ours.items():
            figures[f"{name}NodeUs"] = round(v8[name] * 1e6, 1)
            figures[f"{name}RatioToNode"] = round(value / v8[name], 1)
    return figures


def main() -> None:
    quick = "--quick" in sys.argv
    rows = hostile([12, 16] if quick else [16, 20, 22, 24])
    for row in rows:
        print(f"/^(a+)+$/ on {row['n']} a's and a b: ours {row['oursUs']} us, backtracking {row['backtrackingUs']} us"
              f" ({row['ratio']}x)")
    work = card_work(0.05 if quick else 0.5)
    print(f"10 KiB card text: replace(/\\s+/g) {work['replaceOursUs']} us, match(/(\\d+)级/g) {work['matchOursUs']} us"
          + (f" (node {work['replaceNodeUs']} / {work['matchNodeUs']} us: {work['replaceRatioToNode']}x and "
             f"{work['matchRatioToNode']}x node's time)" if "replaceNodeUs" in work else " (node not found)"))
    print(json.dumps({"hostile": rows, "cardWork": work}))


if __name__ == "__main__":
    main()
