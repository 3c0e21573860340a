// Re-asks real MagVarUpdate for tests/lang/mvu_plain_parity.json (cards without a declaration).
//
//   node tests/lang/oracle/mvu_plain.mjs <MagVarUpdate checkout> tests/lang/mvu_plain_parity.json [--check]
//
// MagVarUpdate is loaded from a checkout as magvarupdate.mjs says. Each case's initial data is
// initialised as [initvar] does (schema generated, $meta removed), then its reply runs.
import { readFileSync, writeFileSync } from 'node:fs';
import { initialised, loadMagVarUpdate } from './magvarupdate.mjs';

const [checkout, fixture, ...flags] = process.argv.slice(2);
if (!checkout || !fixture) throw new Error('usage: node mvu_plain.mjs <MagVarUpdate checkout> <fixture> [--check]');
const { updateVariables, generateSchema, cleanUpMetadata } = await loadMagVarUpdate(checkout);
console.log = console.info = console.warn = console.error = () => {};

const text = readFileSync(fixture, 'utf8');
const cases = JSON.parse(text);
let differing = 0;
for (const entry of cases) {
  const variables = initialised(entry.initial, generateSchema, cleanUpMetadata);
  const initial = structuredClone(variables.stat_data);
  const expected = [];
  for (const reply of entry.replies) {
    await updateVariables(reply, variables);
    expected.push(JSON.parse(JSON.stringify(variables.stat_data)));
  }
  if (JSON.stringify([initial, expected]) !== JSON.stringify([entry.expected_initial, entry.expected])) {
    differing += 1;
    process.stderr.write(`${entry.name} differs\n`);
  }
  Object.assign(entry, { expected_initial: initial, expected });
}
// one case a line, as the fixture is laid out
if (!flags.includes('--check')) writeFileSync(fixture, '[\n' + cases.map(entry => JSON.stringify(entry)).join(',\n') + '\n]\n');
process.stderr.write(`${cases.length} cases, ${differing} differ\n`);
process.exitCode = flags.includes('--check') && differing ? 1 : 0;
