// Generates tests/schema/zod_api_parity.json: Zod 4's API, declarations × inputs, answered by real Zod.
//
//   TZ=UTC node tests/schema/oracle/zod_api.mjs > tests/schema/zod_api_parity.json
//
// Declarations are generated (seeded, so a run is reproducible) from the API's families: string
// formats and checks, numbers, enums and literals, template literals, stringbool, coercion, the
// object helpers on objects and on wrapped objects (`.shape` of a prefault is undefined, `.extend`
// of one throws), discriminated unions with wrapped discriminators, records, tuples, unions/xor,
// wrappers and effects. Each is asked every input of a shared pool plus its own; the answer is
// {ok, value}, {ok: false, issues: [[code, path, message]]}, {throws: true} (Zod throws while
// parsing) or, for the whole case, `declare: "throws"` (the declaration itself throws in
// JavaScript). tests/schema/test_zod_api_parity.py replays them.
import { declare, loadOracle, outcome } from './zod_runner.mjs';

let seed = 2929;
function random() { // mulberry32
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = items => items[Math.floor(random() * items.length)];

const STRINGS = ['', 'a', 'abc', ' A b ', 'ABC', 'Hello', 'test@example.com', 'first.last+tag@mail.co.uk', 'bad@', '@x.io',
  'a@b.c', '123e4567-e89b-12d3-a456-426614174000', '550e8400-e29b-41d4-a716-446655440000',
  '00000000-0000-0000-0000-000000000000', '017f22e2-79b0-7cc3-98c4-dc0c0c07398f', 'not-a-uuid',
  'V1StGeXR_Z5j3eK-Gq8a1', 'cjld2cjxh0000qzrmn831i7rn', '01ARZ3NDEKTSV4RRFFQ69G5FAV', '9m4e2mr0ui3e8a215n4g',
  '2025-06-02T10:30:00Z', '2025-06-02T10:30:00.123Z', '2025-06-02T10:30Z', '2025-06-02T10:30:00+08:00',
  '2025-06-02T10:30:00', '2025-06-02', '2024-02-29', '2025-02-29', '2025-13-02', '10:30', '10:30:15', '10:30:15.5',
  '25:00', 'P1D', 'PT1H30M', 'P1W', 'P', '192.168.0.1', '256.1.1.1', '10.0.0.0/8', '10.0.0.0/33', '+14155552671',
  '12345', 'deadBEEF', 'xyz', 'example.com', 'sub.example.com.', '-bad.com', 'true', 'false', 'TRUE', 'yes', 'no',
  'on', 'off', '1', '0', 'y', 'N', 'enabled', 'disabled', 'a1b', 'a-1.5b', 'a1.b', 'red-3', 'green-x', 'hp:10',
  'lv1', 'null', 'undefined', 'Ａ', 'e\u0301', '\ufb01', '火球术', '甲乙', 'aGVsbG8=', 'aGVsbG8', 'aGk', 'a===',
  'aGk-_w', '::1', '2001:db8::1', '1:2:3:4:5:6:7:8', '::ffff:1.2.3.4', '1::2::3', '::1.2.3.04', '2001:db8::/32',
  '::1/129', '::1/01', 'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxIn0.sig', 'eyJ0eXAiOiJKV1QifQ.e30.x',
  'eyJhbGciOiJub25lIiwidHlwIjoiand0In0.e30.', '00:1A:2B:3C:4D:5E', '00:1a:2b:3c:4d:5e', '00:1A:2b:3C:4D:5E',
  '00-1A-2B-3C-4D-5E', 'd41d8cd98f00b204e9800998ecf8427e', '1B2M2Y8AsgTpgAmY7PhCfg==', '1B2M2Y8AsgTpgAmY7PhCfg',
  'https://example.com/a?b=1', 'http://localhost:8080', 'ftp://x', 'a:b', 'mailto:x@y', 'http://', 'http:example.com',
  'https:/path', 'http://[::1]:80/', 'http://1.2.3.256', 'http://0x7f.1', 'http://a b', 'http://x:99999', '//x',
  'file:///c:/x', 'javascript:alert(1)', 'http://例子.测试', '  https://x.io  ', 'http://@x', 'http://x@', 'ws://a.b/c',
  'data:text/plain,hi', 'https://user:pw@HOST.com:443/p#f', 'http://x.com\t/a', 'https://cdn.example.com/img/头像.png',
  'HTTPS://EXAMPLE.COM', 'http://1.2.3', 'http://a..b', 'x://a b'];
const OTHERS = [0, 1, -1, 2.5, 3, 10, 100, -7, 255, 2147483648, 4294967296, 9007199254740993, 1e21, 0.1, null, true,
  false, [], ['a'], [1, 2], {}, { a: 1 }];
const OBJECTS = [{}, { a: 'x' }, { a: 'x', b: 1 }, { a: 1, b: 'y' }, { a: 'x', b: 2, c: true }, { b: 3 },
  { a: 'x', extra: [1] }, { a: null, b: null }, { t: 'a', x: 1 }, { t: 'b', y: 's' }, { t: 'a', x: 'no' }, { x: 1 },
  { t: 'c' }, { t: null, x: 1 }, { t: 'b', y: 2 }, [], 'obj', null];

const STRING_FORMS = ['z.email()', 'z.string().email()', 'z.uuid()', 'z.string().uuid()', 'z.uuidv4()', 'z.uuidv7()',
  'z.guid()', 'z.nanoid()', 'z.cuid()', 'z.cuid2()', 'z.ulid()', 'z.xid()', 'z.ksuid()', 'z.ipv4()', 'z.cidrv4()',
  'z.e164()', 'z.hex()', 'z.hostname()', 'z.base64()', 'z.base64url()', 'z.string().base64()', 'z.ipv6()',
  'z.string().ipv6()', 'z.cidrv6()', 'z.jwt()', 'z.jwt({ alg: "HS256" })', 'z.string().jwt()', 'z.mac()',
  'z.mac({ delimiter: "-" })', 'z.hash("md5")', 'z.hash("md5", { enc: "base64" })', 'z.hash("md5", { enc: "base64url" })',
  'z.hash("sha256")', 'z.url()', 'z.string().url()', 'z.httpUrl()', 'z.url({ protocol: /^https$/ })',
  'z.url({ hostname: /^[a-z]{1,20}\\.com$/ })', 'z.url("bad url")', 'z.iso.date()', 'z.iso.time()', 'z.iso.time({ precision: -1 })',
  'z.iso.time({ precision: 0 })', 'z.iso.datetime()', 'z.iso.datetime({ offset: true })',
  'z.iso.datetime({ local: true })', 'z.iso.datetime({ precision: 3 })', 'z.iso.datetime({ offset: true, local: true })',
  'z.iso.duration()', 'z.string().datetime()', 'z.string().date()', 'z.string().time()', 'z.string().duration()',
  'z.string().lowercase()', 'z.string().uppercase()', 'z.string().normalize()', 'z.string().normalize("NFKC")',
  'z.string().trim().toLowerCase()', 'z.string().toUpperCase().min(3)', 'z.string().minLength(2).maxLength(4)',
  'z.string().overwrite(v => v.trim())', 'z.string().startsWith("a").endsWith("b")', 'z.string().includes("1")',
  'z.string().email({ message: "bad email" })', 'z.email("no")', 'z.string().min(1).email()',
  'z.string().length(3)', 'z.string().nonempty()', 'z.stringbool()',
  'z.stringbool({ truthy: ["y", "hp:10"], falsy: ["n"] })', 'z.stringbool({ case: "sensitive" })',
  'z.templateLiteral(["a", z.number(), "b"])', 'z.templateLiteral([z.enum(["red", "green"]), "-", z.int()])',
  'z.templateLiteral(["hp:", z.number().int()])', 'z.templateLiteral([z.string().min(1), z.literal(1)])',
  'z.templateLiteral(["lv", z.number().optional()])', 'z.templateLiteral([z.boolean()])',
  'z.templateLiteral([z.literal(["a", "lv"]), z.string().max(1)])', 'z.templateLiteral([null, z.undefined()])',
  'z.templateLiteral(["a", z.literal("b").nullable()])', 'z.coerce.string().email()', 'z.json()',
  'z.custom(v => typeof v === "string" && v.length > 2)', 'z.custom()', 'z.custom(v => v === 1, "one")'];
const NUMBER_FORMS = ['z.int32()', 'z.uint32()', 'z.float32()', 'z.float64()', 'z.int()', 'z.number().safe()',
  'z.number().gt(1).lt(100)', 'z.number().gte(0).lte(10)', 'z.number().positive()', 'z.number().nonnegative()',
  'z.number().negative()', 'z.number().nonpositive()', 'z.number().multipleOf(2.5)', 'z.number().step(3)',
  'z.number().int().finite()', 'z.coerce.number().int32()', 'z.nan()', 'z.void()', 'z.null()', 'z.undefined()',
  'z.date()', 'z.number().isInt', 'z.literal([1, "1", true])', 'z.enum(["a", "b", "c"]).extract(["a", "b"])',
  'z.enum(["a", "b", "c"]).exclude(["a"])', 'z.enum({ A: "a", B: "b" })', 'z.literal("a").or(z.literal(1))',
  'z.xor([z.string(), z.number()])', 'z.xor([z.string(), z.string().min(2)])', 'z.any().isOptional()',
  'z.number().optional().isOptional() ? z.string() : z.number()', 'z.coerce.date()', 'z.object({ d: z.coerce.date() })',
  'z.coerce.date().optional()', '[z.xor([z.any()]).type, z.templateLiteral(["a"]).type, z.stringbool().type, z.json().type, z.string().prefault("").type].join() === "union,template_literal,pipe,lazy,prefault" ? z.any() : z.never()', 'z.number().nullable().isNullable() ? z.any() : z.never()'];

// Object helpers, applied to an object and to it under every wrapper.
const BASE = 'z.object({ a: z.string(), b: z.number().optional() })';
const WRAPS = ['', '.prefault({ a: "p" })', '.default({ a: "d" })', '.optional()', '.nullable()', '.readonly()',
  '.catch({ a: "c" })', '.describe("x")', '.meta({ k: 1 })', '.brand("B")', '.transform(v => v)',
  '.refine(v => v.a !== "x", { message: "no x" })', '.check(ctx => { if (ctx.value.b === 3) ctx.issues.push({ code: "custom", message: "b3", input: ctx.value }); })'];
const OBJECT_OPS = ['z.object({ ...W.shape, c: z.boolean().default(true) })', 'W.extend({ c: z.boolean() })',
  'W.safeExtend({ c: z.boolean() })', 'W.pick({ a: true })', 'W.omit({ a: true })', 'W.partial()',
  'W.partial({ a: true })', 'W.required()', 'W.keyof()', 'W.strict()', 'W.passthrough()', 'W.loose()', 'W.strip()',
  'W.catchall(z.number())', 'W.unwrap()', 'W', 'z.object({ nested: W })', 'W.shape === undefined ? z.any() : z.never()',
  'W.merge(z.object({ c: z.boolean() }))', 'z.object(W.shape)', 'W.removeDefault()', 'W.removeCatch()',
  'W.in', 'W.array().min(1)', 'W.or(z.string())', 'W.exactPartial()', 'W.exactPartial({ b: true })'];

const DISCRIMINATORS = ['z.literal("a")', 'z.literal("a").prefault("a")', 'z.literal("a").default("a")',
  'z.literal("a").optional()', 'z.literal("a").nullable()', 'z.literal("a").catch("a")', 'z.literal("a").readonly()',
  'z.enum(["a", "c"])', 'z.literal(["a", "c"]).prefault("c")', 'z.literal("a").transform(v => v)',
  'z.literal("a").optional().nonoptional()', 'z.string()', 'z.lazy(() => z.literal("a"))', 'z.literal("b")'];

const MISC = ['z.record(z.enum(["a", "b"]), z.number())', 'z.partialRecord(z.enum(["a", "b"]), z.number())',
  'z.looseRecord(z.string().regex(/^a$/), z.number())', 'z.record(z.string(), z.number()).keyType',
  'z.record(z.string(), z.number()).valueType', 'z.tuple([z.string(), z.number()])',
  'z.tuple([z.string()], z.number())', 'z.tuple([z.string()]).rest(z.boolean())', 'z.array(z.number()).element',
  'z.array(z.number()).unwrap()', 'z.array(z.string()).nonempty().max(2)', 'z.intersection(z.object({ a: z.string() }), z.object({ b: z.number() }))',
  'z.union([z.object({ t: z.literal("a") }), z.object({ x: z.number() })])', 'z.nullish(z.string())',
  'z.nonoptional(z.string().optional())', 'z.readonly(z.object({ a: z.string() }))',
  'z.preprocess(v => (typeof v === "string" ? v.trim() : v), z.string().min(1))',
  'z.string().pipe(z.coerce.number())', 'z.string().transform(v => v.length).pipe(z.number().max(3))',
  'z.string().refine(v => v.length > 1, { message: "short", path: ["p"] })',
  'z.string().superRefine((v, ctx) => { if (v === "a") ctx.addIssue({ code: "custom", message: "no a" }); })',
  'z.string().check(ctx => { if (ctx.value.length > 3) ctx.issues.push({ code: "custom", message: "long", input: ctx.value }); })',
  'z.string().apply(s => s.min(2))', 'z.string().with(ctx => {})', 'z.number().catch(ctx => ctx.value === null ? -1 : -2)',
  'z.string().default("d").prefault("p")', 'z.lazy(() => z.object({ a: z.string() })).unwrap()',
  'z.string().transform(v => v + "!").in', 'z.string().pipe(z.string().min(2)).out', 'z.coerce.boolean()',
  'z.object({ a: z.string() }).keyof().options', 'z.enum(["x", "y"]).enum', 'z.literal("q").value',
  'z.literal(["q", "r"]).values', 'z.bigint()', 'z.symbol()', 'z.map(z.string(), z.number())', 'z.set(z.string())',
  'z.function()', 'z.instanceof(Date)', 'z.object({ a: z.string().exactOptional(), b: z.number() })',
  'z.object({ a: z.exactOptional(z.string()), b: z.number().optional() })', 'z.tuple([z.string(), z.number()]).partial()',
  'z.tuple([z.string()], z.number()).partial()', 'z.object({ a: z.string().transform(() => undefined).exactOptional() })'];

const cases = [];
const add = (name, expression, inputs) => cases.push({ name, source: `export default ${expression};`, inputs });
const sample = (pool, count) => Array.from({ length: count }, () => pick(pool));

STRING_FORMS.forEach((form, index) => add(`string-${index}`, form, [...STRINGS, ...sample(OTHERS, 4)]));
NUMBER_FORMS.forEach((form, index) => add(`number-${index}`, form,
  [...OTHERS, ...sample(STRINGS, 8), ...sample(OBJECTS, 2)]));
for (const [wrapIndex, wrap] of WRAPS.entries()) {
  for (const [opIndex, op] of OBJECT_OPS.entries()) {
    const expression = op.replaceAll('W', `${BASE}${wrap}`);
    add(`object-${wrapIndex}-${opIndex}`, expression, [...OBJECTS, undefined].filter(v => v !== undefined));
  }
}
for (const [index, tag] of DISCRIMINATORS.entries()) {
  const union = `z.discriminatedUnion("t", [z.object({ t: ${tag}, x: z.number() }), z.object({ t: z.literal("b"), y: z.string() })])`;
  add(`discriminator-${index}`, union, OBJECTS);
  add(`discriminator-field-${index}`, `z.object({ u: ${union}.optional() })`, OBJECTS.map(item => ({ u: item })));
}
MISC.forEach((form, index) => add(`misc-${index}`, form, [...sample(STRINGS, 6), ...OTHERS, ...OBJECTS]));
// Methods of one class read from another, through each wrapper (Zod: undefined, so calling throws).
const INNERS = ['z.string()', 'z.number()', 'z.array(z.string())', 'z.enum(["a", "b"])', 'z.tuple([z.string()])'];
const INNER_WRAPS = ['', '.optional()', '.default("a")', '.prefault("a")', '.nullable()', '.catch("a")', '.readonly()',
  '.transform(v => v)', '.nonoptional()', '.or(z.null())'];
const METHODS = ['.min(1)', '.max(3)', '.int()', '.trim()', '.email()', '.element', '.options', '.unwrap()',
  '.removeDefault()', '.removeCatch()', '.in', '.out', '.describe("x")', '.meta({ a: 1 })', '.brand()',
  '.extract(["a"])', '.rest(z.number())', '.nonempty()', '.length(1)', '.positive()'];
for (const [innerIndex, inner] of INNERS.entries()) {
  for (const [wrapIndex, wrap] of INNER_WRAPS.entries()) {
    const method = pick(METHODS);
    add(`member-${innerIndex}-${wrapIndex}`, `${inner}${wrap}${method}`, [...sample(STRINGS, 5), ...OTHERS]);
  }
}
// Random compositions: a form from the families under a wrapper inside an object.
const LEAVES = [...STRING_FORMS, ...NUMBER_FORMS.filter(form => !/isOptional|isInt|\?/.test(form)), ...DISCRIMINATORS];
const FIELD_WRAPS = ['X', 'X.optional()', 'X.nullable()', 'X.catch(null)', 'z.array(X)', 'X.or(z.number())',
  'z.record(z.string(), X)', 'z.tuple([X])'];
for (let index = 0; index < 60; index += 1) {
  const field = pick(FIELD_WRAPS).replace('X', pick(LEAVES));
  const inputs = sample(STRINGS, 6).flatMap(text => [{ f: text }, { f: [text] }, { f: { k: text } }]);
  add(`composed-${index}`, `z.object({ f: ${field} })`, [...inputs, { f: 5 }, {}, { f: null }]);
}

// Recursive objects as Zod 4 documents them: a getter in the shape (`get children() {...}`),
// reading the object's own constant, a parent, mutual recursion, extend/safeExtend/merge with a
// getter, getters behind wrappers and unions, `.shape` reads and `this` in the shape object.
// Inputs are seeded trees, valid and broken deep inside (wrong types, missing and extra keys, null).
const RECURSIVE = {
  category: 'const Category = z.object({ name: z.string(), get subcategories() { return z.array(Category) } });',
  strict: 'const Category = z.strictObject({ name: z.string(), get subcategories() { return z.array(Category) } });',
  loose: 'const Category = z.looseObject({ name: z.string(), get subcategories() { return z.array(Category) } });',
  optional: 'const Category = z.object({ name: z.string(), get subcategories() { return z.array(Category).optional() } });',
  defaulted: 'const Category = z.object({ name: z.string().min(1), get subcategories() { return z.array(Category).default([]) } });',
  extend: 'const Base = z.object({ name: z.string() });\nconst Category = Base.extend({ get subcategories() { return z.array(Category) } });',
  safeExtend: 'const Base = z.object({ name: z.string() });\nconst Category = Base.safeExtend({ get subcategories() { return z.array(Category).max(3) } });',
  extendStrict: 'const Base = z.object({ name: z.string() });\nconst Category = Base.extend({ get subcategories() { return z.array(Category) } }).strict();',
  merge: 'const Base = z.object({ name: z.string() });\nconst Category = Base.merge(z.object({ get subcategories() { return z.array(Category) } }));',
  record: 'const Category = z.object({ name: z.string(), get subcategories() { return z.record(z.string(), Category).optional() } });',
  union: 'const Category = z.object({ name: z.union([z.string(), z.number()]), get subcategories() { return z.union([z.array(Category), z.null()]) } });',
  thisShape: 'const shape = { label: z.string(), get name() { return this.label }, get subcategories() { return z.array(Category) } };\nconst Category = z.object(shape);',
  method: 'const make = { item: z.string(), tree() { const Node = z.object({ name: this.item, get subcategories() { return z.array(Node) } }); return Node; } };\nconst Category = make.tree();',
};
const ROOTS = {
  plain: 'export default Category;',
  nested: 'export default z.object({ root: Category.optional(), count: z.number().optional() });',
  shapeRead: 'export default z.object({ root: Category.shape.subcategories });',
};
const PARENT = 'const Node = z.object({ id: z.number(), get parent() { return Node.optional() } });\nexport default Node;';
const LIST = 'const List = z.object({ v: z.number(), get next() { return List.nullable() } });\nexport default List;';
const MUTUAL = 'const User = z.object({ name: z.string(), get posts() { return z.array(Post) } });\n'
  + 'const Post = z.object({ title: z.string(), get author() { return User.optional() } });\nexport default User;';
const SHAPE_KIND = 'const Shape = z.discriminatedUnion("t", [z.object({ t: z.literal("leaf"), v: z.number() }),\n'
  + '  z.object({ t: z.literal("node"), get kids() { return z.array(Shape) } })]);\nexport default Shape;';
const NAMES = ['a', 'b', 'root', '火', '', 7, null, true, ['x'], { n: 1 }];
function tree(depth, breadth) {
  const kids = depth <= 0 ? [] : Array.from({ length: Math.floor(random() * breadth) }, () => tree(depth - 1, breadth));
  const node = { name: pick(['a', 'b', 'c', '甲']), subcategories: kids };
  if (random() < 0.2) node.label = 'L';
  return node;
}
function breakTree(node) { // one change somewhere down the tree
  const copy = JSON.parse(JSON.stringify(node));
  let at = copy;
  while (at.subcategories.length && random() < 0.7) at = pick(at.subcategories);
  const change = pick(['name', 'drop-name', 'drop-kids', 'kids', 'extra', 'null-kid', 'kid-array']);
  if (change === 'name') at.name = pick(NAMES);
  if (change === 'drop-name') delete at.name;
  if (change === 'drop-kids') delete at.subcategories;
  if (change === 'kids') at.subcategories = pick([null, 'x', {}, 3]);
  if (change === 'extra') at.extra = pick([1, 'y', null]);
  if (change === 'null-kid') at.subcategories.push(null);
  if (change === 'kid-array') at.subcategories.push([]);
  return copy;
}
const trees = () => {
  const valid = Array.from({ length: 8 }, () => tree(3, 3));
  return [...valid, ...valid.flatMap(item => [breakTree(item), breakTree(item)]), null, {}, [], 'x', { name: 'a' },
    { name: 'a', subcategories: [] }, { name: 'a', subcategories: [{ name: 'b', subcategories: [], x: 1 }] }];
};
for (const [shape, declaration] of Object.entries(RECURSIVE)) {
  for (const [root, tail] of Object.entries(ROOTS)) {
    const inputs = trees();
    const wrapped = root === 'plain' ? inputs : root === 'nested' ? inputs.map(item => ({ root: item }))
      : inputs.map(item => ({ root: item?.subcategories ?? item }));
    cases.push({ name: `recursive-${shape}-${root}`, source: `${declaration}\n${tail}`, inputs: wrapped });
  }
}
const parents = length => {
  let node = { id: length };
  for (let index = length - 1; index >= 0; index -= 1) node = { id: index, parent: node };
  return node;
};
cases.push({ name: 'recursive-parent', source: PARENT, inputs: [parents(0), parents(3), parents(10), { id: 1, parent: null },
  { id: 1, parent: { id: 'x' } }, { id: 1, parent: { id: 2, parent: { parent: {} } } }, { parent: { id: 1 } }, null,
  { id: 1, parent: { id: 2, extra: true } }] });
const list = (length, last) => {
  let node = last;
  for (let index = length; index >= 0; index -= 1) node = { v: index, next: node };
  return node;
};
cases.push({ name: 'recursive-list', source: LIST, inputs: [list(0, null), list(5, null), list(3, undefined), list(3, { v: 'x', next: null }),
  list(2, {}), list(4, 7), { v: 1 }, { next: null }] });
cases.push({ name: 'recursive-mutual', source: MUTUAL, inputs: [{ name: 'u', posts: [] },
  { name: 'u', posts: [{ title: 't' }, { title: 's', author: { name: 'v', posts: [{ title: 'r' }] } }] },
  { name: 'u', posts: [{ title: 1, author: { name: 2, posts: null } }] }, { name: 'u' }, { posts: [] }, null,
  { name: 'u', posts: [{ title: 't', author: null }] }] });
cases.push({ name: 'recursive-discriminated', source: SHAPE_KIND, inputs: [{ t: 'leaf', v: 1 }, { t: 'node', kids: [] },
  { t: 'node', kids: [{ t: 'leaf', v: 1 }, { t: 'node', kids: [{ t: 'leaf', v: 2 }] }] },
  { t: 'node', kids: [{ t: 'node', kids: [{ t: 'x' }] }] }, { t: 'node', kids: [{ t: 'leaf', v: 'no' }] }, { t: 'node' },
  { t: 'leaf' }, null, { t: 'node', kids: [null] }] });

const oracle = loadOracle();
for (const entry of cases) {
  try {
    const schema = await declare(oracle, entry.source);
    entry.expected = entry.inputs.map(input => outcome(schema, input, { messages: true }));
  } catch {
    entry.declare = 'throws';
    entry.expected = [];
  }
}
process.stdout.write('[\n' + cases.map(entry => JSON.stringify(entry)).join(',\n') + '\n]\n');
