// The inspector page: sign-in, the sessions, and per session two collapsed views (its numbers
// over the turns, a comparison of two points) and per turn a collapsed "variables and changes"
// section; each reads the trace routes only once it is opened.

import { createApi } from './api.js';
import { chartView } from './chart.js';
import { diffView } from './diff.js';
import { h, replace } from './dom.js';
import { ResourcePanel } from './panel.js';
import { signedInCsrf, signInForm, signOutButton } from './signin.js';
import { turnLabel } from './trace.js';

const POLL_MS = 3000;
const main = document.querySelector('main');

/** A collapsed section whose body `load()` makes (a node, or a promise of nodes) when first opened. */
function lazy(name, title, load) {
  const body = h('div', { class: 'body' });
  const details = h('details', { class: name }, h('summary', {}, title), body);
  let loaded = false;
  details.addEventListener('toggle', async () => {
    if (!details.open || loaded) return;
    loaded = true;
    replace(body, h('p', {}, 'Loading…'));
    try {
      replace(body, await load());
    } catch (error) {
      replace(body, h('p', { class: 'alert', role: 'alert' }, `${error.code ?? 'MVU_READ_FAILED'}: ${error.message}`));
    }
  });
  return details;
}

/** One session: its turns, newest first, each with a collapsed section per resource. */
class SessionView {
  constructor(api, sessionId, sessions) {
    this.api = api;
    this.sessionId = sessionId;
    this.turns = [];
    this.runningTurn = null;
    this.panels = new Set();
    this.sections = new Map();
    this.list = h('div', { class: 'turns' });
    this.node = h('div', { class: 'session', dataset: { session: sessionId } },
      h('h2', {}, 'Session ', h('code', {}, sessionId)),
      lazy('chart', 'Numbers over the turns', () => this.charts()),
      lazy('compare', 'Compare two turns or branches', () => diffView(api, sessionId, sessions)),
      this.list);
    this.timer = null;
  }

  /** Each state's numeric variables over the turns; a point opens its turn. */
  async charts() {
    const records = await this.api.resources(this.sessionId);
    const blocks = await Promise.all(records.map(async (record) => h('div', { class: 'resource-charts',
      dataset: { id: record.id } }, h('h4', {}, record.name ?? record.id),
    chartView(await this.api.history(record.id, this.sessionId), (turn) => this.openTurn(turn)))));
    return blocks.length ? blocks : h('p', {}, 'This session has no state yet.');
  }

  /** Show turn `turn` (the opening belongs to turn 1) with its variables open. */
  openTurn(turn) {
    const section = this.sections.get(Math.max(1, turn)) ?? this.sections.get(turn);
    if (!section) return;
    section.details.open = true;
    section.node.scrollIntoView({ block: 'start' });
    section.details.querySelector('summary').focus();
  }

  lastTurn() {
    return this.turns.length ? this.turns[this.turns.length - 1].turn : 1;
  }

  isLatest(turn) { return turn === this.lastTurn(); }

  isRunning() { return this.runningTurn !== null; }

  async load() {
    await this.readTurns();
    this.timer = setInterval(() => this.poll(), POLL_MS);
  }

  async readTurns() {
    const answer = await this.api.turns(this.sessionId);
    const before = this.lastTurn();
    const wasRunning = this.runningTurn;
    this.turns = answer.turns;
    this.runningTurn = answer.runningTurn;
    const shown = this.turns.length ? this.turns : [{ turn: 1, running: false, end: null, opening: true }];
    for (const turn of shown) {
      if (!this.sections.has(turn.turn)) this.addSection(turn);
      else this.label(turn);
    }
    if (before !== this.lastTurn() || wasRunning !== this.runningTurn) for (const panel of this.panels) panel.update();
  }

  label(turn) {
    const section = this.sections.get(turn.turn);
    const state = turn.opening ? 'no turn yet' : turn.running ? 'running' : `ended: ${turn.end ?? 'unknown'}`;
    replace(section.title, turnLabel(turn.turn), ' · ', state);
    section.node.dataset.running = String(Boolean(turn.running));
  }

  addSection(turn) {
    const title = h('h3', {});
    const body = h('div', { class: 'body' });
    const details = h('details', { class: 'changes' }, h('summary', {}, 'Variables and changes'), body);
    const node = h('article', { class: 'turn', dataset: { turn: turn.turn } }, title, details);
    const section = { node, title, details, body, loaded: false };
    this.sections.set(turn.turn, section);
    details.addEventListener('toggle', () => {
      if (details.open && !section.loaded) {
        section.loaded = true;
        this.loadTurn(turn.turn, body);
      }
    });
    this.label(turn);
    this.list.prepend(node);
  }

  async loadTurn(turn, body) {
    replace(body, h('p', {}, 'Loading…'));
    try {
      const [records, reply] = await Promise.all([this.api.resources(this.sessionId),
        this.api.reply(this.sessionId, turn)]);
      const panels = await Promise.all(records.map(async (record) => {
        const [history, facts] = await Promise.all([this.api.history(record.id, this.sessionId),
          this.api.facts(record.id, this.sessionId)]);
        return new ResourcePanel(this, turn, record, history, facts, reply);
      }));
      panels.forEach((panel) => this.panels.add(panel));
      replace(body, panels.length ? panels.map((p) => p.node) : h('p', {}, 'This session has no state yet.'));
    } catch (error) {
      replace(body, h('p', { class: 'alert', role: 'alert' }, `${error.code ?? 'MVU_READ_FAILED'}: ${error.message}`));
    }
  }

  async poll() {
    try {
      await this.readTurns();
      await Promise.all([...this.panels].filter((p) => this.isLatest(p.turn)).map((p) => p.poll()));
    } catch {
      // A failed poll changes nothing shown; the next one tries again.
    }
  }

  dispose() {
    clearInterval(this.timer);
    for (const panel of this.panels) panel.dispose();
  }
}

async function showSessions(api) {
  const sessions = await api.sessions();
  const nav = h('nav', { class: 'sessions' }, h('h2', {}, 'Sessions'));
  const pane = h('div', { class: 'pane' });
  let current = null;
  const open = async (sessionId) => {
    current?.dispose();
    for (const button of nav.querySelectorAll('button')) {
      button.setAttribute('aria-current', String(button.dataset.session === sessionId));
    }
    current = new SessionView(api, sessionId, sessions);
    replace(pane, current.node);
    history.replaceState(null, '', `#session=${encodeURIComponent(sessionId)}`);
    await current.load();
  };
  nav.append(h('ul', {}, sessions.map((s) => h('li', {}, h('button', { type: 'button', dataset: { session: s.sessionId },
    onclick: () => open(s.sessionId) }, s.sessionId, s.parentSession ? ` (branch of ${s.parentSession})` : '')))));
  if (!sessions.length) nav.append(h('p', {}, 'No sessions yet.'));
  replace(main, nav, pane);
  const wanted = new URLSearchParams(location.hash.slice(1)).get('session');
  if (wanted && sessions.some((s) => s.sessionId === wanted)) await open(wanted);
}

async function start() {
  const csrf = await signedInCsrf();
  if (csrf === null) {
    const spent = new URLSearchParams(location.search).get('signin') === 'spent';
    signInForm(main, spent ? 'That sign-in link was already used or has expired (it works once, for 10 minutes).' : '', start);
    return;
  }
  document.body.dataset.signedIn = 'true';
  document.querySelector('header').append(h('a', { class: 'away explorer', href: '/explorer/' }, 'API explorer'),
    signOutButton(csrf, '/inspector/'));
  await showSessions(createApi({ csrf }));
}

start();
