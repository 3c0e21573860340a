// What the page calls the store's internal names: trigger events and command outcomes in words.
// An id without a word is shown as it is (a newer server may send one this page does not know).

const EVENTS = {
  assistant_message_committed: 'reply saved',
  manual_update: 'manual edit',
  card_variable_update: 'card script update',
  inherited_snapshot: 'inherited from the parent session',
  before_model_request: 'prompt built',
  request: 'prompt request',
  opening: 'opening',
};

/** The words for a trigger event's id. */
export function eventWords(id) {
  return EVENTS[id] ?? id ?? 'unknown event';
}

const OUTCOMES = {
  applied: 'applied',
  refused: 'refused',
  ignored: 'ignored',
  possible: 'possible command',
  unrun: 'not run',
};

/** The label of a command outcome's kind: shown as text beside its colour, for those who cannot
 * tell the colours apart. */
export function outcomeWords(kind) {
  return OUTCOMES[kind] ?? kind;
}

const REASONS = {
  unclosed: 'not closed',
  no_terminator: 'no ; after it',
  arguments: 'wrong number of arguments',
  thinking: 'inside a thinking block',
  unknown_op: 'unknown operation',
  unclosed_block: 'JSONPatch block not closed',
  unreadable_block: 'JSONPatch block not readable',
  no_op: 'no change',
  stripped: 'dropped by the schema',
  looks_like_command: 'looks like a command',
};

/** Why a command was ignored, in words. */
export function reasonWords(reason) {
  return REASONS[reason] ?? reason;
}
