// Charts, drawn by uPlot (vendored under /vendor/uplot): a time chart with
// a unit on every axis, and a sparkline for tables. Times are shown in the
// browser's zone; hovering a point shows it in UTC too. A null value is a
// second or step without figures, drawn as a gap. Colours come from the
// stylesheet's custom properties, so they follow the light or dark scheme:
// the axes and grid read them at every draw, and a chart draws again when
// the scheme changes (a canvas does not follow the stylesheet by itself).

import uPlot from '../vendor/uplot/uPlot.esm.js';
import { h, replace } from './dom.js';
import { clockTime, localTime, number, utc, zone } from './format.js';

function cssColor(name) {
  return getComputedStyle(document.documentElement).getPropertyValue(`--chart-${name}`).trim();
}

/**
 * colors of the figures, the same on every chart: each is read from the
 * stylesheet when a chart is made, so a chart follows the scheme in force.
 */
export const colors = Object.freeze({
  /** reason is the colour of the blocks of a reason (blocks.js). */
  reason(r) { return cssColor(`reason-${r}`); },
  get pass() { return cssColor('pass'); },
  get block() { return cssColor('block'); },
  get shadow() { return cssColor('shadow'); },
  get error() { return cssColor('error'); },
  get rt() { return cssColor('rt'); },
  get conc() { return cssColor('conc'); },
});

/**
 * markKinds are the kinds of mark a time chart draws across its plot, in
 * the order of its key: a circuit breaker's changes to each state, each in
 * its scheme colour and its own dash, so that colour is not the only
 * difference. dash is [on, off] in CSS pixels, [] for a solid line.
 */
const markKinds = [
  { state: 'open', label: 'opened', dash: [] },
  { state: 'halfOpen', label: 'half-open', dash: [6, 4] },
  { state: 'closed', label: 'closed', dash: [2, 3] },
];

/**
 * drawMarks draws marks ({time: Unix seconds, state}) as vertical lines
 * across u's plot, those in its time range only, and answers how many it
 * drew. Each is a few rectangles, cheap enough for a chart redrawn every
 * second.
 */
function drawMarks(u, marks) {
  const { top, height } = u.bbox;
  const ctx = u.ctx;
  const ratio = window.devicePixelRatio || 1;
  const lineWidth = Math.max(2, Math.round(2 * ratio));
  let drawn = 0;
  ctx.save();
  for (const kind of markKinds) {
    ctx.fillStyle = cssColor(`breaker-${kind.state}`);
    const [on, off] = kind.dash.length ? kind.dash.map((v) => Math.round(v * ratio)) : [height, 0];
    for (const m of marks) {
      if (m.state !== kind.state || m.time < u.scales.x.min || m.time > u.scales.x.max) {
        continue;
      }
      const x = Math.round(u.valToPos(m.time, 'x', true)) - Math.floor(lineWidth / 2);
      for (let y = Math.round(top); y < top + height; y += on + off) {
        ctx.fillRect(x, y, lineWidth, Math.min(on, top + height - y));
      }
      drawn += 1;
    }
  }
  ctx.restore();
  return drawn;
}

/** marksKey is the key of a chart's marks, shown while it draws some. */
function marksKey() {
  return h('p', { class: 'chart-marks small', hidden: true },
    'Lines across the chart: circuit breaker ',
    markKinds.map((k, i) => [i ? ', ' : '', h('span', { class: `mark-swatch mark-${k.state}`, 'aria-hidden': 'true' }), k.label]),
    '.');
}

/** gaps counts the runs of nulls in a series: the gaps a chart draws. */
function gaps(ys) {
  let runs = 0;
  for (let i = 0; i < ys.length; i += 1) {
    if (ys[i] === null && (i === 0 || ys[i - 1] !== null)) {
      runs += 1;
    }
  }
  return runs;
}

const darkScheme = window.matchMedia('(prefers-color-scheme: dark)');

function fromZero(u, min, max) {
  return [0, max > 0 ? max * 1.1 : 1];
}

/**
 * axisValues writes an axis's tick values with as many decimals as their
 * spacing needs: an axis from 0 to 0.05 reads 0.01, 0.02…, never 0 0 0.
 */
export function axisValues(splits) {
  const step = splits.length > 1 ? Math.abs(splits[1] - splits[0]) : 1;
  let decimals = 0;
  while (step > 0 && decimals < 6 && Math.abs(step * 10 ** decimals - Math.round(step * 10 ** decimals)) > 1e-6 * step * 10 ** decimals) {
    decimals += 1;
  }
  const format = new Intl.NumberFormat(undefined, { minimumFractionDigits: decimals, maximumFractionDigits: decimals });
  return splits.map((v) => (v === null || v === undefined ? '' : format.format(v)));
}

function chartWidth(el) {
  return Math.max(280, Math.floor(el.clientWidth || 600));
}

