// Regenerates tests/schema/regex_oracle.json: what JavaScript (node's own RegExp) answers for
// generated patterns x flags x inputs. tests/schema/test_regex_oracle.py replays every case
// through mvu_store's RegExp on RE2 and asserts the same answers.
//
//   node tests/schema/oracle/regex.mjs            (from the repository root; node 20 or later)
//
// The patterns come from a small grammar walked by a seeded generator (the seed is fixed, so the
// fixture only changes when this file does). Every value is written as JSON with `undefined` as
// {"u": 1}; strings keep lone surrogates as \udXXX escapes (JSON.stringify's well-formed form).
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let seed = 20261206;
const random = () => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed / 2147483648;
};
const pick = (items) => items[Math.floor(random() * items.length)];

const LITERALS = ['a', 'b', 'c', 'A', '1', ' ', '中', '文', '级', '😀', '-', '_', 'ſ', 'K', 'é', '$'];
const ESCAPES = ['\\d', '\\w', '\\s', '\\D', '\\W', '\\S', '\\n', '\\r', '\\t', '\\.', '\\-', '\\/', '\\u4e2d',
  '\\x41', '\\u{1F600}', '\\cJ', '\\0', '\\ud83d', '\\ude00', '\\ud83d\\ude00', '\\u00a0', '\\*', '\\$', '\\k',
  '\\8', '\\12', '\\q', '\\c', '\\x4', '\\u12'];
const CLASSES = ['[a-c]', '[^a]', '[\\d\\s]', '[中-级]', '[😀]', '[^\\n]', '[\\s\\S]', '[]', '[^]', '[\\w-]',
  '[a-]', '[A-Z]', '[^\\w]', '[\\b]', '[\\u4e00-\\u9fa5]', '[\\ud800-\\udbff]', '[\\cJ]', '[\\-a]', '[.]',
  '[b-a]', '[\\d-z]', '[^\\s\\d]', '[\\p{L}]', '[\\x41-\\x43]'];
const ASSERTIONS = ['^', '$', '\\b', '\\B'];
const QUANTIFIERS = ['*', '+', '?', '{2}', '{1,3}', '{0,}', '*?', '+?', '??', '{2,}?', '{1,2}?'];
const RARE = ['(?=a)', '(?!b)', '(?<=a)', '(a)\\1', '\\p{Script=Han}', '\\P{L}', '{', '}', ']', '(', ')', 'a{2,1}',
  '(?<x>a)\\k<x>', '(?i:a)', 'a**', '\\p{Lu}', '+'];

function atom(depth) {
  const roll = random();
  if (roll < 0.35) return pick(LITERALS);
  if (roll < 0.5) return pick(ESCAPES);
  if (roll < 0.62) return pick(CLASSES);
  if (roll < 0.68) return '.';
  if (roll < 0.8 && depth < 3) {
    const body = alternation(depth + 1);
    return pick(['(', '(?:', '(?<g' + depth + Math.floor(random() * 9) + '>']) + body + ')';
  }
  if (roll < 0.86) return pick(ASSERTIONS);
  if (roll < 0.9) return pick(RARE);
  return pick(LITERALS);
}

function sequence(depth) {
  const parts = [];
  const length = 1 + Math.floor(random() * 3);
  for (let index = 0; index < length; index += 1) {
    let part = atom(depth);
    if (random() < 0.3 && !ASSERTIONS.includes(part)) part += pick(QUANTIFIERS);
    parts.push(part);
  }
  return parts.join('');
}

function alternation(depth) {
  return random() < 0.2 ? sequence(depth) + '|' + sequence(depth) : sequence(depth);
}

const FLAGS = ['', '', 'g', 'g', 'i', 'm', 's', 'u', 'y', 'gi', 'gu', 'gy', 'gm', 'ms', 'iu', 'gimsu', 'd', 'dg',
  'gsuy', 'gg', 'x'];
const INPUTS = ['', 'a', 'abc', 'aaa', 'ab ab', 'bca', '中文', '中文abc中级', '😀', 'a😀b', '😀😀a', '\ud83d',
  'x\ude00y', 'a\nb\r\nc', 'A1_b2 c3', ' \u00a0x\ufeff', 'x\u2028y', 'AbC abc', 'ſK sk', '1级 22级', 'a-b-c',
  'é中😀 $a', '\n\n', 'b\nab\r\ra'];
const TEMPLATES = ['[$&]', '$1-$2', '$<g00>$<nope>', '$`|$\'', '$$x$0$00$10$9', '$<', '$'];

function encode(value) {
  if (value === undefined) return { u: 1 };
  if (Array.isArray(value)) return value.map(encode);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, encode(item)]));
  }
  return value;
}

function execRecord(result, regex) {
  if (result === null) return { match: null, lastIndex: regex.lastIndex };
  const record = { match: [...result], index: result.index, groups: result.groups, lastIndex: regex.lastIndex };
  if (result.indices) record.indices = [...result.indices];
  return record;
}

const replacer = (...args) => '<' + args.map((item) => (item !== null && typeof item === 'object'
  ? 'G' + Object.entries(item).map(([key, value]) => key + '=' + String(value)).join(',')
  : String(item))).join('|') + '>';

function attempt(run) {
  try {
    return { ok: encode(run()) };
  } catch (error) {
    return { error: error.name };
  }
}

