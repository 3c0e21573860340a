// One resource inside one turn: the state selector, the variable table (20 rows a page, a path
// filter, the inline edit of the current state), the turn's reply with its commands' outcomes
// and the turn's trigger table.

import { h, replace, shown } from './dom.js';
import { outcomeLine, storyView } from './story.js';
import {
  editVariable, eventName, pageOf, rowStatus, rowsAt, roundEvents, roundSnapshot, turnLabel, versionTurn,
} from './trace.js';
import { eventWords } from './words.js';

const CURRENT = 'current';

function inRound(version, turn) {
  const at = versionTurn(version);
  return at === turn || (turn === 1 && at === 0);
}

function kindLabel(version) {
  if (version.inherited) return 'inherited snapshot';
  if (version.error) return `failed (${version.error})`;
  return version.kind;
}

/** Where a row's value came from, in words. */
function updateLabel(updated) {
  if (!updated) return 'not recorded';
  if (updated.opening) return 'set by the opening';
  if (updated.inherited) return 'inherited from the parent session';
  const by = { manual: 'manual edit', card: 'card script', import: 'import' }[updated.kind];
  return by ? `${turnLabel(updated.turn)} · ${by}` : turnLabel(updated.turn);
}

function cell(present, known, value) {
  if (!known) return h('span', { class: 'label' }, 'Not recorded');
  if (!present) return h('span', { class: 'label' }, 'Absent');
  return h('pre', {}, shown(value));
}

export class ResourcePanel {
  /** `session`: {api, sessionId, isLatest(turn), isRunning()}; `record`: the resource as listed;
   * `reply`: the turn's reply read, or null. */
  constructor(session, turn, record, history, facts, reply = null) {
    this.session = session;
    this.turn = turn;
    this.record = record;
    this.reply = reply;
    this.history = history;
    this.facts = facts;
    this.round = history.filter((v) => inRound(v, turn));
    this.offerCurrent = session.isLatest(turn) && !record.legacy && !record.sourceError
      && record.capabilities?.edit !== false;
    this.mode = this.offerCurrent ? CURRENT : '';
    this.current = null; // {record, etag} once read
    this.currentError = null;
    this.draft = null; // {row, text, operationId}
    this.saving = false;
    this.filter = '';
    this.page = 0;
    this.notice = '';
    this.alert = '';
    this.controller = new AbortController();
    this.node = this.build();
    this.renderAll();
    if (this.mode === CURRENT) this.readCurrent();
  }

  // -- what is shown ------------------------------------------------------------------------

  view() {
    if (this.mode === CURRENT) {
      if (!this.current) return null;
      const content = this.current.record.content;
      const matching = this.history.filter((v) => v.revision === this.current.record.revision);
      const selected = matching.length ? matching[matching.length - 1] : { key: null };
      return { content, rows: rowsAt(content, this.history, selected), editable: this.editable(), historical: false };
    }
    const version = this.mode === '' ? roundSnapshot(this.history, this.turn)
      : this.history.find((v) => v.key === this.mode);
    if (!version) return { content: null, rows: [], editable: false, historical: true, missing: true };
    return { content: version.variables, rows: rowsAt(version.variables, this.history, version), editable: false,
      historical: true };
  }

  editable() {
    return this.mode === CURRENT && Boolean(this.current) && this.session.isLatest(this.turn)
      && !this.session.isRunning();
  }

  canSave() {
    return this.editable() && !this.saving;
  }

  busy() {
    return Boolean(this.draft) || this.saving;
  }

  // -- building and rendering ---------------------------------------------------------------

