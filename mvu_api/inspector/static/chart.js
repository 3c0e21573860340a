// Each numeric variable over the turns, as small inline SVG charts (no library): one chart per
// variable, so that a gold count in the thousands does not flatten an hp line. A point is a
// button: choosing it opens that turn. Bounded: at most MAX_SERIES variables and MAX_POINTS
// points in all, a longer series is thinned evenly (its first and last points kept).

import { h } from './dom.js';
import { flattenVariables, turnLabel, versionTurn } from './trace.js';

export const MAX_SERIES = 12;
export const MAX_POINTS = 1000;
const SVG = 'http://www.w3.org/2000/svg';
const WIDTH = 320;
const HEIGHT = 90;
const PAD = 8;

/** The state each turn ended with: the opening (turn 0, the first version's before) and every
 * turn's last recorded state; failed versions changed nothing and are passed over. */
export function statesByTurn(history) {
  const states = new Map();
  const first = history[0];
  if (first?.beforeAvailable && !first.inherited && first.before !== undefined) states.set(0, first.before);
  for (const version of history) {
    const turn = versionTurn(version);
    if (version.error || !Number.isInteger(turn)) continue;
    states.set(turn, version.variables?.stat_data);
  }
  return [...states].sort((a, b) => a[0] - b[0]);
}

/** `points` thinned to at most `most`, evenly, keeping the first and the last. */
export function thinned(points, most) {
  if (points.length <= most) return points;
  if (most < 2) return points.slice(-most);
  return Array.from({ length: most }, (_, i) => points[Math.round((i * (points.length - 1)) / (most - 1))]);
}

/** Every numeric leaf's points ({turn, value}), first seen first: at most `maxSeries` of them and
 * `maxPoints` points in all; `total` counts the numeric variables there were. */
export function numericSeries(history, { maxSeries = MAX_SERIES, maxPoints = MAX_POINTS } = {}) {
  const series = new Map();
  for (const [turn, stat] of statesByTurn(history)) {
    for (const row of flattenVariables(stat)) {
      if (typeof row.value !== 'number' || !Number.isFinite(row.value)) continue;
      if (!series.has(row.path)) series.set(row.path, []);
      series.get(row.path).push({ turn, value: row.value });
    }
  }
  const kept = [...series].slice(0, maxSeries);
  const each = Math.max(2, Math.floor(maxPoints / Math.max(1, kept.length)));
  return { total: series.size, series: kept.map(([path, points]) => ({ path, count: points.length,
    points: thinned(points, each) })) };
}

function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  node.append(...children);
  return node;
}

function scale(low, high, from, to) {
  return (value) => (high === low ? (from + to) / 2 : from + ((value - low) * (to - from)) / (high - low));
}

/** One variable's chart; `pick(turn)` opens a turn. */
function seriesChart({ path, points, count }, pick) {
  const turns = points.map((p) => p.turn);
  const values = points.map((p) => p.value);
  const low = Math.min(...values);
  const high = Math.max(...values);
  const x = scale(Math.min(...turns), Math.max(...turns), PAD, WIDTH - PAD);
  const y = scale(low, high, HEIGHT - PAD, PAD);
  const line = svg('polyline', { class: 'line', points: points.map((p) => `${x(p.turn)},${y(p.value)}`).join(' ') });
  const dots = points.map((p) => {
    const label = `${turnLabel(p.turn)}: ${p.value}`;
    const dot = svg('circle', { class: 'point', cx: x(p.turn), cy: y(p.value), r: 4, tabindex: 0, role: 'button',
      'aria-label': `${path}, ${label}`, 'data-turn': p.turn }, svg('title', {}, label));
    dot.addEventListener('click', () => pick(p.turn));
    dot.addEventListener('keydown', (event) => {
      if (event.key === 'Enter' || event.key === ' ') { event.preventDefault(); pick(p.turn); }
    });
    return dot;
  });
  const chart = svg('svg', { viewBox: `0 0 ${WIDTH} ${HEIGHT}`, width: WIDTH, height: HEIGHT, role: 'group',
    'aria-label': `${path} over the turns` }, line, ...dots);
  const thin = count > points.length ? ` · ${points.length} of ${count} points shown` : '';
  return h('figure', { class: 'series', dataset: { path } }, chart,
    h('figcaption', {}, h('code', {}, path), ` ${low} … ${high} · ${turnLabel(turns[0])} – `
      + `${turnLabel(turns[turns.length - 1])}${thin}`));
}

/** The charts of one resource's history. */
export function chartView(history, pick) {
  const { series, total } = numericSeries(history);
  if (!series.length) return h('p', { class: 'label' }, 'No numeric variable recorded.');
  return h('div', { class: 'charts' }, series.map((s) => seriesChart(s, pick)),
    total > series.length ? h('p', { class: 'note' }, `The first ${series.length} of ${total} numeric variables.`) : null);
}
