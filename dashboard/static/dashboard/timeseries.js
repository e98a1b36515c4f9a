// Live time-series charts on uPlot, the one chart library of every page
// (bundled from the npm registry at setup into vendor/uplot.js; the what-if
// page draws its charts with it too). A chart has a time axis, a labelled
// value axis, and a legend that shows each series' value under the cursor.
// `draw(points)` takes rows [t, v0, v1, ...] (t in Unix seconds, oldest
// first, null for a gap) and only swaps the data of the plot it keeps, so
// redrawing a few times a second is cheap; the plot follows its box's width.

import uPlot from "./vendor/uplot.js";

const HEIGHT = 130;
const WINDOW = 60; // seconds shown at least, so a fresh page's line is not a dot

function shortNumber(v) {
  if (v === null || v === undefined) return "–";
  const a = Math.abs(v);
  if (a >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (a >= 1e3) return `${(v / 1e3).toFixed(a >= 1e4 ? 0 : 1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(a < 10 ? 2 : 1);
}

function clock(t, withSeconds = true) {
  const d = new Date(t * 1000);
  const pad = (n) => String(n).padStart(2, "0");
  const minutes = `${pad(d.getHours())}:${pad(d.getMinutes())}`;
  return withSeconds ? `${minutes}:${pad(d.getSeconds())}` : minutes;
}

// Pixels between time ticks. uPlot's steps go from one minute straight to
// five, so a 300-pixel chart of five minutes got a single tick: ticks a
// minute apart need room only for "05:07", while ticks seconds apart carry
// the seconds too and need room for "05:07:30".
const MINUTE_TICKS = 36;
const SECOND_TICKS = 64;
// Steps the ticks may take, in seconds (uPlot's own lack two minutes).
const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600];
// Room right of the plot for half a tick label, so the last is not clipped.
const RIGHT_ROOM = 30;

function tickSpace(u, axis, min, max, width) {
  const perMinute = (width * 60) / Math.max(1, max - min);
  return perMinute >= SECOND_TICKS ? SECOND_TICKS : MINUTE_TICKS;
}

// A config change is a dashed vertical line at its second, labelled with its
// version as History numbers it ("#42"), so a queue that grew right after a
// change shows beside it.
const MARKER = "#7a5af8";

function drawMarkers(u, markers) {
  if (!markers.length) return;
  const { ctx } = u;
  const { left, top, width, height } = u.bbox;
  ctx.save();
  ctx.strokeStyle = MARKER;
  ctx.fillStyle = MARKER;
  ctx.lineWidth = Math.max(1, devicePixelRatio);
  ctx.setLineDash([4 * devicePixelRatio, 3 * devicePixelRatio]);
  ctx.font = `${11 * devicePixelRatio}px sans-serif`;
  ctx.textBaseline = "top";
  for (const m of markers) {
    const x = Math.round(u.valToPos(m.t, "x", true));
    if (x < left || x > left + width) continue;
    ctx.beginPath();
    ctx.moveTo(x, top);
    ctx.lineTo(x, top + height);
    ctx.stroke();
    ctx.fillText(`#${m.version}`, x + 3 * devicePixelRatio, top + 2 * devicePixelRatio);
  }
  ctx.restore();
}

export class TimeChart {
  // series: [{label, color, unit}]; yLabel names the value axis.
  constructor(box, { series, yLabel }) {
    this.box = box;
    this.series = series;
    this.yLabel = yLabel;
    this.plot = null;
    this.markers = []; // [{t, version}]: config changes in view (setMarkers)
    new ResizeObserver(([entry]) => {
      const width = Math.floor(entry.contentRect.width);
      if (this.plot && width > 0 && width !== this.plot.width) {
        this.plot.setSize({ width, height: HEIGHT });
      }
    }).observe(box);
  }

  options(width) {
    const unit = (s) => (s.unit ? ` ${s.unit}` : "");
    return {
      width,
      height: HEIGHT,
      padding: [null, RIGHT_ROOM, null, null],
      legend: { live: true },
      hooks: { draw: [(u) => drawMarkers(u, this.markers)] },
      cursor: { drag: { x: false, y: false } },
      scales: {
        x: {
          time: true,
          range: (u, min, max) => [Math.min(min, max - WINDOW), max],
        },
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [
        // One line per tick (uPlot's default adds a date row under the clock).
        {
          label: "time",
          labelSize: 14,
          size: 36,
          space: tickSpace,
          incrs: TIME_STEPS,
          values: (u, ticks, axis, space, step) => ticks.map((t) => clock(t, step < 60)),
        },
        {
          label: this.yLabel,
          labelSize: 16,
          size: 48,
          values: (u, ticks) => ticks.map(shortNumber),
        },
      ],
      series: [
        // The legend's time in the axis's 24-hour clock (uPlot's own says "5:07am").
        { label: "time", value: (u, t) => (t === null || t === undefined ? "–" : clock(t)) },
        ...this.series.map((s) => ({
          label: s.label,
          stroke: s.color,
          width: 1.6,
          spanGaps: false,
          value: (u, v) => (v === null || v === undefined ? "–" : `${shortNumber(v)}${unit(s)}`),
        })),
      ],
    };
  }

  // Config changes to mark; drawn with the next `draw`.
  setMarkers(markers) {
    this.markers = markers;
  }

  draw(points) {
    const columns = [points.map((p) => p[0])];
    this.series.forEach((_, i) => columns.push(points.map((p) => p[i + 1] ?? null)));
    if (this.plot) {
      this.plot.setData(columns);
      return;
    }
    const width = Math.max(200, Math.floor(this.box.clientWidth || 300));
    this.plot = new uPlot(this.options(width), columns, this.box);
    // Axis labels are drawn on the canvas; the plot on its box lets a script
    // (or a test) read them and the data.
    this.box.plot = this.plot;
  }
}