function runCase(source, flags, input) {
  const make = () => new RegExp(source, flags);
  const ops = {};
  ops.exec = attempt(() => {
    const regex = make();
    const records = [];
    for (const start of [0, 1, 2, 5, -1, NaN, '1', 1.5, 1e20]) {
      regex.lastIndex = start;
      records.push(execRecord(regex.exec(input), regex));
    }
    regex.lastIndex = 0;
    for (let step = 0; step < 3; step += 1) records.push(execRecord(regex.exec(input), regex));
    return records;
  });
  ops.test = attempt(() => { const regex = make(); return [regex.test(input), regex.test(input), regex.lastIndex]; });
  ops.match = attempt(() => { const result = input.match(make()); return result && [...result]; });
  ops.matchAll = attempt(() => [...input.matchAll(make())].map((found) => [[...found], found.index, found.groups]));
  ops.search = attempt(() => input.search(make()));
  ops.replace = attempt(() => TEMPLATES.map((template) => input.replace(make(), template)));
  ops.replaceFn = attempt(() => input.replace(make(), replacer));
  ops.replaceAll = attempt(() => input.replaceAll(make(), replacer));
  ops.split = attempt(() => [input.split(make()), input.split(make(), 2)]);
  return ops;
}

const cases = [];
const seen = new Set();
while (cases.length < 700) {
  const source = alternation(0);
  const flags = pick(FLAGS);
  if (seen.has(source + '/' + flags)) continue;
  seen.add(source + '/' + flags);
  let compiled = null;
  try {
    const regex = new RegExp(source, flags);
    compiled = { source: regex.source, flags: regex.flags, text: String(regex) };
  } catch (error) {
    cases.push({ source, flags, syntaxError: error.name });
    continue;
  }
  const inputs = [];
  while (inputs.length < 4) inputs.push(pick(INPUTS));
  cases.push({ source, flags, compiled, runs: [...new Set(inputs)].map((input) => ({ input, ops: runCase(source, flags, input) })) });
}

// Dense patterns over a tiny alphabet, so that repeated groups, alternations inside them and
// empty iterations actually match (captures of earlier iterations are where engines differ).
function dense(depth) {
  const parts = [];
  const length = 1 + Math.floor(random() * 3);
  for (let index = 0; index < length; index += 1) {
    let part = depth < 3 && random() < 0.45
      ? pick(['(', '(?:']) + dense(depth + 1) + (random() < 0.5 ? '|' + dense(depth + 1) : '') + ')'
      : pick(['a', 'b', 'c', '', 'a*', '[ab]']);
    if (random() < 0.5) part += pick(['*', '+', '?', '{0,2}', '{1,}', '*?', '+?']);
    parts.push(part || 'a');
  }
  return parts.join('');
}
let denseCount = 0;
while (denseCount < 200) {
  const source = dense(0);
  const flags = pick(['', 'g', 'i', 'y', 'gu']);
  if (seen.has(source + '/' + flags)) continue;
  seen.add(source + '/' + flags);
  let compiled;
  try {
    const regex = new RegExp(source, flags);
    compiled = { source: regex.source, flags: regex.flags, text: String(regex) };
  } catch (error) {
    cases.push({ source, flags, syntaxError: error.name });
    denseCount += 1;
    continue;
  }
  const inputs = [];
  for (let index = 0; index < 4; index += 1) {
    let input = '';
    const length = Math.floor(random() * 8);
    for (let char = 0; char < length; char += 1) input += pick(['a', 'b', 'c', 'A']);
    inputs.push(input);
  }
  cases.push({ source, flags, compiled, runs: [...new Set(inputs)].map((input) => ({ input, ops: runCase(source, flags, input) })) });
  denseCount += 1;
}

// Line anchors over texts with every line terminator (\n, \r, U+2028, U+2029) and atoms that
// tell them apart: RE2 knows only \n as a line end, so these go through the line form.
const LINE_ATOMS = ['^', '$', '.', '\\n', '\\r', '[^\\n]', '\\s', 'a', 'b', '\\r?', '.*', '[\\s\\S]', '(a|\\r)',
  '[^a]', '\\u2028', '\\b', '(?:$|b)', '.+?'];
let lineCount = 0;
while (lineCount < 120) {
  let source = '';
  const length = 1 + Math.floor(random() * 4);
  for (let index = 0; index < length; index += 1) source += pick(LINE_ATOMS);
  const flags = pick(['m', 'gm', 'gms', 'gmu', 'gmi', 'gmy']);
  if (seen.has(source + '/' + flags)) continue;
  seen.add(source + '/' + flags);
  const regex = new RegExp(source, flags);
  const inputs = [];
  for (let index = 0; index < 4; index += 1) {
    let input = '';
    const size = Math.floor(random() * 7);
    for (let char = 0; char < size; char += 1) input += pick(['a', 'b', '\n', '\r', '\r\n', '\u2028', '\u2029', '中']);
    inputs.push(input);
  }
  cases.push({ source, flags, compiled: { source: regex.source, flags: regex.flags, text: String(regex) },
    runs: [...new Set(inputs)].map((input) => ({ input, ops: runCase(source, flags, input) })) });
  lineCount += 1;
}

// String patterns: replace / replaceAll / split with a string, the same templates and replacer.
const stringCases = [];
for (const input of INPUTS) {
  for (const pattern of ['', 'a', 'ab', '中', '😀', '\ud83d', '$', ' ']) {
    stringCases.push({
      input, pattern,
      replace: TEMPLATES.map((template) => input.replace(pattern, template)),
      replaceFn: input.replace(pattern, replacer),
      replaceAll: input.replaceAll(pattern, replacer),
      split: [input.split(pattern), input.split(pattern, 2)],
    });
  }
}

const here = dirname(fileURLToPath(import.meta.url));
writeFileSync(join(here, '..', 'regex_oracle.json'),
  JSON.stringify({ node: process.versions.node, templates: TEMPLATES, cases, stringCases }) + '\n');
console.log(`${cases.length} patterns, ${stringCases.length} string cases written`);
