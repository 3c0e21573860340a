// Re-asks real MagVarUpdate for tests/lang/mvu_plain_parity.json (cards without a declaration).
//
//   node tests/lang/oracle/mvu_plain.mjs <MagVarUpdate checkout> tests/lang/mvu_plain_parity.json [--check]
//
// MagVarUpdate (github.com/MagicalAstrogy/MagVarUpdate, checked against master b4281792) is not
// on npm: give the path of a checkout. Its updateVariables and schema helpers are bundled with
// esbuild from that checkout into a temporary directory (nothing of it enters this repository),
// with the packages it imports installed there by npm and the host it expects stubbed: lodash as
// `_`, YAML, silent events and toasts, macros left as written. Each case's initial data is
// initialised as [initvar] does (schema generated, $meta removed), then its reply runs.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const [checkout, fixture, ...flags] = process.argv.slice(2);
if (!checkout || !fixture) throw new Error('usage: node mvu_plain.mjs <MagVarUpdate checkout> <fixture> [--check]');
const dir = mkdtempSync(join(tmpdir(), 'mvu-oracle-'));
execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', 'esbuild@0.25', 'lodash@4.17.21',
  'mathjs@12', 'yaml@2', 'json5@2', 'klona@2', 'jsonrepair@3', 'fast-json-patch@3', 'compare-versions@6', 'zod@4'],
{ stdio: 'ignore' });
const require = createRequire(join(dir, 'package.json'));
const host = `
import _ from 'lodash';
import YAML from 'yaml';
Object.assign(globalThis, { _, YAML, toastr: { warning() {}, error() {}, info() {}, success() {} },
  eventEmit: async () => {}, substitudeMacros: text => text, SillyTavern: { saveChat() {}, chat: [] } });`;
const entry = `import './host';
export { updateVariables } from '@/function/update_variables';
export { generateSchema, cleanUpMetadata } from '@/function/schema';`;
const stubs = { host, entry, store: 'export const useDataStore = () => ({ settings: { 通知: { 变量更新出错: false } } });' };
const root = resolve(checkout);
const bundle = await require('esbuild').build({
  stdin: { contents: entry, resolveDir: dir, loader: 'ts' }, bundle: true, write: false, format: 'cjs', platform: 'node',
  nodePaths: [join(dir, 'node_modules')], logLevel: 'error',
  plugins: [{ name: 'host', setup(build) {
    build.onResolve({ filter: /^(\.\/host|@\/store)$/ }, args => ({ path: args.path === './host' ? 'host' : 'store', namespace: 'stub' }));
    build.onLoad({ filter: /.*/, namespace: 'stub' }, args => ({ contents: stubs[args.path], loader: 'ts', resolveDir: dir }));
    build.onResolve({ filter: /^@\// }, args => ({ path: join(root, 'src', args.path.slice(2) + '.ts') }));
    build.onResolve({ filter: /^@util\// }, args => ({ path: join(root, 'util', args.path.slice(6) + '.ts') }));
  } }],
});
const module = { exports: {} };
new Function('module', 'exports', 'require', bundle.outputFiles[0].text)(module, module.exports, require);
const { updateVariables, generateSchema, cleanUpMetadata } = module.exports;
console.log = console.info = console.warn = console.error = () => {};

const text = readFileSync(fixture, 'utf8');
const cases = JSON.parse(text);
let differing = 0;
for (const entry of cases) {
  const stat = structuredClone(entry.initial);
  const variables = { stat_data: stat, schema: generateSchema(structuredClone(stat)), display_data: {}, delta_data: {} };
  cleanUpMetadata(stat);
  const initial = structuredClone(stat);
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
