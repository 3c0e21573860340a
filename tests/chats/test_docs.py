"""docs/sillytavern.md's Python example runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "sillytavern.md"


def test_the_python_example_of_the_chat_guide_runs(tmp_path: Path) -> None:
    [block] = re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)
    result = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            check=False)
    assert result.returncode == 0, result.stderr
