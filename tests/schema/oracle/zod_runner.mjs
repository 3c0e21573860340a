// Runs card declarations with real Zod 4 under node, the way the schema interpreter runs them.
//
// Shared by the generators in this folder. `loadOracle()` installs zod, lodash and esbuild into a
// temporary directory with npm (or uses ZOD_ORACLE_DIR if it already holds them), then each
// declaration is imported as an ES module: esbuild erases TypeScript, a loader hook maps the
// imports the interpreter allows (`zod`, `lodash`, a `…/mvu_zod.js` URL) to the installed packages
// and a local registerMvuSchema, and `z`, `_`, `$` are globals as in the browser. The root is
// chosen as mvu_store.schema.program picks it (registered, else exported `Schema`/`default`, else
// the single exported schema), and a root object registered through the helper URL becomes
// `z.looseObject(shape)` as the helper does. The clock is fixed at NOW_MS (TZ=UTC is set by
// the caller's environment: `TZ=UTC node …`).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, existsSync, writeFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

export const NOW_MS = 1_700_000_000_000;
export const ZOD_VERSION = '4.6.7';
const HELPER_URL = 'https://testingcf.jsdelivr.net/gh/StageDog/tavern_resource/dist/util/mvu_zod.js';
const PACKAGES = [`zod@${ZOD_VERSION}`, 'lodash@4.17.21', 'esbuild@0.25'];

function installDir() {
  const given = process.env.ZOD_ORACLE_DIR;
  const dir = given || mkdtempSync(join(tmpdir(), 'zod-oracle-'));
  if (!existsSync(join(dir, 'node_modules', 'zod', 'package.json'))) {
    execFileSync('npm', ['install', '--prefix', dir, '--no-audit', '--no-fund', ...PACKAGES], { stdio: 'ignore' });
  }
  return dir;
}

function fixClock() {
  const RealDate = Date;
  function FixedDate(...args) {
    if (!new.target) return new RealDate(NOW_MS).toString(); // `Date()` is the clock's text
    return Reflect.construct(RealDate, args.length ? args : [NOW_MS], new.target);
  }
  FixedDate.prototype = RealDate.prototype;
  FixedDate.now = () => NOW_MS;
  FixedDate.parse = RealDate.parse;
  FixedDate.UTC = RealDate.UTC;
  globalThis.Date = FixedDate;
}

// Zod 4 from a CDN, as browser bundles import it (the interpreter's _ZOD_CDN in program.py).
const ZOD_CDN = /^https:\/\/(?:[\w-]+\.)*(?:jsdelivr\.net\/npm|esm\.sh|unpkg\.com)\/zod(?:@[~^]?4[\w.+-]*)?(?:\/v4(?:\/classic)?)?(?:\/\+esm)?\/?$/;

// The loader hook: module specifiers a declaration may import, mapped to what the interpreter binds.
const HOOKS = `
const map = new Map(Object.entries(JSON.parse(process.env.__ZOD_ORACLE_MAP)));
export async function resolve(specifier, context, next) {
  if (specifier.endsWith('/mvu_zod.js')) {
    const verified = specifier === ${JSON.stringify(HELPER_URL)};
    const body = 'export const registerMvuSchema = s => globalThis.__oracleRegister(s, ' + verified + ');';
    return { url: 'data:text/javascript,' + encodeURIComponent(body), shortCircuit: true };
  }
  if (map.has(specifier)) return { url: map.get(specifier), shortCircuit: true };
  if (new RegExp(${JSON.stringify(ZOD_CDN.source)}).test(specifier)) return { url: map.get('zod'), shortCircuit: true };
  return next(specifier, context);
}`;

