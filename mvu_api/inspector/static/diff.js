// The difference between two points of a chat: two turns of one session, or a turn of this session
// and a turn of a branch (another session of the playthrough), read with `GET /mvu/diff`.

import { h, replace, shown } from './dom.js';
import { roundSnapshot, turnLabel } from './trace.js';

const OPS = { add: 'added', remove: 'removed', replace: 'changed' };

/** The points a session's history offers: the opening (revision 0) and each turn's last state. */
export function pointsOf(history) {
  const turns = [...new Set(history.map((v) => v.action?.turn ?? v.source?.turn).filter(Number.isInteger))]
    .filter((turn) => turn > 0).sort((a, b) => a - b);
  const points = [{ label: 'opening', revision: 0 }];
  for (const turn of turns) {
    const version = roundSnapshot(history.filter((v) => !v.error), turn);
    if (version) points.push({ label: turnLabel(turn), revision: version.revision, turn });
  }
  return points;
}

/** The session's state to compare: its character's instance, else its first. */
async function sideOf(api, sessionId) {
  const records = await api.resources(sessionId);
  const record = records.find((r) => r.id.startsWith('mvu:instance-')) ?? records[0];
  if (!record) return { sessionId, record: null, points: [] };
  return { sessionId, record, points: pointsOf(await api.history(record.id, sessionId)) };
}

function pointSelect(label, side, chosen) {
  const select = h('select', { 'aria-label': label, class: label.toLowerCase().replaceAll(' ', '-') },
    side.points.map((p, i) => h('option', { value: i }, `${p.label} · r${p.revision}`)));
  select.value = String(Math.min(chosen, side.points.length - 1));
  return select;
}

function changeRow(change) {
  const side = (name) => (name in change ? h('pre', {}, shown(change[name])) : h('span', { class: 'label' }, 'Absent'));
  return h('tr', { dataset: { path: change.path, op: change.op } }, h('td', {}, h('code', {}, change.path)),
    h('td', { class: 'op' }, OPS[change.op] ?? change.op), h('td', { class: 'before' }, side('before')),
    h('td', { class: 'after' }, side('after')));
}

/** The compare view of session `sessionId`; `sessions` lists the others it may compare with. */
export function diffView(api, sessionId, sessions) {
  const result = h('div', { class: 'diff-result', 'aria-live': 'polite' });
  const form = h('div', { class: 'controls' }, 'Loading…');
  const node = h('div', { class: 'compare' }, form, result);
  let from = null;
  let to = null;

  const run = async (fromSelect, toSelect) => {
    const a = from.points[Number(fromSelect.value)];
    const b = to.points[Number(toSelect.value)];
    replace(result, h('p', {}, 'Comparing…'));
    try {
      const answer = await api.diff({ id: from.record.id, scope: { authority: 'local', sessionId }, from: String(a.revision),
        to: String(b.revision), ...(to.record.id === from.record.id ? {} : { toId: to.record.id }) });
      replace(result, h('p', { class: 'note' }, `${from.sessionId} ${a.label} (r${answer.from.revision}) → `
        + `${to.sessionId} ${b.label} (r${answer.to.revision}): ${answer.changes.length} changes`),
      answer.changes.length ? h('table', { class: 'diff' }, h('thead', {}, h('tr', {}, h('th', {}, 'Path'),
        h('th', {}, 'Change'), h('th', {}, 'Before'), h('th', {}, 'After'))), h('tbody', {}, answer.changes.map(changeRow)))
        : h('p', { class: 'label' }, 'The two states are the same.'),
      answer.truncated ? h('p', { class: 'note' }, 'Only the first changes are listed.') : null);
    } catch (error) {
      replace(result, h('p', { class: 'alert', role: 'alert' }, `${error.code ?? 'MVU_READ_FAILED'}: ${error.detail ?? error.message}`));
    }
  };

  let fromSelect = null;
  const build = async (otherId) => {
    to = otherId === sessionId ? from : await sideOf(api, otherId);
    if (!from.record || !to.record) {
      replace(form, h('p', { class: 'label' }, 'No state to compare in this session.'));
      return;
    }
    // The "from" choice stays as it was when another session is chosen to compare with.
    fromSelect ??= pointSelect('From', from, Math.max(0, from.points.length - 2));
    const toSelect = pointSelect('To', to, to.points.length - 1);
    const other = h('select', { 'aria-label': 'To session', class: 'to-session' },
      sessions.map((s) => h('option', { value: s.sessionId }, s.sessionId === sessionId ? `${s.sessionId} (this one)`
        : s.sessionId)));
    other.value = otherId;
    other.addEventListener('change', () => build(other.value));
    replace(form, h('label', {}, 'From ', fromSelect), h('label', {}, 'to ', other, ' ', toSelect),
      h('button', { type: 'button', class: 'compare-button', onclick: () => run(fromSelect, toSelect) }, 'Compare'));
  };

  sideOf(api, sessionId).then((side) => { from = side; return build(sessionId); })
    .catch((error) => replace(form, h('p', { class: 'alert', role: 'alert' }, `${error.code ?? 'MVU_READ_FAILED'}: ${error.message}`)));
  return node;
}
