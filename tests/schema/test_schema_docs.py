"""The runnable example in docs/schema.md runs and its assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "schema.md"


def test_the_documented_example_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert blocks, "docs/schema.md lost its example"
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), {})  # the doc's own asserts are the test
