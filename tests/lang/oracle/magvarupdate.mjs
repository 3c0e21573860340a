// Loads real MagVarUpdate (and StageDog's mvu_zod helper) from checkouts, for the generators here.
//
// MagVarUpdate (github.com/MagicalAstrogy/MagVarUpdate, checked against master b4281792) and the
// helper (github.com/StageDog/tavern_resource util/mvu_zod.ts, checked against 61e30e9) are not on
// npm: the caller gives the paths of checkouts. Their TypeScript is bundled with esbuild into a
// temporary directory, where npm installs the packages they import; nothing of either enters this
// repository. The host they expect is stubbed: lodash as `_`, YAML, klona, an event bus (`eventOn`,
// `eventEmit`, which MagVarUpdate fires and the helper listens to), silent toasts that count
// errors, macros left as written, the helper's notification switch off.
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const PACKAGES = ['esbuild@0.25', 'lodash@4.17.21', 'mathjs@12', 'yaml@2', 'json5@2', 'klona@2', 'jsonrepair@3',
  'fast-json-patch@3', 'compare-versions@6', 'zod@4.6.7'];

const HOST = `
import _ from 'lodash';
import YAML from 'yaml';
import { klona } from 'klona';
const listeners = new Map();
globalThis.oracleHost = { errors: 0, reset() { listeners.clear(); this.errors = 0; } };
Object.assign(globalThis, {
  _, YAML, klona, substitudeMacros: text => text, SillyTavern: { saveChat() {}, chat: [] },
  toastr: { warning() {}, info() {}, success() {}, error() { globalThis.oracleHost.errors += 1; } },
  eventOn(name, listener) { listeners.set(name, [...(listeners.get(name) ?? []), listener]); },
  async eventEmit(name, ...args) { for (const listener of listeners.get(name) ?? []) await listener(...args); },
});`;
const STORE = "export const useDataStore = () => ({ settings: { 通知: { 变量更新出错: false } } });";

/** {updateVariables, generateSchema, cleanUpMetadata, registerMvuSchema?, host} */
export async function loadMagVarUpdate(magVarUpdate, tavernResource) {
  const dir = mkdtempSync(join(tmpdir(), 'mvu-oracle-'));
  execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', ...PACKAGES], { stdio: 'ignore' });
  const require = createRequire(join(dir, 'package.json'));
  const mvu = resolve(magVarUpdate);
  const helper = tavernResource && resolve(tavernResource);
  const entry = [
    "import './host';",
    "export { updateVariables } from '@/function/update_variables';",
    "export { generateSchema, cleanUpMetadata } from '@/function/schema';",
    helper ? "export { registerMvuSchema } from 'helper/mvu_zod';" : '',
  ].join('\n');
  const stubs = { host: HOST, store: STORE };
  const bundle = await require('esbuild').build({
    stdin: { contents: entry, resolveDir: dir, loader: 'ts' }, bundle: true, write: false, format: 'cjs',
    platform: 'node', nodePaths: [join(dir, 'node_modules')], logLevel: 'error',
    plugins: [{ name: 'host', setup(build) {
      build.onResolve({ filter: /^(\.\/host|@\/store)$/ },
        args => ({ path: args.path === './host' ? 'host' : 'store', namespace: 'stub' }));
      build.onLoad({ filter: /.*/, namespace: 'stub' }, args => ({ contents: stubs[args.path], loader: 'ts', resolveDir: dir }));
      build.onResolve({ filter: /^helper\// }, args => ({ path: join(helper, 'util', args.path.slice(7) + '.ts') }));
      // @util/ is MagVarUpdate's util/ from its sources, the helper's own util/ from the helper's
      build.onResolve({ filter: /^@util\// }, args => ({
        path: join(helper && args.importer.startsWith(helper) ? helper : mvu, 'util', args.path.slice(6) + '.ts'),
      }));
      build.onResolve({ filter: /^@\// }, args => ({ path: join(mvu, 'src', args.path.slice(2) + '.ts') }));
    } }],
  });
  const module = { exports: {} };
  new Function('module', 'exports', 'require', bundle.outputFiles[0].text)(module, module.exports, require);
  return { ...module.exports, host: globalThis.oracleHost };
}

/** The data as MagVarUpdate initialises [initvar] data: the schema from it, `$meta` removed. */
export function initialised(data, generateSchema, cleanUpMetadata) {
  const stat = structuredClone(data);
  const schema = generateSchema(structuredClone(stat));
  cleanUpMetadata(stat);
  return { stat_data: stat, schema, display_data: {}, delta_data: {} };
}
