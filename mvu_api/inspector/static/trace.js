// What the inspector shows, derived from the trace routes' answers: the variable rows of a state,
// the changes between two states, the versions and trigger rows of one turn. Pure functions, no
// DOM, so the browser tests can call them directly.

const UNSAFE = new Set(['__proto__', 'prototype', 'constructor']);
export const PAGE_SIZE = 20;

/** One JSON-pointer reference token: `~` becomes `~0`, then `/` becomes `~1`. */
export function escapePart(part) {
  return String(part).replaceAll('~', '~0').replaceAll('/', '~1');
}

export function jsonType(value) {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  return typeof value;
}

function isBranch(value) {
  return value !== null && typeof value === 'object' && Object.keys(value).length > 0;
}

/** The leaves of `stat_data`, depth first in key order; an empty object or array is a leaf. */
export function flattenVariables(value, parts = [], rows = []) {
  if (isBranch(value)) {
    for (const key of Object.keys(value)) flattenVariables(value[key], [...parts, key], rows);
    return rows;
  }
  rows.push({ path: '/stat_data' + parts.map((p) => '/' + escapePart(p)).join(''), parts, value,
    type: jsonType(value) });
  return rows;
}

function leafMap(value) {
  return new Map(flattenVariables(value).map((row) => [row.path, row]));
}

