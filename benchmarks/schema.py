"""Benchmark the schema interpreter (issue 4).

Prints the compile time of a ~40 KiB declaration, validations per second of a ~5 KiB state
against a realistic 60-field declaration (coerce + clamp transforms + records + enums), and, when
node and npm are available, the same validation in real Zod v4 (installed into a temporary
folder outside the repository) as a ratio. It also measures re-validation with a
``ValidationMemo`` after a one-path change (each state a path copy of the one before, as the
service's commands make them), interleaved with full validations in the same run. The last line
is one JSON object.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from mvu_store.schema import ValidationMemo, compile_schema, validate
from mvu_store.schema.program import MVU_ZOD_URL

NOW_MS = 1_700_000_000_000


def sixty_field_declaration() -> str:
    """Six characters of eight fields, a world object, records and enums: 60 leaf fields."""
    character = """z.object({
    hp: z.coerce.number().transform(v => _.clamp(v, 0, 100)).prefault(100),
    mp: z.coerce.number().transform(v => _.clamp(v, 0, 50)).prefault(50),
    affection: z.coerce.number().transform(v => Math.max(-100, Math.min(100, v))).prefault(0),
    mood: z.enum(['calm', 'happy', 'angry', 'sad']).prefault('calm'),
    location: z.string().prefault(''),
    outfit: z.record(z.enum(['top', 'bottom', 'shoes']), z.string()).prefault({top: '', bottom: '', shoes: ''}),
    titles: z.record(z.string(), z.object({ effect: z.string(), note: z.string() })).prefault({}),
    alive: z.boolean().prefault(true),
  }).prefault({})"""
    names = ["alice", "bob", "carol", "dave", "erin", "frank"]
    people = ",\n  ".join(f"{name}: {character}" for name in names)
    return f"""import {{ registerMvuSchema }} from '{MVU_ZOD_URL}';
const clampGold = v => _.clamp(v, 0, Number.MAX_SAFE_INTEGER);
export const Schema = z.object({{
  world: z.object({{
    day: z.coerce.number().int().min(1).prefault(1),
    time: z.string().prefault('morning'),
    weather: z.enum(['sun', 'rain', 'snow']).prefault('sun'),
    gold: z.coerce.number().transform(clampGold).prefault(0),
    flags: z.record(z.string(), z.boolean()).prefault({{}}),
    log: z.array(z.string()).transform(list => list.slice(-20)).prefault([]),
  }}).prefault({{}}),
  inventory: z.record(z.string(), z.object({{ count: z.coerce.number(), note: z.string().prefault('') }}))
    .transform(items => _.pickBy(items, ({{ count }}) => count > 0)).prefault({{}}),
  quest: z.string().prefault(''),
  chapter: z.coerce.number().int().prefault(1),
  {people},
}});
$(() => {{ registerMvuSchema(Schema); }});
"""


def five_kib_state() -> dict[str, Any]:
    person = {
        "hp": "85", "mp": 70, "affection": 42, "mood": "happy", "location": "the old library by the river",
        "outfit": {"top": "linen shirt", "bottom": "travel trousers", "shoes": "boots"},
        "titles": {"Reader": {"effect": "+1 wisdom", "note": "earned in chapter one"},
                   "Walker": {"effect": "+1 stamina", "note": "crossed the northern pass on foot"}},
        "alive": True,
    }
    state: dict[str, Any] = {
        "world": {"day": "12", "time": "evening", "weather": "rain", "gold": "1250",
                  "flags": {f"flag{i}": i % 2 == 0 for i in range(10)},
                  "log": [f"event number {i} happened in the old town" for i in range(40)]},
        "inventory": {f"item{i}": {"count": i % 4, "note": "a useful thing"} for i in range(16)},
        "quest": "find the missing letters", "chapter": 3,
    }
    for name in ["alice", "bob", "carol", "dave", "erin", "frank"]:
        state[name] = json.loads(json.dumps(person))
    return state


def forty_kib_declaration() -> str:
    """Many helper-built sections, like the largest published cards."""
    sections = []
    for index in range(118):
        sections.append(f"""  section{index}: z.object({{
    value: z.coerce.number().transform(v => _.clamp(v, 0, {index + 10})).prefault(0),
    label: z.string().describe('label of section {index}').prefault('s{index}'),
    kind: z.enum(['a', 'b', 'c']).prefault('a'),
    items: z.record(z.string(), z.object({{ n: z.number(), tag: z.string().optional() }})).prefault({{}}),
  }}).prefault({{}})""")
    body = ",\n".join(sections)
    return f"import {{ registerMvuSchema }} from '{MVU_ZOD_URL}';\nexport const Schema = z.object({{\n{body}\n}});\n" \
           "$(() => { registerMvuSchema(Schema); });\n"


def measure_compile(source: str) -> float:
    from mvu_store.schema import descriptor

    best = float("inf")
    for _ in range(5):
        descriptor._cache.clear()  # measure the real build, not the cache
        start = time.perf_counter()
        compile_schema(source)
        best = min(best, time.perf_counter() - start)
    return best


def measure_validations(source: str, state: dict[str, Any], seconds: float = 2.0) -> dict[str, float]:
    """Full validations and memo re-validations per second, as medians of interleaved rounds.

    ``validations_per_s`` is wall clock, ``cpu_validations_per_s`` per CPU second of this process
    (it does not move when other processes share the machine); both are printed.
    """
    schema = compile_schema(source)
    assert validate(schema, state, now_ms=NOW_MS).ok
    edits = one_path_edits(state, 2000)
    rounds = 5
    full, full_cpu, again = [], [], []
    for _ in range(rounds):
        wall, cpu = _rate(lambda _index: validate(schema, state, now_ms=NOW_MS), seconds / rounds)
        full.append(wall)
        full_cpu.append(cpu)
        memo = ValidationMemo()
        validate(schema, edits[-1], now_ms=NOW_MS, memo=memo)
        again.append(_rate(lambda index, memo=memo: validate(schema, edits[index % len(edits)], now_ms=NOW_MS,
                                                             memo=memo), seconds / rounds)[0])
    return {"full": statistics.median(full), "full_cpu": statistics.median(full_cpu),
            "again": statistics.median(again)}


def _rate(action: Any, seconds: float) -> tuple[float, float]:
    count = 0
    start, cpu_start = time.perf_counter(), time.process_time()
    while time.perf_counter() - start < seconds:
        action(count)
        count += 1
    return count / (time.perf_counter() - start), count / max(time.process_time() - cpu_start, 1e-9)


def one_path_edits(state: dict[str, Any], count: int) -> list[dict[str, Any]]:
    """``count`` states, each the one before with one character's hp changed by a path copy."""
    names = ["alice", "bob", "carol", "dave", "erin", "frank"]
    edits, current = [], state
    for index in range(count):
        name = names[index % len(names)]
        current = {**current, name: {**current[name], "hp": str(index % 100)}}
        edits.append(current)
    return edits