  build() {
    this.select = h('select', { class: 'state', 'aria-label': 'State', onchange: () => this.choose(this.select.value) });
    this.filterInput = h('input', { class: 'filter', type: 'search', placeholder: 'Filter paths', 'aria-label': 'Filter',
      oninput: () => { this.filter = this.filterInput.value; this.page = 0; this.renderTable(); } });
    this.refreshButton = h('button', { type: 'button', class: 'refresh', onclick: () => this.refresh() }, 'Refresh');
    this.messages = h('div', { class: 'messages' });
    this.tbody = h('tbody');
    this.prev = h('button', { type: 'button', class: 'prev', onclick: () => { this.page -= 1; this.renderTable(); } },
      'Previous');
    this.next = h('button', { type: 'button', class: 'next', onclick: () => { this.page += 1; this.renderTable(); } },
      'Next');
    this.pageLabel = h('span', { class: 'page-label' });
    this.events = h('tbody');
    this.story = h('div', { class: 'story-slot' });
    const record = this.record;
    return h('section', { class: 'resource', dataset: { id: record.id } },
      h('h4', {}, record.name ?? record.id, ' ', h('code', {}, record.id),
        ' ', h('span', { class: 'badge' }, record.managementMode ?? '')),
      record.sourceError ? h('p', { class: 'banner error' }, `Source error: ${record.sourceError} (read-only)`) : null,
      record.legacy ? h('p', { class: 'banner' }, 'Legacy state: read-only') : null,
      h('div', { class: 'controls' }, this.select, this.filterInput, this.refreshButton),
      this.messages,
      h('table', { class: 'variables' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Path'), h('th', {}, 'Value'), h('th', {}, 'Type'),
          h('th', {}, 'Last update'), h('th', {}, ''))),
        this.tbody),
      h('div', { class: 'pager' }, this.prev, this.pageLabel, this.next),
      this.story,
      h('h5', {}, 'Triggers'),
      h('table', { class: 'events' },
        h('thead', {}, h('tr', {}, h('th', {}, 'Event / turn'), h('th', {}, 'Result'), h('th', {}, 'Before → after'),
          h('th', {}, 'Reason / diagnostics'))),
        this.events),
    );
  }

  renderAll() {
    this.renderSelect();
    this.renderTable();
    this.renderStory();
    this.renderEvents();
  }

  /** The reply's story as this resource's version of it tells it (the turn's last version made
   * from that very message: an edit or a card write made after it names the message too, and
   * tells nothing of the reply). */
  renderStory() {
    const seq = this.reply?.messageSeq;
    const made = this.round.filter((v) => seq !== undefined && v.source?.messageSeq === seq
      && v.kind !== 'manual' && v.kind !== 'card');
    replace(this.story, storyView(this.reply, made.length ? made[made.length - 1] : null));
  }

  renderSelect() {
    const options = [];
    if (this.offerCurrent) options.push(h('option', { value: CURRENT }, 'Current variables'));
    options.push(h('option', { value: '' }, `Last recorded state of ${turnLabel(this.turn)}`));
    for (const v of this.round) {
      options.push(h('option', { value: v.key }, `r${v.revision} · ${turnLabel(versionTurn(v))} · ${kindLabel(v)}`));
    }
    replace(this.select, options);
    this.select.value = this.mode;
  }

  renderMessages() {
    const lines = [];
    const view = this.view();
    if (this.mode === CURRENT && this.currentError) {
      lines.push(h('p', { class: 'alert', role: 'alert' }, `${this.currentError}: current state unavailable, not editable`));
    } else if (view?.historical) {
      lines.push(h('p', { class: 'note history' }, view.missing ? `No state was recorded in ${turnLabel(this.turn)}.`
        : 'Recorded history: read-only.'));
    } else if (this.mode === CURRENT && this.current && !view.editable) {
      lines.push(h('p', { class: 'note stopped' }, this.session.isRunning()
        ? 'A turn is running: saving waits until it ends (a draft is kept).'
        : 'A newer turn exists: this view can no longer be saved.'));
    }
    if (this.notice) lines.push(h('p', { class: 'notice', role: 'status' }, this.notice));
    if (this.alert) lines.push(h('p', { class: 'alert', role: 'alert' }, this.alert));
    replace(this.messages, lines);
  }

  renderTable() {
    this.renderMessages();
    const view = this.view();
    const busy = this.busy();
    this.select.disabled = busy;
    this.filterInput.disabled = busy;
    if (!view) {
      replace(this.tbody, h('tr', {}, h('td', { colspan: 5 }, this.currentError ? '' : 'Loading…')));
      this.prev.disabled = this.next.disabled = true;
      this.pageLabel.textContent = '';
      return;
    }
    const paged = pageOf(view.rows, this.filter, this.page);
    this.page = paged.page;
    const rows = paged.rows.map((row) => this.renderRow(row, view));
    if (!rows.length) rows.push(h('tr', { class: 'empty' }, h('td', { colspan: 5 }, 'No matching variables')));
    replace(this.tbody, rows);
    this.prev.disabled = busy || paged.page === 0 || paged.count === 0;
    this.next.disabled = busy || paged.page >= paged.pages - 1 || paged.count === 0;
    this.pageLabel.textContent = `Page ${paged.count ? paged.page + 1 : 0} / ${paged.count ? paged.pages : 0} · `
      + `${paged.count} rows · ${paged.size} a page`;
  }

  renderRow(row, view) {
    const editing = this.draft?.row.path === row.path;
    let value;
    let action = null;
    if (editing) {
      const area = h('textarea', { class: 'draft', 'aria-label': `Value of ${row.path}`, rows: 3,
        oninput: () => { this.draft = { ...this.draft, text: area.value, operationId: crypto.randomUUID() }; } });
      area.value = this.draft.text;
      value = area;
      action = [
        h('button', { type: 'button', class: 'save', disabled: !this.canSave(), onclick: () => this.save() },
          this.saving ? 'Saving…' : 'Save'),
        h('button', { type: 'button', class: 'cancel', disabled: this.saving, onclick: () => this.cancel() }, 'Cancel'),
      ];
    } else {
      value = h('pre', {}, shown(row.value));
      if (view.editable || (this.mode === CURRENT && this.current)) {
        action = h('button', { type: 'button', class: 'edit', disabled: !view.editable || this.busy(),
          onclick: () => this.edit(row) }, 'Edit');
      }
    }
    const updated = updateLabel(row.updated);
    return h('tr', { dataset: { path: row.path } }, h('td', { class: 'path' }, h('code', {}, row.path)),
      h('td', { class: 'value' }, value), h('td', { class: 'type' }, row.type), h('td', { class: 'updated' }, updated),
      h('td', { class: 'action' }, action));
  }

  renderEvents() {
    const rows = roundEvents(this.history, this.facts, this.turn).map((row) => {
      const status = rowStatus(row);
      const replay = row.detail === 'idempotent-replay' && !row.version;
      const changes = row.comparisonAvailable ? row.changes.map((c) => h('div', { class: 'change' },
        h('code', {}, c.path), ' ', cell(c.beforePresent, c.beforeKnown, c.before), ' → ',
        cell(c.afterPresent, true, c.after)))
        : [h('span', { class: 'label' }, row.on === 'inherited_snapshot' ? 'Inherited snapshot: before not recorded'
          : 'Not recorded')];
      const result = replay ? `${status} · replay, no new commit` : (row.revision === undefined ? status
        : `${status} · r${row.revision}`);
      const missed = (row.diagnostics ?? []).filter((d) => d.kind !== 'possible');
      return h('tr', { class: `event ${status}`, dataset: { status, on: eventName(row) } },
        h('td', {}, eventWords(eventName(row)), ' · ', turnLabel(row.turn)),
        h('td', { class: 'result' }, result),
        h('td', {}, row.version || row.comparisonAvailable ? changes : ''),
        h('td', { class: 'reason' }, row.reason ?? '', missed.map((d) => h('div', { class: `diagnostics ${d.kind}` },
          outcomeLine(d)))));
    });
    if (!rows.length) rows.push(h('tr', { class: 'empty' }, h('td', { colspan: 4 }, 'No triggers recorded')));
    replace(this.events, rows);
  }

  // -- actions ------------------------------------------------------------------------------

  choose(mode) {
    this.mode = mode;
    this.page = 0;
    this.notice = this.alert = '';
    if (mode === CURRENT && !this.current) this.readCurrent();
    this.renderTable();
  }

  async readCurrent() {
    try {
      const read = await this.session.api.resource(this.record.id, this.session.sessionId,
        { signal: this.controller.signal });
      this.current = { record: read.value, etag: read.etag };
      this.currentError = null;
    } catch (error) {
      if (error.name === 'AbortError') return;
      this.current = null;
      this.currentError = error.code ?? String(error);
    }
    this.renderTable();
  }

  async refresh() {
    const { api, sessionId } = this.session;
    const signal = this.controller.signal;
    try {
      // A turn that was running when the panel opened has its reply once it ends.
      [this.history, this.facts, this.reply] = await Promise.all([api.history(this.record.id, sessionId, { signal }),
        api.facts(this.record.id, sessionId, { signal }), this.reply ?? api.reply(sessionId, this.turn, { signal })]);
    } catch (error) {
      if (error.name === 'AbortError') return;
      this.alert = `${error.code ?? 'MVU_READ_FAILED'}: ${error.detail ?? error.message}`;
    }
    this.round = this.history.filter((v) => inRound(v, this.turn));
    this.renderSelect();
    this.renderStory();
    this.renderEvents();
    if (this.mode === CURRENT) await this.readCurrent();
    else this.renderTable();
  }

  /** A poll of the current state (the session calls it): an idle view follows a newer revision; a
   * view with a draft says the draft is now stale instead. */
  async poll() {
    if (this.mode !== CURRENT || !this.current || this.saving) return;
    const read = await this.session.api.resource(this.record.id, this.session.sessionId,
      { signal: this.controller.signal, etag: this.current.etag });
    if (read.notModified || read.value.revision <= this.current.record.revision) return;
    if (this.draft) {
      this.notice = `Source updated to r${read.value.revision}; the draft is still based on r${this.current.record.revision}.`;
      this.renderMessages();
      return;
    }
    await this.refresh();
  }

  edit(row) {
    this.draft = { row, text: shown(row.value), operationId: crypto.randomUUID() };
    this.notice = this.alert = '';
    this.renderTable();
    this.tbody.querySelector('textarea')?.focus();
  }

  cancel() {
    this.draft = null;
    this.alert = this.notice = '';
    this.refresh();
  }

  async save() {
    if (!this.canSave() || !this.draft) return;
    const { row, text, operationId } = this.draft;
    const record = this.current.record;
    let content;
    try {
      content = editVariable(record.content, row.parts, text);
    } catch (error) {
      this.alert = `Not sent: ${error.message}`;
      this.renderMessages();
      return;
    }
    this.saving = true;
    this.alert = '';
    this.renderTable();
    try {
      const receipt = await this.session.api.update({
        id: record.id, scope: { authority: 'local', sessionId: this.session.sessionId }, content,
        expectedRevision: record.currentRevision ?? record.revision, operationId,
      }, { signal: this.controller.signal });
      this.saving = false;
      this.draft = null;
      // The validated result, as the server stored it, until the refresh below reads it again.
      this.current = { record: { ...record, content: receipt.content, revision: receipt.revision,
        currentRevision: receipt.revision }, etag: null };
      this.notice = `Saved: source revision r${receipt.revision}.`;
      this.renderTable();
      await this.refresh();
    } catch (error) {
      this.saving = false;
      if (error.name === 'AbortError') return;
      this.alert = error.code === 'REVISION_CONFLICT'
        ? 'Revision conflict: the state changed since it was read. The draft is kept; copy it, then Cancel to read '
          + 'the current state.'
        : `${error.code ?? 'MVU_ERROR'}: ${error.detail ?? error.message}`;
      this.renderTable();
    }
  }

  /** The session changed what runs or what is latest: re-render the controls that depend on it. */
  update() {
    this.renderTable();
  }

  dispose() {
    this.controller.abort();
  }
}
