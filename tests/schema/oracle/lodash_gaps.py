"""Lists, per lodash function still in ``LODASH_GAPS``, the oracle cases that differ: the
expression, what lodash 4.17.21 gave and what the interpreter gives. Fix whole causes, then
drop the names that show ``0/N differ`` from ``LODASH_GAPS``.

Usage: ``PYTHONPATH=$PWD python tests/schema/oracle/lodash_gaps.py [name ...] [--show N]``.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parents[1]))

from builtins_replay import cases, replay
from test_schema_builtins_oracle import LODASH_GAPS, _lodash_function, agrees


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help="lodash functions (default: every name in LODASH_GAPS)")
    parser.add_argument("--show", type=int, default=4, help="differing cases printed per function")
    options = parser.parse_args()
    wanted = set(options.names) or set(LODASH_GAPS)
    selected = [case for case in cases() if case[0] == "lodash" and _lodash_function(case[1]) in wanted]
    totals: dict[str, int] = defaultdict(int)
    differing: dict[str, list[tuple[str, Any, Any]]] = defaultdict(list)
    for family, expression, expected, actual in replay(selected):
        name = _lodash_function(expression)
        totals[name] += 1
        if not agrees(family, expected, actual):
            differing[name].append((expression, expected, actual))
    for name in sorted(wanted):
        print(f"== {name}: {len(differing[name])}/{totals[name]} differ")
        for expression, expected, actual in differing[name][:options.show]:
            print(f"   {expression}\n      lodash {expected!r}\n      here   {actual!r}")


if __name__ == "__main__":
    main()
