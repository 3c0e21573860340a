// Recomputes the `expected` results of Zod parity fixtures with real Zod (see zod_runner.mjs).
//
//   TZ=UTC node tests/schema/oracle/replay_zod.mjs tests/schema/zod_forms_parity.json [...]
//
// Each fixture is a list of {name, source, inputs, expected}; the declarations and inputs were
// written or generated once (test_schema_parity.py says how each corpus was made) and are kept,
// only the answers are asked of Zod again. With --check nothing is written and the exit status
// says whether every answer is still the recorded one.
import { readFileSync, writeFileSync } from 'node:fs';
import { declare, loadOracle, outcome } from './zod_runner.mjs';

const args = process.argv.slice(2);
const check = args.includes('--check');
const oracle = loadOracle();
let differing = 0;
for (const file of args.filter(arg => arg !== '--check')) {
  const text = readFileSync(file, 'utf8');
  const cases = JSON.parse(text);
  for (const entry of cases) {
    let expected;
    try {
      const schema = await declare(oracle, entry.source);
      expected = entry.inputs.map(input => outcome(schema, input));
    } catch (error) {
      expected = entry.inputs.map(() => ({ throws: true }));
    }
    if (JSON.stringify(expected) !== JSON.stringify(entry.expected)) {
      differing += 1;
      console.error(`${file}: ${entry.name} differs`);
    }
    entry.expected = expected;
  }
  if (!check) writeFileSync(file, layout(cases, text));
}
process.exitCode = check && differing ? 1 : 0;

// The fixture written as it was laid out (one case a line, or indented; the trailing newline), so
// a regeneration shows only the answers that changed. JavaScript puts integer-like keys first, so
// such keys in inputs come out in the order Zod saw them.
function layout(cases, text) {
  let out;
  if (text.startsWith('[\n{"')) {
    out = '[\n' + cases.map(entry => JSON.stringify(entry)).join(',\n') + '\n]';
  } else {
    const indent = /^\[\n( *)/.exec(text)[1].length;
    // An indent of 0 still puts each item on its own line, as Python's json.dump(indent=0) does.
    out = JSON.stringify(cases, null, indent || '\u0000').replaceAll('\u0000', '');
  }
  return text.endsWith('\n') ? out + '\n' : out;
}
