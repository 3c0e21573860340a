// A turn's reply with each command marked by its outcome, and the commands that did not apply
// listed with their messages. The reply is untrusted text: it goes in as text nodes only.
//
// A version keeps the outcome of every command that did not apply (`update_diagnostics`) and the
// changes of those that did (`delta_data`); the reply read (`GET /inspector/sessions/{id}/turns/
// {turn}/reply`) says where each command the store read stands. `replyOutcomes` joins the two.

import { h, replace, shown } from './dom.js';
import { outcomeWords, reasonWords } from './words.js';

/** A mark with outcomes of several kinds is drawn as its most telling one. */
const SEVERITY = ['refused', 'ignored', 'unrun', 'possible', 'applied'];

function place(outcome) {
  return `${outcome.start}:${outcome.patchIndex ?? ''}`;
}

function within(change, path) {
  return path === '' || change.path === path || change.path.startsWith(`${path}/`);
}

/** Every command of `reply` with its outcome in `version`, in text order. A version that lists its
 * commands (`version.commands`) is taken as it is; otherwise a command the version has no outcome
 * for applied if the version records a change of its path, else it is `unrun`. */
export function replyOutcomes(version, reply) {
  const byPlace = (a, b) => a.start - b.start || (a.patchIndex ?? 0) - (b.patchIndex ?? 0);
  const diagnostics = Array.isArray(version?.variables?.update_diagnostics) ? version.variables.update_diagnostics : [];
  if (Array.isArray(version?.commands)) {
    // The history's commands are the reply's commands; its near-misses are only diagnostics.
    return [...version.commands, ...diagnostics.filter((d) => d.kind === 'possible')].sort(byPlace);
  }
  const scanned = reply?.commands ?? [];
  if (!version || version.error) {
    const message = version ? `the turn failed: ${failureLine(version)}; no command ran` : 'this state recorded no version for this reply';
    return scanned.map((c) => ({ ...c, kind: 'unrun', message }));
  }
  const known = new Set(diagnostics.map(place));
  const changes = (version.variables?.delta_data?.changes ?? []).filter((c) => typeof c?.path === 'string');
  const used = new Set();
  const derived = scanned.filter((c) => !known.has(place(c))).map((command) => {
    const at = changes.findIndex((change, i) => !used.has(i) && within(change, command.path));
    if (at < 0) return { ...command, kind: 'unrun', message: `no change of ${command.path || 'stat_data'} is recorded` };
    used.add(at);
    const change = changes[at];
    const outcome = { ...command, kind: 'applied', path: change.path };
    if ('previous' in change) outcome.before = change.previous;
    if ('value' in change) outcome.after = change.value;
    return outcome;
  });
  return [...diagnostics, ...derived].sort(byPlace);
}

/** A failed version's failure in words: its stored diagnostic's message, else its code alone. */
function failureLine(version) {
  const failure = (version.variables?.update_diagnostics ?? []).find?.((d) => d?.kind === 'refused' && d.code === version.error);
  return failure?.message ? `${failure.message} (${version.error})` : String(version.error);
}

/** Where `outcome` stands in `text`: its own span when the text there is its command; inside its
 * span (a JSON Patch operation within its block); else the first place from `from` on. */
export function locate(text, outcome, from = 0) {
  const { start, end } = outcome;
  const command = String(outcome.command ?? '').replace(/…$/, '');
  if (!command) return null;
  if (Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= text.length && start < end) {
    const span = text.slice(start, end);
    if (span.startsWith(command)) return [start, start + command.length];
    const inside = span.indexOf(command);
    if (inside >= 0) return [start + inside, start + inside + command.length];
  }
  const found = text.indexOf(command, from);
  return found < 0 ? null : [found, found + command.length];
}

/** `text` cut into plain runs and marks, each mark with the outcomes it stands for (overlapping
 * ones share a mark). Outcomes that cannot be found in the text are in `unplaced`. */
export function segments(text, outcomes) {
  const marks = [];
  const unplaced = [];
  let from = 0;
  const commandStarts = outcomes.filter((o) => o.kind !== 'possible' && Number.isInteger(o.start)).map((o) => o.start);
  for (const outcome of outcomes) {
    const range = locate(text, outcome, from);
    if (!range) { unplaced.push(outcome); continue; }
    if (outcome.kind === 'possible') {
      // A near-miss is shown to its line's end: it stops where a real command of that line starts.
      const next = commandStarts.filter((at) => at > range[0] && at < range[1]);
      if (next.length) range[1] = Math.min(...next);
    }
    from = range[1];
    const last = marks[marks.length - 1];
    if (last && range[0] < last.end) {
      last.end = Math.max(last.end, range[1]);
      last.outcomes.push(outcome);
    } else {
      marks.push({ start: range[0], end: range[1], outcomes: [outcome] });
    }
  }
  marks.sort((a, b) => a.start - b.start);
  const parts = [];
  let at = 0;
  for (const mark of marks) {
    if (mark.start < at) { mark.outcomes.forEach((o) => unplaced.push(o)); continue; }
    if (mark.start > at) parts.push({ text: text.slice(at, mark.start) });
    parts.push({ text: text.slice(mark.start, mark.end), outcomes: mark.outcomes,
      kind: SEVERITY.find((k) => mark.outcomes.some((o) => o.kind === k)) ?? mark.outcomes[0].kind });
    at = mark.end;
  }
  if (at < text.length) parts.push({ text: text.slice(at) });
  return { parts, unplaced };
}

