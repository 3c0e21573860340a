"""The JavaScript a card's script finds in its sandbox: the event adapter and the JSON dispatch.

There are no host functions: Python never exposes a callable to the script. The prelude is
evaluated first; it captures the built-ins it relies on (so a script that later replaces
``JSON.parse`` or ``Array.prototype.push`` cannot change how the prelude works), removes
``eval`` and every way to the ``Function`` constructor, installs the globals below as
non-writable, and returns to Python an object of three functions Python keeps:

* ``gate(name)``: define the declaration's gate global (the same frozen object as ``__commandGate``);
* ``initialized()``: emit ``global_Mvu_initialized`` and answer the ``COMMAND_PARSED`` listener count;
* ``process(json)``: one turn, JSON text in, JSON text out (``{"ok": true, "commands": [...]}``,
  or ``{"ok": false, "why": "threw" | "async" | "baseline" | "memory"}``).

Globals for the card: ``Mvu.events.COMMAND_PARSED``, ``eventOn``, ``eventMakeLast``, a silent
``console`` and ``__commandGate`` (``latestUserText()``, ``extractOperationBlock(text)``).
"""

from __future__ import annotations

COMMAND_PARSED = "mag_command_parsed"
INITIALIZED = "global_Mvu_initialized"
MAX_LISTENERS = 16
MAX_OPERATION_BLOCK = 30_000
MAX_COMMANDS = 1000