_NODE_RUNNER = """
import * as zod from 'zod';
import _ from 'lodash';
import fs from 'fs';
const [source, state] = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
let registered;
const ready = [];
const body = source.replace(/import[^;]*;/, '').replace(/export const/g, 'const');
new Function('z', '_', '$', 'registerMvuSchema', body)(zod, _, f => ready.push(f), s => { registered = s; });
ready.forEach(f => f());
const schema = zod.z.looseObject(registered.shape);
if (!schema.safeParse(state).success) throw new Error('state does not validate');
let count = 0;
const start = performance.now();
while (performance.now() - start < 2000) { schema.safeParse(state); count++; }
console.log(count / ((performance.now() - start) / 1000));
"""


def measure_zod(source: str, state: dict[str, Any]) -> float | None:
    """Validations/s in real Zod v4, or None when node/npm are missing or offline."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        return None
    with tempfile.TemporaryDirectory(prefix="mvu-zod-bench-") as folder:
        root = Path(folder)
        try:
            subprocess.run(["npm", "init", "-y"], cwd=root, capture_output=True, check=True, timeout=60)
            subprocess.run(["npm", "install", "zod@4", "lodash"], cwd=root, capture_output=True, check=True,
                           timeout=300)
            (root / "bench.mjs").write_text(_NODE_RUNNER)
            (root / "input.json").write_text(json.dumps([source, state]))
            result = subprocess.run(["node", "bench.mjs", "input.json"], cwd=root, capture_output=True, check=True,
                                    text=True, timeout=120)
        except (subprocess.SubprocessError, OSError):
            return None
        return float(result.stdout.strip())


def main() -> None:
    big = forty_kib_declaration()
    source = sixty_field_declaration()
    state = five_kib_state()
    compile_s = measure_compile(big)
    rates = measure_validations(source, state)
    ours, ours_cpu = rates["full"], rates["full_cpu"]
    zod = measure_zod(source, state)
    report = {
        "declaration_bytes": len(big.encode()),
        "compile_ms": round(compile_s * 1000, 2),
        "state_bytes": len(json.dumps(state, ensure_ascii=False).encode()),
        "validations_per_s": round(ours, 1),
        "cpu_validations_per_s": round(ours_cpu, 1),
        "zod_validations_per_s": None if zod is None else round(zod, 1),
        "ratio_to_zod": None if zod is None else round(ours / zod, 4),
        "revalidations_per_s": round(rates["again"], 1),
        "ratio_revalidate_to_full": round(rates["again"] / ours, 2),
    }
    print(f"compile of a {report['declaration_bytes']}-byte declaration: {report['compile_ms']} ms")
    print(f"validations of a {report['state_bytes']}-byte state (60 fields): {report['validations_per_s']}/s "
          f"({report['cpu_validations_per_s']} per CPU second)")
    print(f"real Zod v4 on node: {report['zod_validations_per_s']}/s")
    print(f"re-validations after a one-path change, with a memo: {report['revalidations_per_s']}/s "
          f"({report['ratio_revalidate_to_full']}x a full validation)")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