/** One outcome in a line of words: what it is, where, why. */
export function outcomeLine(outcome) {
  const where = outcome.path === '' ? 'stat_data' : outcome.path;
  let line = [outcomeWords(outcome.kind), outcome.op, where].filter(Boolean).join(' ');
  if ('before' in outcome || 'after' in outcome) {
    const side = (name) => (name in outcome ? shown(outcome[name]) : '(none)');
    line += `: ${side('before')} → ${side('after')}`;
  }
  const why = outcome.message ?? (outcome.reason ? reasonWords(outcome.reason) : null);
  if (why) line += ` — ${why}`;
  if (outcome.code) line += ` (${outcome.code})`;
  else if (outcome.reason && outcome.message) line += ` (${reasonWords(outcome.reason)})`;
  return line;
}

function detailOf(outcomes) {
  return outcomes.map((o) => h('div', { class: `outcome ${o.kind}` }, h('span', { class: 'tag' }, outcomeWords(o.kind)),
    ' ', h('code', {}, o.command ?? ''), h('div', {}, outcomeLine(o))));
}

/** The reply of a turn as one resource's version saw it. `reply` null: the turn has no reply. */
export function storyView(reply, version) {
  const node = h('section', { class: 'story' }, h('h5', {}, 'Reply and its commands'));
  if (!reply) {
    node.append(h('p', { class: 'label' }, 'No reply was read in this turn.'));
    return node;
  }
  const outcomes = replyOutcomes(version, reply);
  const { parts, unplaced } = segments(reply.text, outcomes);
  const detail = h('div', { class: 'outcome-detail', 'aria-live': 'polite' });
  const show = (mark, part) => {
    for (const other of node.querySelectorAll('mark[aria-pressed="true"]')) other.setAttribute('aria-pressed', 'false');
    mark.setAttribute('aria-pressed', 'true');
    replace(detail, detailOf(part.outcomes));
  };
  const text = h('div', { class: 'reply' }, parts.flatMap((part) => {
    if (!part.outcomes) return part.text;
    const mark = h('mark', { class: `cmd ${part.kind}`, tabindex: 0, role: 'button', 'aria-pressed': 'false',
      dataset: { kind: part.kind }, title: part.outcomes.map(outcomeLine).join('\n') }, part.text);
    mark.addEventListener('click', () => show(mark, part));
    mark.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); show(mark, part); }
    });
    const kinds = [...new Set(part.outcomes.map((o) => outcomeWords(o.kind)))].join(' + ');
    return [mark, h('span', { class: `tag ${part.kind}` }, kinds)];
  }));
  if (version?.error) node.append(h('p', { class: 'alert failure' }, `The turn failed: ${failureLine(version)}. No command of the reply ran.`));
  else if (reply.error) node.append(h('p', { class: 'alert' }, `The reply could not be read: ${reply.error}`));
  node.append(text, detail);
  const missed = outcomes.filter((o) => o.kind !== 'applied');
  let none = 'Every command applied.';
  if (version?.error) none = 'No command ran.';
  else if (!outcomes.length) none = 'The reply has no command.';
  const counted = version?.variables?.update_diagnostics?.find?.((d) => d.kind === 'possible' && d.total)?.total;
  node.append(h('h5', {}, 'Refused, ignored and possible commands'), missed.length
    ? h('ul', { class: 'missed' }, missed.map((o) => h('li', { class: `outcome ${o.kind}`, dataset: { kind: o.kind } },
      h('span', { class: `tag ${o.kind}` }, outcomeWords(o.kind)), ' ', h('code', {}, o.command ?? ''), ' ',
      h('span', { class: 'why' }, outcomeLine(o)))))
    : h('p', { class: 'label' }, none));
  if (counted && counted > missed.filter((o) => o.kind === 'possible').length) {
    node.append(h('p', { class: 'note' }, `${counted} possible commands in all; the first are listed.`));
  }
  if (unplaced.length) node.append(h('p', { class: 'note' }, `${unplaced.length} of them could not be found in the text.`));
  return node;
}
