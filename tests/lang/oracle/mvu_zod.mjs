// Re-asks real MagVarUpdate + StageDog's mvu_zod helper for tests/lang/mvu_zod_parity.json.
//
//   TZ=UTC node tests/lang/oracle/mvu_zod.mjs <MagVarUpdate checkout> <tavern_resource checkout> \
//       tests/lang/mvu_zod_parity.json [--check]
//
// Both are loaded from checkouts as magvarupdate.mjs says, with real zod 4.6.7 and lodash
// (tests/schema/oracle/zod_runner.mjs runs each card's declaration; its helper import is the real
// registerMvuSchema, so the helper's listeners run the commands). For each case: the initial
// data is initialised as [initvar] does, then the helper's initialisation runs (`init_ok` says
// whether it showed no error), then each reply runs through updateVariables from the state the
// one before left. The clock is fixed at NOW_MS (zod_runner.mjs).
import { readFileSync, writeFileSync } from 'node:fs';
import { declare, loadOracle } from '../../schema/oracle/zod_runner.mjs';
import { initialised, loadMagVarUpdate } from './magvarupdate.mjs';

const [checkout, helperCheckout, fixture, ...flags] = process.argv.slice(2);
if (!fixture) throw new Error('usage: node mvu_zod.mjs <MagVarUpdate checkout> <tavern_resource checkout> <fixture> [--check]');
const oracle = loadOracle();
const mvu = await loadMagVarUpdate(checkout, helperCheckout);
console.log = console.info = console.warn = console.error = () => {};

const corpus = JSON.parse(readFileSync(fixture, 'utf8'));
let differing = 0;
for (const entry of corpus.cases) {
  mvu.host.reset();
  await declare(oracle, corpus.schemas[entry.card], { register: schema => mvu.registerMvuSchema(schema) });
  const variables = initialised(entry.initial, mvu.generateSchema, mvu.cleanUpMetadata);
  await globalThis.eventEmit('mag_variable_initialized', variables, 0);
  const found = { init_ok: mvu.host.errors === 0, expected_initial: structuredClone(variables.stat_data), expected: [] };
  for (const reply of entry.replies) {
    await mvu.updateVariables(reply, variables);
    found.expected.push(JSON.parse(JSON.stringify(variables.stat_data)));
  }
  const recorded = { init_ok: entry.init_ok, expected_initial: entry.expected_initial, expected: entry.expected };
  if (JSON.stringify(found) !== JSON.stringify(recorded)) {
    differing += 1;
    process.stderr.write(`${entry.name} differs\n`);
  }
  Object.assign(entry, found);
}
// laid out as the fixture is: one declaration and one case a line
const layout = () => '{"schemas": {\n'
  + Object.entries(corpus.schemas).map(([card, source]) => `${JSON.stringify(card)}: ${JSON.stringify(source)}`).join(',\n')
  + '\n},\n"cases": [\n' + corpus.cases.map(entry => JSON.stringify(entry)).join(',\n') + '\n]}\n';
if (!flags.includes('--check')) writeFileSync(fixture, layout());
process.stderr.write(`${corpus.cases.length} cases, ${differing} differ\n`);
process.exitCode = flags.includes('--check') && differing ? 1 : 0;