export function loadOracle() {
  const dir = installDir();
  const require = createRequire(join(dir, 'package.json'));
  const zodMain = pathToFileURL(require.resolve('zod')).href;
  const shim = join(dir, 'lodash-shim.mjs');
  writeFileSync(shim, `import _ from ${JSON.stringify(pathToFileURL(require.resolve('lodash')).href)};\nexport default _;\n`);
  process.env.__ZOD_ORACLE_MAP = JSON.stringify({
    zod: zodMain, 'zod/v4': zodMain, 'zod/v4/classic': zodMain, lodash: pathToFileURL(shim).href,
  });
  register('data:text/javascript,' + encodeURIComponent(HOOKS));
  const zod = require('zod'); // the module namespace: bundles reach Zod as `z.z.object`
  const { z } = zod;
  const esbuild = require('esbuild');
  globalThis.z = zod;
  globalThis._ = require('lodash');
  console.info = console.log = () => {}; // declarations log; the generators write files
  // A page logs a rejected promise nobody awaited and goes on (an async host hook of a card
  // that reads the host's `Mvu`): node would end the process instead.
  process.on('unhandledRejection', () => {});
  fixClock();
  return { z, esbuild };
}

let serial = 0;

/** The root schema of `source`, or throws what the declaration throws. `register`, if given,
 * is the registerMvuSchema a declaration's helper import calls (the real helper, for one). */
export async function declare(oracle, source, { register } = {}) {
  const { z, esbuild } = oracle;
  const registered = [];
  const ready = [];
  globalThis.__oracleRegister = (schema, verified) => {
    registered.push([schema, verified]);
    register?.(schema);
  };
  globalThis.registerMvuSchema = schema => registered.push([schema, false]);
  const $ = fn => {
    if (typeof fn === 'function') ready.push(fn);
    return { ready: cb => ready.push(cb), prop: () => false }; // the helper reads a checkbox: off
  };
  globalThis.$ = $;
  globalThis.document = {};
  globalThis.waitGlobalInitialized = async () => {};
  // The rest of the Tavern Helper host API bundles call beside registering: inert, as the
  // interpreter's mvu_store/schema/host.py makes it (the page's own effects are not the schema's).
  globalThis.errorCatched = fn => (...args) => fn(...args);
  globalThis.Vue = {};
  globalThis.Pinia = {};
  globalThis.toastr = { success() {}, info() {}, warning() {}, error() {}, clear() {} };
  for (const name of ['eventOn', 'eventOnce', 'eventMakeFirst', 'eventMakeLast']) globalThis[name] = () => ({ stop() {} });
  for (const name of ['eventEmit', 'eventRemoveListener', 'eventClearEvent', 'updateVariablesWith',
    'insertOrAssignVariables', 'insertVariables', 'replaceVariables', 'deleteVariable']) globalThis[name] = () => undefined;
  const code = (await esbuild.transform(source, { loader: 'ts', format: 'esm', target: 'es2022' })).code;
  serial += 1; // a fresh module each time, even for the same text
  const module = await import('data:text/javascript,' + encodeURIComponent(`${code}\n//# ${serial}`));
  for (const fn of ready) fn();
  const isSchema = value => value instanceof z.ZodType;
  if (registered.length) {
    let [root, verified] = registered.at(-1);
    if (typeof root === 'function' && !isSchema(root)) root = root();
    if (verified && root instanceof z.ZodObject) return z.looseObject(root.shape);
    return root;
  }
  for (const name of ['Schema', 'default']) if (isSchema(module[name])) return module[name];
  const exported = Object.values(module).filter(isSchema);
  if (exported.length === 1) return exported[0];
  throw new Error('the declaration neither registers nor exports a schema');
}

function toJson(value) {
  return value === undefined ? null : JSON.parse(JSON.stringify(value));
}

/** Zod's answer for one input, in the fixtures' form. */
export function outcome(schema, input, { messages = false } = {}) {
  let result;
  try {
    result = schema.safeParse(input);
  } catch {
    return { throws: true };
  }
  if (result.success) return { ok: true, value: toJson(result.data) };
  return {
    ok: false,
    issues: result.error.issues.map(issue => (messages ? [issue.code, issue.path, issue.message] : [issue.code, issue.path])),
  };
}
