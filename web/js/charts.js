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
 * returns {setData(xs, ...ys), destroy()}; xs are Unix seconds.
 */
export function timeChart(container, opts) {
  const plot = h('div', { class: 'chart-plot' });
  const summary = h('p', { class: 'visually-hidden' });
  replace(container, plot, summary);
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
