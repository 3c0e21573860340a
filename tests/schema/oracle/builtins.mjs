// Oracle of the interpreter's built-ins: evaluates generated expressions in node (time zone
// UTC, the interpreter's local time) and writes what JavaScript answers as a JSON fixture.
//
//   node tests/schema/oracle/builtins.mjs > tests/schema/builtins_oracle.json
//
// lodash is installed from npm into a temporary folder (never into the repository). Values
// are written in a tagged form that keeps what JSON cannot: undefined, NaN, ±Infinity, -0,
// array holes, dates and thrown errors. tests/schema/test_schema_builtins_oracle.py replays
// every case through the interpreter.
import { execSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

process.env.TZ = 'UTC';
const LODASH_VERSION = '4.17.21';
const folder = mkdtempSync(join(tmpdir(), 'mvu-oracle-'));
execSync(`npm install --silent --no-audit --no-fund lodash@${LODASH_VERSION}`, { cwd: folder, stdio: 'ignore' });
const _ = createRequire(join(folder, 'index.js'))('lodash');

function enc(value) {
  if (value === undefined) return { $: 'undefined' };
  if (typeof value === 'number') {
    if (Number.isNaN(value)) return { $: 'NaN' };
    if (value === Infinity) return { $: 'Infinity' };
    if (value === -Infinity) return { $: '-Infinity' };
    if (Object.is(value, -0)) return { $: '-0' };
    return value;
  }
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return value;
  if (typeof value === 'function') return { $: 'function' };
  if (value instanceof Date) return { $: 'date', time: enc(value.getTime()) };
  if (Array.isArray(value)) {
    const out = [];
    for (let index = 0; index < value.length; index++) out.push(index in value ? enc(value[index]) : { $: 'hole' });
    return out;
  }
  return { $: 'object', entries: Object.keys(value).map(key => [key, enc(value[key])]) };
}

function run(expression) {
  try {
    return enc(new Function('_', `return (${expression});`)(_));
  } catch (error) {
    return { $: 'throw', name: error.name };
  }
}

const cases = [];
const add = (family, expression) => cases.push([family, expression]);
const cross = (xs, ys) => xs.flatMap(x => ys.map(y => [x, y]));

// -- sample values (JavaScript source texts) ---------------------------------------------------
const NUMBERS = ['0', '-0', '1', '-1', '1.5', '-1.5', '0.1', '0.5', '2.5', '-2.5', '0.125', '1e21', '1e-7', '123.456',
  'NaN', 'Infinity', '-Infinity', '9007199254740993', '1.7976931348623157e308', '5e-324', '255', '0.000001',
  '1234.5678', '-0.0001', '3', '1e100', '123456789012', '0.1 + 0.2', '1 / 3', '-1e-10', '4.35', '1.005', '99.995'];
const INTS = ['undefined', '0', '1', '-1', '2', '3', '5', '10', 'NaN', 'Infinity', '-Infinity', '1.7', '-2.5', "'2'", '-0',
  'null', 'true', '100'];
const STRINGS = ["''", "'abc'", "'  Hello World  '", "'\\u{1F600}a\\u{1F600}'", "'a,b,,c'", "'ß'", "'\\u00a0x\\t\\n'", "'12px'",
  "'0x1f'", "' 42 '", "'1e3'", "'中文字符串'", "'aXbXcX'", "'\\uD83D'", "'Straße İ ǅ'", "'-0'", "'  '", "'Infinity'",
  "'0b101'", "'.5'", "'5.'", "'1_000'", "'\\uFEFF7'"];
const TEXT_ARGS = ["undefined", "''", "'a'", "'b'", "'X'", "'abc'", "'\\u{1F600}'", "'xy'", "' '", '1', 'null', "'中'"];
const ANY = [...NUMBERS.slice(0, 12), ...STRINGS.slice(0, 8), 'null', 'undefined', 'true', 'false', '[]', '[1, 2]',
  '[null]', '[[1, [2]], 3]', '{}', "{a: 1, b: 'x'}", "{b: 1, a: [1, {c: 2}], 2: 'two', 1: 'one'}", "['a', undefined, null]"];

// -- values: ToString, ToNumber, truthiness, equality, typeof ------------------------------------
for (const value of [...NUMBERS, ...STRINGS, ...ANY]) {
  add('values', `String(${value})`);
  add('values', `Number(${value})`);
  add('values', `Boolean(${value})`);
  add('values', `typeof (${value})`);
  add('values', `\`\${${value}}\``);
}
for (const [left, right] of cross(['0', '-0', '1', 'NaN', "''", "'1'", "'0'", 'null', 'undefined', 'true', 'false', "' '"],
  ['0', '-0', '1', 'NaN', "''", "'1'", 'null', 'undefined', 'true', 'false'])) {
  add('values', `(${left}) == (${right})`);
  add('values', `(${left}) === (${right})`);
  add('values', `(${left}) < (${right})`);
  add('values', `(${left}) + (${right})`);
}

// -- Number -------------------------------------------------------------------------------------
for (const value of NUMBERS) {
  for (const digits of ['undefined', '0', '1', '2', '5', '10', '20']) add('number', `(${value}).toFixed(${digits})`);
  for (const digits of ['undefined', '1', '2', '3', '6', '12', '21']) add('number', `(${value}).toPrecision(${digits})`);
  for (const digits of ['undefined', '0', '1', '3', '10']) add('number', `(${value}).toExponential(${digits})`);
  for (const radix of ['undefined', '2', '3', '8', '10', '16', '36']) add('number', `(${value}).toString(${radix})`);
  for (const fn of ['isInteger', 'isSafeInteger', 'isFinite', 'isNaN', 'parseFloat', 'parseInt'])
    add('number', `Number.${fn}(${value})`);
  for (const fn of ['isNaN', 'isFinite', 'parseFloat', 'parseInt']) add('number', `${fn}(${value})`);
  add('number', `(${value}).valueOf()`);
}
for (const text of [...STRINGS, "'  -12.5e1xyz'", "'0x'", "'-0x1F'", "'z'", "'123abc'", "'  +.5e-3'", "'Infinityx'", "'08'"]) {
  for (const fn of ['parseFloat', 'parseInt', 'Number']) add('number', `${fn}(${text})`);
  for (const radix of ['2', '8', '16', '36', '37', '1', '0']) add('number', `parseInt(${text}, ${radix})`);
}
for (const bad of ['-1', '101', 'NaN']) add('number', `(1.5).toFixed(${bad})`);
for (const bad of ['0', '101']) add('number', `(1.5).toPrecision(${bad})`);
for (const bad of ['1', '37']) add('number', `(1.5).toString(${bad})`);
for (const name of ['MAX_SAFE_INTEGER', 'MIN_SAFE_INTEGER', 'MAX_VALUE', 'MIN_VALUE', 'EPSILON', 'POSITIVE_INFINITY',
  'NEGATIVE_INFINITY', 'NaN']) add('number', `Number.${name}`);

// -- Math ---------------------------------------------------------------------------------------
const UNARY = ['abs', 'acos', 'acosh', 'asin', 'asinh', 'atan', 'atanh', 'cbrt', 'ceil', 'clz32', 'cos', 'cosh', 'exp',
  'expm1', 'floor', 'fround', 'log', 'log10', 'log1p', 'log2', 'round', 'sign', 'sin', 'sinh', 'sqrt', 'tan', 'tanh',
  'trunc'];
const MATH_ARGS = [...NUMBERS, "'3'", 'null', 'undefined', 'true', '-0.5', '0.49999999999999994', '-4.5', '2 ** 31', '27',
  '-8', '0.7', '1e-300'];
for (const fn of UNARY) for (const value of MATH_ARGS) add('math', `Math.${fn}(${value})`);
for (const fn of ['atan2', 'pow', 'imul', 'max', 'min', 'hypot'])
  for (const [a, b] of cross(['0', '-0', '2', '-2', '0.5', 'NaN', 'Infinity', '-Infinity', '3', "'4'"],
    ['0', '-0', '2', '-3', '0.5', 'NaN', 'Infinity', '-Infinity', 'undefined'])) add('math', `Math.${fn}(${a}, ${b})`);
for (const call of ['Math.max()', 'Math.min()', 'Math.hypot()', 'Math.max(1, 2, 3, NaN)', 'Math.min(-0, 0)',
  'Math.max(-0, 0)', 'Math.hypot(3, 4, 12)', 'Math.max(...[1, 5, 3])']) add('math', call);
for (const name of ['PI', 'E', 'LN2', 'LN10', 'LOG2E', 'LOG10E', 'SQRT1_2', 'SQRT2']) add('math', `Math.${name}`);

// -- String.prototype (the regular-expression methods have their own oracle) -------------------
for (const text of STRINGS) {
  for (const fn of ['trim', 'trimStart', 'trimEnd', 'toLowerCase', 'toUpperCase', 'toLocaleLowerCase',
    'toLocaleUpperCase', 'toString', 'valueOf', 'isWellFormed', 'toWellFormed', 'normalize']) add('string', `${text}.${fn}()`);
  add('string', `${text}.length`);
  add('string', `[...${text}]`);
  add('string', `Array.from(${text})`);
  for (const index of INTS) {
    for (const fn of ['at', 'charAt', 'charCodeAt', 'codePointAt', 'repeat']) add('string', `${text}.${fn}(${index})`);
    for (const fn of ['slice', 'substring', 'substr']) {
      add('string', `${text}.${fn}(${index})`);
      add('string', `${text}.${fn}(${index}, 3)`);
      add('string', `${text}.${fn}(-3, ${index})`);
    }
    for (const fn of ['padStart', 'padEnd']) {
      add('string', `${text}.${fn}(${index})`);
      add('string', `${text}.${fn}(${index === 'undefined' ? 8 : index} + 6, 'xy')`);
      add('string', `${text}.${fn}(20, '\\u{1F600}')`);
    }
    add('string', `${text}[${index}]`);
  }
  for (const search of TEXT_ARGS) {
    for (const fn of ['includes', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf', 'localeCompare', 'concat'])
      add('string', `${text}.${fn}(${search})`);
    for (const position of ['1', '-1', '100', 'NaN'])
      for (const fn of ['includes', 'startsWith', 'endsWith', 'indexOf', 'lastIndexOf'])
        add('string', `${text}.${fn}(${search}, ${position})`);
  }
}
for (const form of ["'NFC'", "'NFD'", "'NFKC'", "'NFKD'", "'nfc'"]) add('string', `'e\\u0301 ﬁ Å'.normalize(${form})`);
for (const call of ["String.fromCharCode(72, 105, 0xD83D, 0xDE00)", "String.fromCharCode(65.9, -1, 65536 + 66)",
  "String.fromCodePoint(128512, 20013)", "String.fromCodePoint(-1)", "String.fromCodePoint(1.5)", "'a'.concat(1, null, [2, 3])",
  "['b', 'a', 'C', 'ä', '10', '9'].sort((x, y) => x.localeCompare(y))", "'abc'.at()", "'abc'.repeat(-1)",
  "'abc'.repeat(Infinity)", "'abc'.normalize('bad')"]) add('string', call);

// -- Array.prototype ----------------------------------------------------------------------------
const ARRAYS = ['[]', '[1, 2, 3]', '[3, 1, 10, 2, -0, 0]', "['b', 'a', 'C', 'a']", '[1, [2, [3, [4]]], 5]',
  "[null, undefined, NaN, 0, '', false]", "[{n: 2}, {n: 1}, {n: 2, m: 1}]", '[1, 2, 3, 4, 5, 6, 7, 8]',
  "[1, '1', true, [1], {}]", '[5]'];
const CALLBACKS = ['x => x', '(x, i) => i', "x => typeof x === 'number'", 'x => [x, x]', '(x, i, a) => a.length',
  "x => typeof x === 'number' ? x * 2 : x", "x => typeof x === 'number' && x > 2"];
for (const array of ARRAYS) {
  for (const fn of ['toString', 'join', 'toReversed', 'toSorted', 'flat', 'reverse', 'sort', 'pop', 'shift'])
    add('array', `${array}.${fn}()`);
  for (const fn of ['keys', 'values', 'entries']) add('array', `[...${array}.${fn}()]`);
  add('array', `${array}.length`);
  for (const separator of ["'-'", "''", 'undefined', 'null', "', '"]) add('array', `${array}.join(${separator})`);
  for (const depth of ['0', '1', '2', 'Infinity', '-1']) add('array', `${array}.flat(${depth})`);
  for (const index of INTS) {
    add('array', `${array}.at(${index})`);
    add('array', `${array}.slice(${index})`);
    add('array', `${array}.slice(1, ${index})`);
    add('array', `((a) => [a.splice(${index}, 2), a])(${array})`);
    add('array', `((a) => [a.splice(1, ${index}, 'x', 'y'), a])(${array})`);
    add('array', `${array}.toSpliced(${index}, 1)`);
    add('array', `((a) => [a.fill(9, ${index}), a])(${array})`);
    add('array', `((a) => a.copyWithin(${index}, 1))(${array})`);
    add('array', `${array}[${index}]`);
  }
  for (const index of ['0', '1', '-1', '2', '10']) add('array', `${array}.with(${index}, 'w')`);
  for (const item of ['1', "'1'", 'NaN', '-0', 'undefined', 'null', "'a'", '2', '[1]']) {
    for (const fn of ['includes', 'indexOf', 'lastIndexOf']) {
      add('array', `${array}.${fn}(${item})`);
      add('array', `${array}.${fn}(${item}, -2)`);
    }
    add('array', `((a) => [a.push(${item}), a])(${array})`);
    add('array', `((a) => [a.unshift(${item}, 0), a])(${array})`);
    add('array', `${array}.concat(${item}, [${item}], [[${item}]])`);
  }
  for (const callback of CALLBACKS) {
    for (const fn of ['map', 'filter', 'find', 'findIndex', 'findLast', 'findLastIndex', 'some', 'every', 'flatMap'])
      add('array', `${array}.${fn}(${callback})`);
    add('array', `((out) => { ${array}.forEach((x, i) => out.push([x, i])); return out; })([])`);
  }
  // S-7: objects never convert implicitly, so arithmetic callbacks only see primitives
  const primitives = !/[{[]/.test(array.slice(1, -1));
  if (!primitives) continue;
  add('array', `${array}.reduce((a, x) => a + x)`);
  add('array', `${array}.reduce((a, x, i) => a + i, 0)`);
  add('array', `${array}.reduceRight((a, x) => a + ',' + x)`);
  add('array', `${array}.reduceRight((a, x, i) => [...a, i], [])`);
  add('array', `${array}.sort((a, b) => b - a)`);
  add('array', `${array}.toSorted((a, b) => (a > b) - (a < b))`);
}
for (const call of ['Array.isArray([])', 'Array.isArray({})', "Array.isArray('a')", 'Array.of(1, 2)', 'Array.of(7)',
  'Array.from({length: 3}, (_, i) => i * i)', 'Array.from([1, 2], x => x + 1)', 'Array.from({length: 2})',
  "Array.from('a\\u{1F600}')", 'Array(3).fill(0)', 'new Array(2, 3)', 'Array.from(new Set([1, 1, 2]))',
  '[1, , 3]', '[1, , 3].length', '[, 1].includes(undefined)', '[1, , 3].join()',
  'Array(3).join("-")', '[1, 2, 3].at(-1)', '[[1, 2], [3]].flat().length', '[3, 20, 100].sort()',
  '[undefined, 3, null, 1].sort()', "['10', 9, '8', 1].sort()", '[1, 2, 3].includes(2, 2)', '[NaN].indexOf(NaN)',
  '[NaN].includes(NaN)', '[-0].includes(0)', '[0].indexOf(-0)']) add('array', call);

// -- Object's static functions ------------------------------------------------------------------
const OBJECTS = ['{}', "{a: 1, b: 'x'}", "{b: 1, a: [1, {c: 2}], 2: 'two', 1: 'one', '-1': 'neg', '01': 'lead'}",
  '[1, 2]', "'ab'", "{x: undefined, y: null}", '{4294967295: 1, 4294967294: 2, 10: 3}'];
for (const object of OBJECTS) {
  for (const fn of ['keys', 'values', 'entries', 'getOwnPropertyNames', 'isFrozen', 'isSealed', 'isExtensible'])
    add('object', `Object.${fn}(${object})`);
  add('object', `Object.assign({}, ${object})`);
  add('object', `Object.assign({z: 0, a: 9}, ${object}, {q: 1})`);
  add('object', `({...${object}})`);
  add('object', `Object.fromEntries(Object.entries(${object}))`);
  for (const key of ["'a'", "'1'", '1', "'length'", "'z'", "'x'"]) {
    add('object', `Object.hasOwn(${object}, ${key})`);
    add('object', `Object.prototype.hasOwnProperty.call(${object}, ${key})`);
    if (object.startsWith('{')) add('object', `${key} in ${object}`);
  }
}
for (const [a, b] of cross(['0', '-0', 'NaN', "'a'", '1', 'null', 'undefined'], ['0', '-0', 'NaN', "'a'", '1', 'null']))
  add('object', `Object.is(${a}, ${b})`);
for (const call of ["Object.fromEntries([['a', 1], ['b', 2], ['a', 3]])", "Object.fromEntries([[1, 'x']])",
  "Object.entries({b: 2, a: 1}).map(([k, v]) => k + v)", 'Object.keys(Object.freeze({a: 1}))', 'Object.freeze([1, 2])',
  'Object.values("ab")', 'Object.keys(5)', 'Object.keys(null)']) add('object', call);

// -- JSON ---------------------------------------------------------------------------------------
const JSON_VALUES = [...ANY, "{a: undefined, b: () => 1, c: NaN, d: -0, e: Infinity}", "[undefined, () => 1, NaN]",
  "'\\u2028\\uD800 \"quote\" \\\\ \\n \\u0007'", "{date: new Date(0)}", 'new Date(NaN)', "{nested: {deep: [1, {x: [2]}]}}",
  '1e21', '1e-7', '-0', "{'': 1, ' ': 2}"];
for (const value of JSON_VALUES) {
  add('json', `JSON.stringify(${value})`);
  for (const space of ['2', "'\\t'", "'--'", '0', '20', "'abcdefghijklmnop'", '-1', "''"])
    add('json', `JSON.stringify(${value}, null, ${space})`);
  add('json', `JSON.stringify(${value}, (k, v) => typeof v === 'number' ? v * 10 : v)`);
  add('json', `JSON.stringify(${value}, ['a', 'b', 'nested', 'deep'])`);
  add('json', `JSON.parse(JSON.stringify(${value}) ?? 'null')`);
}
for (const text of ["'1'", "'-0'", "' [1, 2] '", "'{\"a\": 1, \"a\": 2}'", "'{\"__proto__\": 1}'", "'\"\\\\ud83d\\\\ude00\"'",
  "'1e400'", "'[1,]'", "'{a: 1}'", "''", "'nul'", "'\"\\t\"'", "'123456789012345678901234567890'", "'0.1e1'", "'01'",
  "'{\"b\": 1, \"2\": 2, \"1\": 1}'", "'true '", "'[[[[]]]]'", "'\"\\\\u00e9\"'"]) {
  add('json', `JSON.parse(${text})`);
  add('json', `JSON.parse(${text}, (k, v) => typeof v === 'number' ? v + 1 : v)`);
}

// -- Date ---------------------------------------------------------------------------------------
const DATE_ARGS = ['0', '1748822400000', '-1', '8.64e15', '8.64e15 + 1', 'NaN', "'2025-06-02'", "'2025-06-02T10:30:00'",
  "'2025-06-02T10:30:00.123+08:00'", "'June 2, 2025 10:30'", "'2025/6/2 10:30'", "'6/2/2025'", "'invalid'", "'2025-02-30'",
  "'Mon, 02 Jun 2025 10:30:00 GMT'", "'+275760-09-13T00:00:00.000Z'", "'-000001-01-01T00:00:00Z'", "'2024-02-29T23:59:59.999Z'",
  "'1969-12-31T23:59:59.999Z'", "'2025-06-02 10:30:00.5'", '2025, 5, 2', '2025, 0, 31, 25, 61, 61, 1001', '99, 11', '0, 0',
  '2025, 13, 1', '2025, -1, 1', "'2025', '5'", '1e20', '-62198755200000', "'0001-01-01'"];
const GETTERS = ['getTime', 'valueOf', 'getFullYear', 'getMonth', 'getDate', 'getDay', 'getHours', 'getMinutes',
  'getSeconds', 'getMilliseconds', 'getUTCFullYear', 'getUTCMonth', 'getUTCDate', 'getUTCDay', 'getUTCHours',
  'getUTCMinutes', 'getUTCSeconds', 'getUTCMilliseconds', 'getTimezoneOffset', 'toISOString', 'toJSON', 'toString',
  'toUTCString', 'toDateString', 'toTimeString', 'toLocaleString', 'toLocaleDateString', 'toLocaleTimeString', 'getYear',
  'toGMTString'];
for (const args of DATE_ARGS) {
  for (const getter of GETTERS) add('date', `new Date(${args}).${getter}()`);
  if (args.startsWith("'") && !args.includes(',')) add('date', `Date.parse(${args})`);
  add('date', `Date.UTC(${args})`);
  add('date', `+new Date(${args})`);
  add('date', `JSON.stringify({d: new Date(${args})})`);
  add('date', `new Date(new Date(${args})).getTime()`);
}
const SETTERS = [['setFullYear', ['2020', '2020, 1, 29', 'NaN', '275761']], ['setMonth', ['0', '13', '-1', '1, 31']],
  ['setDate', ['0', '31', '-1', '100']], ['setHours', ['0', '25', '-1', '1, 2, 3, 4']], ['setMinutes', ['61', '-1', '1, 2']],
  ['setSeconds', ['61', '1.9', '-1']], ['setMilliseconds', ['1000', '-1', "'5'"]], ['setTime', ['0', 'NaN', '8.64e15 + 1', "'7'"]]];
for (const base of ['0', '1748822400123', 'NaN', "'2024-02-29T12:00:00Z'"])
  for (const [setter, values] of SETTERS)
    for (const value of values)
      for (const utc of setter === 'setTime' ? [''] : ['', 'UTC']) {
        const name = utc ? setter.replace('set', 'setUTC') : setter;
        add('date', `((d) => [d.${name}(${value}), d.getTime()])(new Date(${base}))`);
      }
const LOCALES = ['undefined', "'en-US'", "'zh-CN'", "'en'", "'zh'"];
const LOCALE_OPTIONS = ['undefined', "{timeZone: 'UTC'}", '{hour12: false}', "{year: 'numeric', month: 'long', day: 'numeric'}",
  "{year: 'numeric', month: '2-digit', day: '2-digit'}", "{hour: '2-digit', minute: '2-digit'}",
  "{weekday: 'long', year: 'numeric', month: 'short', day: 'numeric'}", "{month: 'short', day: 'numeric'}",
  "{hour: 'numeric', minute: '2-digit', hour12: true}", "{timeZone: 'Asia/Shanghai'}", "{dateStyle: 'medium'}",
  "{year: 'numeric', month: 'numeric', day: 'numeric', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false}"];
for (const time of ['0', '1748859000123', '1748822400000', '-1', '1700000000000', '1735732799000', '1720000000000'])
  for (const locale of LOCALES)
    for (const options of LOCALE_OPTIONS)
      for (const fn of ['toLocaleString', 'toLocaleDateString', 'toLocaleTimeString'])
        add('date', `new Date(${time}).${fn}(${locale}, ${options})`);
add('date', 'new Date(NaN).toLocaleString()');
add('date', 'new Date(NaN).toISOString()');
add('date', 'new Date(2025, 5, 2) - new Date(2025, 5, 1)');
add('date', 'new Date(0) < new Date(1)');
add('date', "new Date(0) + ''");

// -- lodash (pure functions; the clock, randomness and function machinery are refused) ----------
const L_COLLECTIONS = ['[]', '[1, 2, 3, 4]', "[3, 1, 2, 1, null, 'a']", "{a: 1, b: 2, c: 3}", "[{n: 'x', v: 2}, {n: 'y', v: 1}, {n: 'x', v: 3}]",
  "{b: {v: 2}, a: {v: 1}}", "'abc'", 'null', "[[1, 2], [3, [4, [5]]]]", '[0, -0, NaN, NaN, 1]'];
const L_ITERATEES = ['undefined', 'x => x', "'v'", "{n: 'x'}", "['n', 'x']", 'x => typeof x === "number" && x > 1',
  '(x, k) => k'];
const COLLECTION_FNS = ['map', 'filter', 'reject', 'find', 'findLast', 'some', 'every', 'groupBy', 'keyBy', 'countBy',
  'partition', 'sortBy', 'orderBy', 'uniqBy', 'sumBy', 'maxBy', 'minBy', 'meanBy', 'flatMap', 'flatMapDeep', 'mapValues',
  'mapKeys', 'pickBy', 'omitBy', 'findKey', 'findLastKey', 'filter', 'findIndex', 'findLastIndex', 'dropWhile',
  'dropRightWhile', 'takeWhile', 'takeRightWhile', 'remove', 'forEach', 'forOwn', 'forIn', 'each', 'forEachRight',
  'forOwnRight', 'transform', 'invertBy'];
for (const fn of COLLECTION_FNS)
  for (const [collection, iteratee] of cross(L_COLLECTIONS, L_ITERATEES)) {
    if (['forEach', 'forOwn', 'forIn', 'each', 'forEachRight', 'forOwnRight'].includes(fn))
      add('lodash', `((out) => [_.${fn}(${collection}, (v, k) => { out.push([k, v]); }), out])([])`);
    else if (fn === 'transform') add('lodash', `_.transform(${collection}, (acc, v, k) => { acc.push(k); }, [])`);
    else add('lodash', `_.${fn}(${collection}, ${iteratee})`);
  }
const UNARY_LODASH = ['size', 'isEmpty', 'keys', 'values', 'toPairs', 'entries', 'first', 'head', 'last', 'initial', 'tail',
  'compact', 'flatten', 'flattenDeep', 'uniq', 'sortedUniq', 'reverse', 'sum', 'mean', 'max', 'min', 'clone', 'cloneDeep',
  'toArray', 'fromPairs', 'invert', 'isArray', 'isObject', 'isPlainObject', 'isObjectLike', 'isString', 'isNumber',
  'isBoolean', 'isNil', 'isNull', 'isUndefined', 'isNaN', 'isFinite', 'isInteger', 'isSafeInteger', 'isArrayLike',
  'isFunction', 'isDate', 'isRegExp', 'isError', 'isLength', 'isSymbol', 'toNumber', 'toInteger', 'toFinite',
  'toSafeInteger', 'toLength', 'toString', 'castArray', 'identity', 'unzip', 'zip', 'shuffle', 'sample', 'keysIn',
  'valuesIn', 'toPairsIn', 'functions', 'isMap', 'isSet', 'isArguments', 'isBuffer', 'isTypedArray', 'isElement',
  'isEqual', 'isNative', 'lowerCase', 'upperCase', 'camelCase', 'kebabCase', 'snakeCase', 'startCase', 'capitalize',
  'upperFirst', 'lowerFirst', 'escape', 'unescape', 'escapeRegExp', 'deburr', 'words', 'trim', 'trimStart', 'trimEnd',
  'toLower', 'toUpper', 'noop', 'stubArray', 'stubObject', 'stubString', 'stubTrue', 'stubFalse', 'negate', 'sortedUniq'];
for (const fn of UNARY_LODASH) for (const value of [...L_COLLECTIONS, ...NUMBERS.slice(0, 16), ...STRINGS.slice(0, 12),
  "'fooBar-baz_qux'", "'  Hello WORLD déjà vu  '", "'<a href=\"x\">&amp;</a>'", 'true', 'undefined'])
  if (fn !== 'shuffle' && fn !== 'sample' && fn !== 'negate' && fn !== 'functions') add('lodash', `_.${fn}(${value})`);
const NUMERIC_LODASH = [['clamp', 3], ['inRange', 3], ['add', 2], ['subtract', 2], ['multiply', 2], ['divide', 2],
  ['round', 2], ['floor', 2], ['ceil', 2], ['random', 0], ['range', 3], ['rangeRight', 3], ['times', 1],
  ['gt', 2], ['gte', 2], ['lt', 2], ['lte', 2], ['eq', 2], ['max', 1], ['min', 1], ['defaultTo', 2]];
const NUM_ARGS = ['undefined', '0', '-0', '1', '-1', '2.5', '-2.5', '5', '10', '1.005', '4.006', 'NaN', 'Infinity', "'3'", 'null', '-7'];
for (const [fn, arity] of NUMERIC_LODASH) {
  if (fn === 'random') continue;
  for (const a of NUM_ARGS) for (const b of arity > 1 ? NUM_ARGS : ['undefined']) {
    if (arity === 3) {
      for (const c of ['undefined', '3', '-3', '0.5']) add('lodash', `_.${fn}(${a}, ${b}, ${c})`);
    } else if (fn === 'times') add('lodash', `_.times(${a}, i => i * 2)`);
    else add('lodash', arity === 1 ? `_.${fn}(${a})` : `_.${fn}(${a}, ${b})`);
  }
}
const PATH_OBJECTS = ["{a: {b: [{c: 3}, 4]}, 'a.b': 5, x: null}", '[[1, {k: 2}]]', '{}', 'null'];
const PATHS = ["'a.b[0].c'", "'a.b.1'", "['a', 'b', '0', 'c']", "'a.b'", "['a.b']", "'x.y'", "'0[1].k'", "'[0][1].k'", "''",
  "'a[\"b\"]'", 'undefined', "'a.b.length'", "'x'", "'a.b[5]'"];
for (const [object, path] of cross(PATH_OBJECTS, PATHS)) {
  add('lodash', `_.get(${object}, ${path})`);
  add('lodash', `_.get(${object}, ${path}, 'dflt')`);
  add('lodash', `_.has(${object}, ${path})`);
  add('lodash', `_.hasIn(${object}, ${path})`);
  add('lodash', `_.result(${object}, ${path}, 'dflt')`);
  add('lodash', `_.at(${object}, [${path}])`);
  if (object !== 'null') {
    add('lodash', `((o) => [_.set(o, ${path}, 9), o])(${object})`);
    add('lodash', `((o) => [_.unset(o, ${path}), o])(${object})`);
    add('lodash', `((o) => [_.update(o, ${path}, v => [v]), o])(${object})`);
    add('lodash', `_.setWith({}, ${path}, 1, Object)`);
  }
}
const ARRAY_PAIRS = cross(['[]', '[1, 2, 3, 4, 5]', "[1, '1', 2, NaN, 2]", "[{a: 1}, {a: 2}, {b: 3}]", '[[1], [2, [3]]]'],
  ['[]', '[2, 4]', "[NaN, '1']", '[{a: 1}]', '[1, 1, 9]']);
for (const [a, b] of ARRAY_PAIRS) {
  for (const fn of ['union', 'intersection', 'difference', 'xor', 'zip', 'concat', 'without', 'pullAll', 'isEqual',
    'unionBy', 'differenceBy', 'intersectionBy', 'xorBy', 'zipObject', 'zipObjectDeep', 'unionWith', 'differenceWith',
    'intersectionWith', 'sortedIndex', 'sortedLastIndex', 'indexOf', 'lastIndexOf', 'includes', 'sortedIndexOf',
    'nth', 'chunk', 'take', 'takeRight', 'drop', 'dropRight', 'pull', 'pullAt', 'fill', 'flattenDepth', 'join', 'slice',
    'merge', 'assign', 'defaults', 'defaultsDeep', 'assignIn', 'extend', 'isMatch', 'mergeWith', 'assignWith',
    'countBy', 'sampleSize', 'isEqualWith', 'at', 'pick', 'omit', 'invokeMap', 'matches', 'conformsTo'])
    if (!['sampleSize', 'invokeMap', 'matches'].includes(fn)) add('lodash', `_.${fn}(${a}, ${b})`);
  add('lodash', `_.unionBy(${a}, ${b}, 'a')`);
  add('lodash', `_.differenceBy(${a}, ${b}, x => typeof x)`);
  add('lodash', `_.isEqualWith(${a}, ${b}, () => undefined)`);
  add('lodash', `_.slice(${a}, 1, 3)`);
  add('lodash', `_.fill(${a}, 'z', 1, 2)`);
  add('lodash', `_.includes(${a}, 2, 2)`);
}
const OBJECT_PAIRS = cross(["{a: 1, b: {c: 2, d: [1, 2]}}", '{}', "{b: {c: 3, e: 4}, f: undefined, g: null}", "{2: 'x', 1: 'y'}"],
  ["{a: 9}", "{b: {d: [3]}}", '{}', "{b: null}", "{f: 5, a: undefined}"]);
for (const [a, b] of OBJECT_PAIRS) {
  for (const fn of ['merge', 'assign', 'defaults', 'defaultsDeep', 'assignIn', 'isEqual', 'isMatch', 'toPairs', 'pick',
    'omit', 'invert', 'keys', 'values', 'extend', 'mapValues', 'findKey', 'conformsTo'])
    add('lodash', `_.${fn}(${a}, ${b})`);
  add('lodash', `_.pick(${a}, ['a', 'b.c'])`);
  add('lodash', `_.omit(${a}, 'b', 'f')`);
  add('lodash', `_.pick(${a}, 'a', 'f')`);
  add('lodash', `_.mergeWith(${a}, ${b}, (x, y) => Array.isArray(x) ? x.concat(y) : undefined)`);
}
const TEXT_LODASH = [['pad', ['8', "8, '-'", '2', "9, 'ab'"]], ['padStart', ['8', "8, '0'", '1']], ['padEnd', ['8', "8, 'xy'"]],
  ['repeat', ['0', '2', '3.7', '-1']], ['truncate', ['undefined', '{length: 5}', "{length: 8, omission: '~'}", "{length: 6, separator: ' '}"]],
  ['startsWith', ["'a'", "'b', 1"]], ['endsWith', ["'c'", "'a', 1"]], ['split', ["','", "'', 2"]],
  ['replace', ["'a', 'b'"]], ['trim', ["'a'", "' -_'"]], ['trimStart', ["'a '"]], ['trimEnd', ["'c '"]],
  ['parseInt', ['undefined', '16', '2']], ['words', ["undefined"]], ['template', []]];
for (const [fn, argsList] of TEXT_LODASH)
  for (const text of [...STRINGS.slice(0, 14), "'fooBar-baz_qux'", "'a b c d e f g h'"])
    for (const args of argsList) add('lodash', `_.${fn}(${text}, ${args})`);
for (const call of ["_.chain([3, 1, 2]).sortBy().map(x => x * 2).value()", "_([1, 2, 3]).map(x => x + 1).sum()",
  "_({a: 1, b: 2}).mapValues(v => v * 3).toPairs().value()", "_([1, 2, 2, 3]).uniq().reverse().value()",
  "_.flow([x => x + 1, x => x * 2])(3)", "_.memoize(x => x * 2)(4)", "_.constant(5)()", "_.property('a.b')({a: {b: 2}})",
  "_.matches({a: 1})({a: 1, b: 2})", "_.matchesProperty('a', 1)({a: 1})", "_.iteratee('a')({a: 7})", "_.once(() => 3)()",
  "_.partial((a, b) => a - b, 10)(3)", "_.ary((...xs) => xs.length, 2)(1, 2, 3)", "_.nthArg(1)(4, 5, 6)",
  "_.over([Math.max, Math.min])(1, 5)", "_.conforms({a: x => x > 1})({a: 2})", "_.castArray()", "_.uniqueId()",
  "_.now()", "_.random(1, 1)", "_.zipWith([1, 2], [10, 20], (a, b) => a + b)",
  "_.unzipWith([[1, 10], [2, 20]], (a, b) => a + b)", "_.sortedUniqBy([1.1, 1.2, 2.3], Math.floor)", "_.tap([1], a => a.push(2))",
  "_.thru(5, x => x + 1)", "_.invoke({a: {b: s => s}}, 'a.b', 1)", "_.mapValues({a: {n: 1}}, 'n')", "_.keyBy(['a', 'bb'], 'length')",
  "_.reduce({a: 1, b: 2}, (acc, v, k) => acc + k + v, '')", "_.reduceRight([1, 2, 3], (acc, v) => acc + v)",
  "_.sum([0.1, 0.2])", "_.mean([])", "_.max([])", "_.maxBy([{a: 1}, {a: 3}], 'a')", "_.sample([])", "_.size({a: 1, b: 2})",
  "_.toPath('a[0].b.c')", "_.toPath('a.b[\"c.d\"]')", "_.findIndex([{a: 1}, {a: 2}], ['a', 2])", "_.some([null, 0, 'x'])",
  "_.orderBy([{a: 2, b: 1}, {a: 1, b: 2}, {a: 2, b: 0}], ['a', 'b'], ['desc', 'asc'])", "_.sortBy(['b', 'a', 'C'])",
  "_.groupBy([6.1, 4.2, 6.3], Math.floor)", "_.countBy(['one', 'two', 'three'], 'length')", "_.clamp(-10, 5)",
  "_.inRange(3, 2)", "_.camelCase('Foo Bar')", "_.startCase('--foo-bar--')", "_.kebabCase('fooBar')", "_.words('fred, barney, & pebbles')",
  "_.escape('<>&\"\\'`')", "_.unescape('&lt;&gt;&amp;&quot;&#39;')", "_.isEqual({a: [1, {b: NaN}]}, {a: [1, {b: NaN}]})",
  "_.isEqual(-0, 0)", "_.isEqual([1, 2], {0: 1, 1: 2})", "_.cloneDeep({a: [1, {b: 2}]})", "_.defaultTo(NaN, 1)",
  "_.difference([1, 2, 3], [2], [3])", "_.xor([2, 1], [2, 3])", "_.flattenDepth([1, [2, [3, [4]]]], 2)",
  "_.fromPairs([['a', 1], ['b', [2]]])", "_.chunk([1, 2, 3], 0)", "_.chunk(['a', 'b', 'c', 'd', 'e'], 2)",
  "_.split('a-b-c', '-', 2)", "_.assignIn({}, {a: 1})", "_.mapKeys({a: 1, b: 2}, (v, k) => k + v)",
  "_.findLastIndex([1, 2, 1], x => x === 1)", "_.sortedIndexBy([{x: 4}, {x: 5}], {x: 4}, 'x')", "_.takeRightWhile([1, 2, 3], x => x > 1)",
  "_.nth([1, 2, 3], -1)", "_.pullAllBy([{x: 1}, {x: 2}], [{x: 1}], 'x')", "_.sumBy([{n: 1}, {n: 2}], 'n')",
  "_.every([true, 1, null], Boolean)", "_.filter([{a: 1, b: 2}, {a: 2}], {a: 1})", "_.map({a: 1, b: 2}, (v, k) => k)",
  "_.includes({a: 1, b: 2}, 2)", "_.includes('abc', 'b')", "_.toArray('ab')", "_.toArray({a: 1, b: 2})", "_.invertBy({a: 1, b: 2, c: 1})",
  "_.pullAt([1, 2, 3, 4], [1, 3])", "_.remove([1, 2, 3, 4], x => x % 2 === 0)", "_.union([2], [1, 2])", "_.uniqWith([1, 2, 1], _.isEqual)",
  "_.lastIndexOf([1, 2, 1, 2], 2)", "_.initial([1, 2, 3])", "_.tail([1, 2, 3])", "_.isEmpty(new Set())", "_.isEmpty(0)",
  "_.isEmpty('')", "_.isEmpty({a: 1})", "_.isInteger('3')", "_.isNumber(NaN)", "_.isFinite('3')", "_.toNumber('0b101')",
  "_.toNumber(' 12 ')", "_.toString(-0)", "_.toString([1, [2, -0]])", "_.toInteger('3.7')", "_.toSafeInteger(Infinity)",
  "_.round(4.006, 2)", "_.round(1.005, 2)", "_.round(4060, -2)", "_.floor(0.046, 2)", "_.ceil(6040, -2)", "_.round(-2.5)",
  "_.add('1', 2)", "_.divide(1, 0)", "_.max(['a', 'b'])", "_.meanBy([{n: 4}, {n: 6}], 'n')", "_.minBy([], 'n')"])
  add('lodash', call);

// lodash's function helpers, customizers and Unicode words (the functions they build are called here)
for (const call of ["_.flowRight([x => x + 1, x => x * 2])(3)", "_.flow(x => x + 1, [x => x * 2])(3)", "_.flow()(3, 4)",
  "_.rearg((a, b, c) => [a, b, c], [2, 0, 1])(1, 2, 3)", "_.spread((a, b) => a + b)([1, 2])", "_.rest((a, r) => r, 1)(1, 2, 3)",
  "_.nthArg(-1)(1, 2, 3)", "_.nthArg()(7, 8)", "_.partialRight((a, b, c) => [a, b, c], 'x')(1, 2)",
  "_.partial((a, b, c) => [a, b, c], _, 'x')(1, 2)", "_.overEvery([Boolean, isFinite])('1')", "_.overSome([x => x > 3, x => x < 0])(5)",
  "_.negate(x => x)(0)", "_.unary(parseInt)('08', 2)", "_.flip((a, b) => [a, b])(1, 2, 3)", "_.ary((a, b, c) => [a, b, c], 1)(1, 2, 3)",
  "((f) => [f(1), f(2), f(3)])(_.once(x => x * 10))", "((f) => [f(1), f(2), f(3), f(4)])(_.before(3, x => x))",
  "((f) => [f(1), f(2), f(3)])(_.after(2, x => x))", "((f) => [f(2), f(2), f(3)])(_.memoize(x => ({v: x})))",
  "_.invoke([1, 2, 3], 'slice', 1)", "_.invoke({a: [1, 2]}, 'a.join', '-')", "_.invoke({a: 'abc'}, 'a.toUpperCase')",
  "_.invoke({}, 'a.b')", "_.invokeMap([[5, 1], [3, 2]], 'sort')", "_.method('a.b', 2)({a: {b: x => x * 3}})",
  "_.methodOf({a: {b: x => x + 1}}, 4)('a.b')", "_.propertyOf({a: {b: 1}})('a.b')", "_.wrap(1, (f, x) => f + x)(2)",
  "_.cond([[x => x > 1, () => 'big'], [_.stubTrue, () => 'small']])(0)", "_.cond([[x => x > 1, () => 'big']])(0)",
  "_.tap({a: 1}, o => { o.b = 2; })", "_.updateWith({}, 'a[0].b', () => 1, Object)", "_.updateWith({}, 'a[0].b', () => 1)",
  "_.assignInWith({a: 1}, {a: 2, b: 3}, (o, s) => o === undefined ? s : o)", "_.assignWith({a: 1}, {a: 2}, {b: 3})",
  "_.defaultsDeep({a: {b: 1}}, {a: {b: 2, c: 3}}, {d: [1, 2]})", "_.defaultsDeep({a: [1]}, {a: [2, 3]})",
  "_.mergeWith({a: [1]}, {a: [2]}, {a: [3]}, (x, y) => Array.isArray(x) ? x.concat(y) : undefined)",
  "_.merge({a: {b: 1}}, null, {a: {c: 2}}, 0, {a: {b: undefined}})", "_.merge({}, 'ab')", "_.merge([1, [2]], [[3], [4, 5]])",
  "_.isEqualWith([1, 2], [1, 3], (a, b, k) => k === 1 ? true : undefined)", "_.isEqualWith(1, 2, () => 1)",
  "_.isEqualWith({a: 'x'}, {a: 'X'}, (a, b) => typeof a === 'string' ? a.toLowerCase() === b.toLowerCase() : undefined)",
  "_.set({}, 'list[3]', 1)", "_.set({a: [1, 2, 3]}, 'a.length', 1)", "_.unset({a: [1, 2]}, 'a[0]')",
  "_.sortBy([undefined, NaN, null, 3, 'b', 1, 'a', null, undefined, NaN, 2])", "_.sortBy([true, false, 0, 1])",
  "_.orderBy([undefined, NaN, null, 3, 1], undefined, 'desc')", "_.orderBy([{a: 1, b: 2}, {a: 1, b: 1}], ['a', 'b'], ['asc', 'desc'])",
  "_.sortedIndex([null, null], 1)", "_.sortedLastIndex([1, 2, NaN, undefined], NaN)", "_.sortedIndex([1, 2, null], undefined)",
  "_.range(0, 1, 0.1)", "_.rangeRight(0, 1, 0.1)", "_.truncate('hello world foo', {length: 12, separator: /o/})",
  "_.truncate('hello world', {length: 8, separator: /\\s/})", "_.truncate('\\u{1F600}\\u{1F600}\\u{1F600}\\u{1F600}', {length: 3, omission: ''})",
  "_.toArray('e\\u0301x\\u{1F600}')", "_.toArray('👍🏽ok👨‍👩‍👧🇫🇷🇩🇪a\\u0301\\u0302✂️x')", "_.words('ПриветМир 中文abc字符 ÀÉÎõü 1st 2ND 3rd 11th')", "_.words('👍🏽 ok 👨‍👩‍👧 x 🇫🇷🇩🇪')",
  "_.camelCase('XMLHttpRequest foo’s BAR')", "_.kebabCase('camelCaseWord123 HELLO_world')", "_.startCase('ñandú æble øre')",
  "_.deburr('ÆØÅ ß Łódź Œuvre ſ ĳ ŉ e\\u0301 \\u00a0')", "_.snakeCase('don\\'t stop DON\\'T STOP')",
  "_.pick({a: {b: 1, c: 2}, d: 3}, 'a.b', ['d'])", "_.pullAt([1, 2, 3], '1', 1)", "_.mapKeys([1, 2], (v, k) => typeof k)",
  "_.uniqBy([2.1, 1.2, 2.3], Math.floor)", "_.invertBy({a: 1, b: 2, c: 1}, v => 'g' + v)", "_.reverse([1, 2, 3])"])
  add('lodash', call);

// Reading what a value lacks is undefined (S-7 keeps prototype machinery out of reach).
for (const read of ["'s'.foo", '[1].bar', '(5).foo', 'true.foo', "'abc'[5]", "'abc'['x']", "[1]['-1']", '[1][1]', "'s'.foo === undefined",
  '[1, 2].foo?.bar', '[1].bar ?? 2', "'x'.toSorted", "'s'.foo?.()", '((a) => a.bar)([1])', '(({foo}) => foo)("s")',
  "((a) => { const {bar, length} = a; return [bar, length]; })([1])", "(o => o.name.first)({name: 'x'})", "'bar' in [1]",
  '[1, 2].length', "'\\u{1F600}'.length", "[][0]"])
  add('language', read);
// Labelled statements, Map and Intl.NumberFormat.
for (const code of [
  "(() => { const out = []; outer: for (let i = 0; i < 3; i++) { for (let j = 0; j < 3; j++) { if (j == 1) continue outer; if (i == 2) break outer; out.push([i, j]); } } return out; })()",
  "(() => { let n = 0; a: { n = 1; break a; n = 2; } return n; })()",
  "(() => { const out = []; rows: for (const r of [[1, 2], [3, -1], [5, 6]]) { for (const x of r) { if (x < 0) continue rows; out.push(x); } } return out; })()",
  "(() => { let i = 0, out = []; w: while (i < 5) { i++; switch (i) { case 2: continue w; case 4: break w; } out.push(i); } return out; })()",
  "(() => { let i = 0; d: do { i++; if (i < 3) continue d; break d; } while (true); return i; })()",
  "(() => { const out = []; a: b: for (const x of [1, 2, 3]) { for (const y of [1, 2]) { if (y === 2) continue a; if (x === 3) break b; out.push(x * 10 + y); } } return out; })()",
  "(() => { const out = []; k: for (const key in {a: 1, b: 2, c: 3}) { if (key === 'b') continue k; out.push(key); } return out; })()",
  "(() => { let out = 0; for (const x of [1, 2, 3]) { inner: { if (x === 2) break inner; out += x; } } return out; })()",
  "new Map([[1, 'a'], ['1', 'b'], [NaN, 'n']]).get(NaN)",
  "(() => { const m = new Map(); m.set('x', 1).set('y', 2); m.set('x', 3); return [m.size, m.get('x'), m.has('y'), m.delete('y'), m.has('y'), m.delete('q'), [...m.keys()], [...m.values()], [...m.entries()], m.size]; })()",
  "(() => { const m = new Map([[0, 'z']]); return [m.get(-0), m.has(-0), Array.from(m), [...m], [...m.keys()]]; })()",
  "(() => { const m = new Map([['a', 1], ['b', 2]]); const out = []; m.forEach((v, k, map) => out.push(k + v + (map === m))); for (const [k, v] of m) out.push(k); return out; })()",
  "(() => { const o = {}; const m = new Map([[o, 1]]); return [m.get(o), m.get({}), new Map().get('q'), new Map() instanceof Map, typeof new Map()]; })()",
  "(() => { const m = new Map([[1, 2]]); m.clear(); return [m.size, new Map().size, new Map(null).size]; })()",
  "(() => { const m = new Map(); for (const w of ['a', 'b', 'a']) m.set(w, (m.get(w) || 0) + 1); return Object.fromEntries(m); })()",
  ...['1234567.891', '-0', 'NaN', "'12345.6789'", '1e21', 'Infinity', '-1234.5', '0.0001234', '-0.0004', '1.7976931348623157e308', '999.9995']
    .flatMap(n => [`new Intl.NumberFormat('en-US').format(${n})`, `Intl.NumberFormat('zh-CN').format(${n})`,
      `new Intl.NumberFormat().format(${n})`, `(${n}).toLocaleString()`, `Number(${n}).toLocaleString('zh-CN')`]),
  "new Intl.NumberFormat(['en-US']).format(1234)", "new Intl.NumberFormat('en', {}).format(5)", "new Intl.NumberFormat('zh').format()"])
  add('language', code);

// Work no budget allows: the interpreter must answer MVU_LIMIT (node is not asked: it would
// spend gigabytes or throw a RangeError of its own).
const BUDGET = ["'x'.repeat(2 ** 25)", "'x'.padStart(2 ** 25)", "'x'.padEnd(2 ** 28, 'ab')", 'Array(1e9)', 'new Array(1e9).join()',
  'Array.from({length: 1e9})', "_.range(0, 1e9)", "_.times(1e9)", "_.repeat('x', 2 ** 25)", "_.padStart('x', 2 ** 25)",
  "_.padEnd('', 2 ** 25)", "[1, 2].join('x'.repeat(1e6)).repeat(1e3)", "Array(1e6).fill('abcdefgh').join('')",
  "'ab'.repeat(2 ** 19).split('')", "_.times(2 ** 25, String)", "_.chunk(_.range(1e8), 1)", "JSON.stringify(Array(1e8).fill(0))"];

const results = cases.map(([family, expression]) => [family, expression, run(expression)]);
for (const expression of BUDGET) results.push(['budget', expression, { $: 'limit' }]);
rmSync(folder, { recursive: true, force: true });
process.stdout.write(JSON.stringify({
  generator: 'tests/schema/oracle/builtins.mjs', node: process.version, lodash: LODASH_VERSION, time_zone: 'UTC',
  cases: results,
}) + '\n');