PRELUDE = r"""
(function (global) {
  'use strict';
  const define = Object.defineProperty, freeze = Object.freeze, getProto = Object.getPrototypeOf;
  const parse = JSON.parse, stringify = JSON.stringify, apply = Reflect.apply;
  const push = Array.prototype.push, splice = Array.prototype.splice, indexOf = Array.prototype.indexOf;
  const slice = Array.prototype.slice, split = String.prototype.split, trim = String.prototype.trim;
  const strIndexOf = String.prototype.indexOf, strSlice = String.prototype.slice;
  const fixed = (target, name, value) => define(target, name, {value, writable: false, enumerable: false,
                                                                 configurable: false});

  // No code from strings: eval is gone, and no function's constructor leads to Function.
  delete global.eval;
  for (const sample of [function () {}, async function () {}, function* () {}, async function* () {}]) {
    fixed(getProto(sample), 'constructor', undefined);
  }
  fixed(global, 'Function', undefined);

  const listeners = {__proto__: null, @INITIALIZED@: [], @COMMAND_PARSED@: []};
  function on(name, fn, last) {
    const list = typeof name === 'string' ? listeners[name] : undefined;
    if (list === undefined) throw new TypeError('unknown event');
    if (typeof fn !== 'function') throw new TypeError('a listener is a function');
    const at = apply(indexOf, list, [fn]);
    if (at >= 0) {
      if (!last) return () => {};
      apply(splice, list, [at, 1]);
    } else if (list.length >= @MAX_LISTENERS@) {
      throw new RangeError('too many listeners');
    }
    apply(push, list, [fn]);
    return () => { const i = apply(indexOf, list, [fn]); if (i >= 0) apply(splice, list, [i, 1]); };
  }
  const thenable = value => value !== null && (typeof value === 'object' || typeof value === 'function')
    && typeof value.then === 'function';
  const ASYNC = freeze({});  // thrown for a listener that returned a promise: no script can throw it
  function emit(name, args) {
    for (const fn of apply(slice, listeners[name], [])) {
      if (thenable(apply(fn, undefined, args))) throw ASYNC;
    }
  }

  let userText = '';
  const count = (text, tag) => apply(split, text, [tag]).length - 1;
  const TAGS = ['本轮操作', '本轮APP操作'];
  function extractOperationBlock(text) {
    if (typeof text !== 'string') return '';
    const opens = TAGS.map(tag => count(text, '<' + tag + '>'));
    const closes = TAGS.map(tag => count(text, '</' + tag + '>'));
    if (opens[0] + opens[1] !== 1 || closes[0] + closes[1] !== 1) return '';
    const which = opens[0] === 1 ? 0 : 1;
    if (closes[which] !== 1) return '';
    const open = '<' + TAGS[which] + '>', start = apply(strIndexOf, text, [open]) + open.length;
    const end = apply(strIndexOf, text, ['</' + TAGS[which] + '>']);
    if (end < start) return '';
    const body = apply(trim, apply(strSlice, text, [start, end]), []);
    if (!body || body.length > @MAX_OPERATION_BLOCK@) return '';
    if (apply(strIndexOf, body, ['<本轮执行边界>']) < 0 || apply(strIndexOf, body, ['<操作项>']) < 0) return '';
    return '<本轮操作>' + body + '</本轮操作>';
  }
  const gate = freeze({latestUserText: () => userText, extractOperationBlock});
  const quiet = () => undefined;

  fixed(global, 'Mvu', freeze({events: freeze({COMMAND_PARSED: '@COMMAND_PARSED@'})}));
  fixed(global, 'eventOn', (name, fn) => on(name, fn, false));
  fixed(global, 'eventMakeLast', (name, fn) => on(name, fn, true));
  fixed(global, 'console', freeze({log: quiet, warn: quiet, error: quiet, info: quiet, debug: quiet}));
  fixed(global, '__commandGate', gate);

  // The commands as JSON text, read field by field: a script's toJSON (on any prototype) or a
  // sparse giant array cannot change what Python is told. What is not text becomes null, which
  // Python refuses.
  // Built as parts joined once: QuickJS keeps a long concatenation as a rope, which the Python
  // binding hands over as an opaque value instead of text.
  const isArray = Array.isArray, join = Array.prototype.join;
  const text = value => typeof value === 'string' ? stringify(value) : 'null';
  function viewsText(commands) {
    if (!isArray(commands) || commands.length > @MAX_COMMANDS@) return 'null';
    const parts = ['['];
    for (let i = 0; i < commands.length; i++) {
      const command = commands[i];
      if (i) parts[parts.length] = ',';
      if (command === null || typeof command !== 'object') { parts[parts.length] = 'null'; continue; }
      const args = command.args;
      parts[parts.length] = '{"type":' + text(command.type) + ',"args":';
      if (isArray(args) && args.length <= @MAX_COMMANDS@) {
        parts[parts.length] = '[';
        for (let j = 0; j < args.length; j++) parts[parts.length] = (j ? ',' : '') + text(args[j]);
        parts[parts.length] = ']';
      } else {
        parts[parts.length] = 'null';
      }
      parts[parts.length] = ',"full_match":' + text(command.full_match) + ',"reason":' + text(command.reason) + '}';
    }
    parts[parts.length] = ']';
    return apply(join, parts, ['']);
  }

  // A fingerprint of JSON data: equal before and after the listeners unless they changed the
  // data. The engine's own JSON.stringify is used while no toJSON can be met on the way (none on
  // Object.prototype or Array.prototype, whose prototype is still Object.prototype); else the
  // data is read field by field, a script's toJSON never called. Both write the same text for
  // parsed JSON. State is at most 64 deep.
  const keys = Object.keys, own = Reflect.getOwnPropertyDescriptor;
  const ObjectProto = Object.prototype, ArrayProto = Array.prototype;
  const clean = () => own(ObjectProto, 'toJSON') === undefined && own(ArrayProto, 'toJSON') === undefined
    && getProto(ArrayProto) === ObjectProto;
  const fingerprint = value => clean() ? stringify(value) : plain(value);
  function plain(value) {
    if (value === null || typeof value !== 'object') {
      return typeof value === 'string' ? stringify(value) : String(value);
    }
    let out = isArray(value) ? '[' : '{';
    if (isArray(value)) {
      for (let i = 0; i < value.length; i++) out += (i ? ',' : '') + plain(value[i]);
      return out + ']';
    }
    const names = keys(value);
    for (let i = 0; i < names.length; i++) out += (i ? ',' : '') + stringify(names[i]) + ':' + plain(value[names[i]]);
    return out + '}';
  }

  // Only Python can call this (no script can reach it), so it is never re-entered. An
  // interrupted call runs no finally block: everything it sets is set again by the next call.
  function process(json) {
    const input = parse(json);
    userText = input.userText;
    const before = fingerprint(input.variables);
    try {
      emit('@COMMAND_PARSED@', [input.variables, input.commands, input.text]);
    } catch (error) {
      userText = '';
      if (error === ASYNC) return '{"ok":false,"why":"async"}';
      // QuickJS's allocation failure (a script faking it only loses its own engine).
      const memory = error !== null && typeof error === 'object' && error.message === 'out of memory';
      return memory ? '{"ok":false,"why":"memory"}' : '{"ok":false,"why":"threw"}';
    }
    userText = '';
    if (fingerprint(input.variables) !== before) return '{"ok":false,"why":"baseline"}';
    return apply(join, ['{"ok":true,"commands":', viewsText(input.commands), '}'], ['']);
  }
  return freeze({
    gate: name => fixed(global, name, gate),
    initialized: () => { emit('@INITIALIZED@', []); return listeners.@COMMAND_PARSED@.length; },
    process,
  });
})(globalThis)
""".replace("@INITIALIZED@", INITIALIZED).replace("@COMMAND_PARSED@", COMMAND_PARSED).replace(
    "@MAX_LISTENERS@", str(MAX_LISTENERS)).replace("@MAX_OPERATION_BLOCK@", str(MAX_OPERATION_BLOCK)).replace(
    "@MAX_COMMANDS@", str(MAX_COMMANDS))