/**
 * timeChart draws series over time in container. opts: height, leftLabel
 * and rightLabel (axis titles with units), series [{label, color, side:
 * 'left'|'right', unit, dash, fill, shown}], long (whether hover shows the
 * date); fill fills under a line, shown(i) is the legend's value of point
 * i when it is not the line's. It
 * returns {setData(xs, ...ys), setMarks(marks), destroy()}; xs are Unix
 * seconds, marks are circuit breaker changes ({time: Unix seconds, state})
 * drawn as lines across the plot with a key under it.
 */
export function timeChart(container, opts) {
  const plot = h('div', { class: 'chart-plot' });
  const summary = h('p', { class: 'visually-hidden' });
  const key = marksKey();
  replace(container, plot, key, summary);
  let marks = [];
  const formatX = opts.long ? localTime : clockTime;
  const series = [
    {
      label: 'Time',
      value: (u, v) => (v === null || v === undefined ? '—' : `${formatX(v * 1000)} (${utc(new Date(v * 1000))})`),
    },
    ...opts.series.map((s) => ({
      label: s.label,
      stroke: s.color,
      fill: s.fill,
      width: 2,
      dash: s.dash,
      scale: s.side === 'right' ? 'right' : 'left',
      spanGaps: false,
      points: { show: false },
      // shown(i) is what the legend says of point i, for a series drawn
      // stacked on others (its own part, not the stack's top).
      value: (u, v, si, i) => {
        const shown = s.shown && i !== null && i !== undefined ? s.shown(i) : v;
        return shown === null || shown === undefined ? '—' : `${number(shown)} ${s.unit}`;
      },
    })),
  ];
  const axisColor = () => cssColor('axis');
  const gridColor = () => cssColor('grid');
  const axis = { stroke: axisColor, grid: { stroke: gridColor, width: 1 }, ticks: { stroke: gridColor, width: 1 } };
  const axes = [
    { ...axis, label: `Time (${zone})`, labelSize: 24 },
    { ...axis, scale: 'left', label: opts.leftLabel, labelSize: 24, size: 56, values: (u, splits) => axisValues(splits) },
  ];
  if (opts.rightLabel) {
    axes.push({
      ...axis, scale: 'right', side: 1, label: opts.rightLabel, labelSize: 24, size: 56,
      grid: { show: false }, values: (u, splits) => axisValues(splits),
    });
  }
  const u = new uPlot({
    width: chartWidth(container),
    height: opts.height ?? 260,
    series,
    axes,
    scales: { x: { time: true }, left: { range: fromZero }, right: { range: fromZero } },
    legend: { live: true },
    cursor: { drag: { x: false, y: false } },
    hooks: {
      draw: [(chart) => {
        const drawn = marks.length ? drawMarks(chart, marks) : 0;
        container.dataset.marks = String(drawn);
        key.hidden = drawn === 0;
      }],
    },
  }, [[], ...opts.series.map(() => [])], plot);

  const resize = new ResizeObserver(() => u.setSize({ width: chartWidth(container), height: opts.height ?? 260 }));
  resize.observe(container);
  const redraw = () => u.redraw(false);
  darkScheme.addEventListener('change', redraw);

  return {
    setData(xs, ...ys) {
      u.setData([xs, ...ys]);
      container.dataset.points = String(xs.length);
      container.dataset.gaps = String(gaps(ys[0] ?? []));
      summary.textContent = xs.length
        ? `${xs.length} points from ${localTime(xs[0] * 1000)} to ${localTime(xs[xs.length - 1] * 1000)}`
        : 'no points yet';
    },
    setMarks(list) {
      marks = list;
      u.redraw(false);
    },
    destroy() {
      resize.disconnect();
      darkScheme.removeEventListener('change', redraw);
      u.destroy();
    },
  };
}

/**
 * sparkline draws pass and block rates, small and without axes, in
 * container. It returns {setData(xs, pass, block), destroy()}.
 */
export function sparkline(container) {
  const opts = {
    width: 120,
    height: 32,
    pxAlign: false,
    cursor: { show: false },
    select: { show: false },
    legend: { show: false },
    scales: { x: { time: false }, y: { range: fromZero } },
    axes: [{ show: false }, { show: false }],
    series: [{}, { stroke: colors.pass, width: 1.5, spanGaps: false }, { stroke: colors.block, width: 1.5, spanGaps: false }],
  };
  // Drawn only while in sight: the overview lists up to 200 resources and
  // its figures come every second, and 200 canvases redrawn each time cost
  // more than the rows themselves (a second to the first rows, over 10,000
  // active resources).
  let u = null;
  let data = [[], [], []];
  let inSight = false;
  const draw = () => {
    if (u) {
      u.setData(data);
    } else {
      u = new uPlot(opts, data, container);
    }
  };
  const sight = new IntersectionObserver((entries) => {
    inSight = entries[entries.length - 1].isIntersecting;
    if (inSight) {
      draw();
    }
  });
  sight.observe(container);
  return {
    setData(xs, pass, block) {
      data = [xs, pass, block];
      container.dataset.points = String(xs.length);
      container.dataset.gaps = String(gaps(pass));
      if (inSight) {
        draw();
      }
    },
    destroy() {
      sight.disconnect();
      u?.destroy();
    },
  };
}