function sameJson(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** The leaves that differ between two states, the earlier state's paths first. When the earlier
 * state is unknown (`available` false) every leaf of the later one is listed, `beforeKnown` false. */
export function variableChanges(before, after, available = true) {
  const old = available ? leafMap(before) : new Map();
  const now = leafMap(after);
  const paths = [...old.keys(), ...[...now.keys()].filter((p) => !old.has(p))];
  const changes = [];
  for (const path of paths) {
    const a = old.get(path);
    const b = now.get(path);
    if (available && a && b && sameJson(a.value, b.value)) continue;
    changes.push({ path, beforeKnown: available, beforePresent: Boolean(a), afterPresent: Boolean(b),
      before: a?.value, after: b?.value });
  }
  return changes;
}

/** A copy of `content` whose `stat_data` leaf at `parts` holds the JSON `text`; the rest of the
 * envelope (the schema too) is left as it was. Throws before anything is sent. */
export function editVariable(content, parts, text) {
  const value = JSON.parse(text);
  if (parts.some((part) => UNSAFE.has(part))) throw new Error(`unsafe path part in ${parts.join('/')}`);
  const copy = structuredClone(content);
  if (parts.length === 0) {
    copy.stat_data = value;
    return copy;
  }
  let node = copy.stat_data;
  for (const part of parts.slice(0, -1)) {
    if (node === null || typeof node !== 'object' || !Object.hasOwn(node, part)) {
      throw new Error('Variable path changed');
    }
    node = node[part];
  }
  const last = parts[parts.length - 1];
  if (node === null || typeof node !== 'object' || !Object.hasOwn(node, last)) throw new Error('Variable path changed');
  node[last] = value;
  return copy;
}

/** The turn a version belongs to (a manual edit's recorded action turn, else its source's). */
export function versionTurn(version) {
  return version.action?.turn ?? version.source?.turn;
}

function inRound(turnOf, turn) {
  return turnOf === turn || (turn === 1 && turnOf === 0);
}

/** The last version recorded in `turn`, or null: never the current state instead. */
export function roundSnapshot(versions, turn) {
  for (let i = versions.length - 1; i >= 0; i -= 1) if (versionTurn(versions[i]) === turn) return versions[i];
  return null;
}

/** Where each leaf of `content` last got its value, over the versions up to `selected`: the turn
 * and kind of the version that last changed it; else `{opening: true}` when the history reaches
 * back to the opening (every version knows its before), `{inherited: true}` when it starts with a
 * branch's inherited snapshot, or null (not recorded). */
export function rowsAt(content, versions, selected) {
  const boundary = selected ? versions.findIndex((v) => v.key === selected.key) : versions.length - 1;
  const considered = versions.slice(0, boundary + 1);
  const updated = new Map();
  let origin = considered[0]?.inherited ? { inherited: true } : { opening: true };
  for (const version of considered) {
    if (version.error) continue;
    if (!version.beforeAvailable) {
      if (!version.inherited) origin = null;
      continue;
    }
    for (const change of variableChanges(version.before, version.variables?.stat_data)) {
      updated.set(change.path, { ...version.source, turn: versionTurn(version), kind: version.kind });
    }
  }
  return flattenVariables(content?.stat_data).map((row) => ({ ...row, updated: updated.get(row.path) ?? origin }));
}

export function turnLabel(turn) {
  if (turn === 0) return 'opening';
  if (Number.isInteger(turn)) return `turn ${turn}`;
  return 'not recorded';
}

function versionEventId(version) {
  return version.operationId ?? version.key;
}

function versionOn(version) {
  if (version.inherited || version.source?.inherited) return 'inherited_snapshot';
  if (version.kind === 'card' || version.source?.card) return 'card_variable_update';
  if (version.kind === 'manual' || version.source?.manual) return 'manual_update';
  return 'assistant_message_committed';
}

/** The commands a version did not apply, with their outcomes. A failed version's own diagnostic
 * is its failure (its code, no place in the reply); one written before failures kept theirs
 * carries an earlier version's diagnostics along, which are not shown. */
function diagnosticsOf(version) {
  const found = Array.isArray(version.variables?.update_diagnostics) ? version.variables.update_diagnostics : [];
  if (!version.error) return found;
  return found.filter((d) => d?.kind === 'refused' && d.code === version.error && !('start' in d));
}

/** The trigger rows of one turn, newest first: facts grouped per attempt (a new `started` begins a
 * new attempt of the same event), each version attached to the attempt that committed it. */
export function roundEvents(versions, facts, turn) {
  const groups = [];
  for (const fact of facts) {
    if (!inRound(fact.turn, turn)) continue;
    let group = null;
    for (let i = groups.length - 1; i >= 0; i -= 1) {
      if (groups[i].eventId === fact.eventId) { group = groups[i]; break; }
    }
    if (!group || fact.phase === 'started') {
      group = { eventId: fact.eventId, phases: new Set(), changes: [], comparisonAvailable: false };
      groups.push(group);
    }
    const earlier = group.reason;
    Object.assign(group, fact);
    group.phases.add(fact.phase);
    group.reason = fact.reason ?? (['failed', 'skipped'].includes(fact.phase) ? fact.detail : undefined) ?? earlier;
  }
  for (const version of versions) {
    const turnOf = versionTurn(version);
    if (!inRound(turnOf, turn)) continue;
    const eventId = versionEventId(version);
    const wanted = version.error ? ['failed'] : ['completed', 'applied'];
    let row = null;
    for (let i = groups.length - 1; i >= 0; i -= 1) {
      const g = groups[i];
      if (g.eventId === eventId && !g.version && g.detail !== 'idempotent-replay'
          && (g.revision === undefined || g.revision === version.revision)
          && wanted.some((phase) => g.phases.has(phase))) { row = g; break; }
    }
    if (!row) {
      row = { eventId, phases: new Set(), changes: [], comparisonAvailable: false };
      groups.push(row);
    }
    Object.assign(row, {
      version, on: versionOn(version), turn: turnOf, revision: version.revision,
      // The refusal reason and the commands the declaration refused, apart (the stored envelope
      // carries its last diagnostics along, so they would hide a later skip's reason).
      reason: version.error ?? row.reason,
      diagnostics: diagnosticsOf(version),
      changes: version.beforeAvailable ? variableChanges(version.before, version.variables?.stat_data) : [],
      comparisonAvailable: Boolean(version.beforeAvailable),
    });
  }
  return groups.reverse();
}

/** What happened to an attempt: failed, skipped, applied, completed, triggered, started; a version
 * no fact tells of is inherited or saved; else unknown. */
export function rowStatus(row) {
  if (row.phases.has('failed') || row.version?.error) return 'failed';
  for (const phase of ['skipped', 'applied', 'completed', 'triggered']) if (row.phases.has(phase)) return phase;
  if (row.phases.size) return 'started';
  if (row.version) return row.version.inherited ? 'inherited' : 'saved';
  return 'unknown';
}

export function eventName(row) {
  return row.detail === 'dsh-request-observed' ? 'request' : (row.on ?? 'unknown');
}

/** Rows whose path contains `filter` (any case), and the page `page` (0-based) of them. */
export function pageOf(rows, filter, page, size = PAGE_SIZE) {
  const needle = filter.trim().toLowerCase();
  const matching = needle ? rows.filter((row) => row.path.toLowerCase().includes(needle)) : rows;
  const pages = Math.max(1, Math.ceil(matching.length / size));
  const at = Math.min(Math.max(0, page), pages - 1);
  return { rows: matching.slice(at * size, (at + 1) * size), page: at, pages, count: matching.length, size };
}
