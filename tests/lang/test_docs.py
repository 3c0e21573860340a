"""The documentation's examples run as written."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_the_lang_guide_example_runs() -> None:
    text = (DOCS / "lang.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/lang.md", "exec"), {})  # the example asserts its own results
