// A small SVG line chart of our own: no library, nothing fetched at run time.
// Draws a few series over a shared time axis; redrawing replaces the paths
// only, so updating at a few hertz costs a handful of attribute writes.

const NS = "http://www.w3.org/2000/svg";
const PAD = { left: 40, right: 8, top: 8, bottom: 18 };

function el(name, attrs) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function niceMax(value) {
  if (!(value > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 2.5, 5, 10]) if (value <= step * power) return step * power;
  return 10 * power;
}

function shortNumber(v) {
  if (v >= 1e6) return `${(v / 1e6).toFixed(1)}M`;
  if (v >= 1e3) return `${(v / 1e3).toFixed(v >= 1e4 ? 0 : 1)}k`;
  return Number.isInteger(v) ? String(v) : v.toFixed(1);
}

export class LineChart {
  constructor(svg, seriesClasses) {
    this.svg = svg;
    this.classes = seriesClasses;
    this.svg.replaceChildren();
    this.grid = el("g", { class: "grid" });
    this.paths = seriesClasses.map((cls) => el("path", { class: `line ${cls}`, fill: "none" }));
    this.svg.append(this.grid, ...this.paths);
    this.lastSize = "";
    // Reading the box on every draw would force a layout per update; a
    // ResizeObserver tells us only when it really changes.
    this.box = { width: 300, height: 90 };
    new ResizeObserver(([entry]) => {
      this.box = { width: entry.contentRect.width, height: entry.contentRect.height };
      if (this.points) this.draw(this.points);
    }).observe(svg);
  }

  // points: [[t, v0, v1, ...], ...] with t in seconds, oldest first.
  draw(points) {
    this.points = points;
    const box = this.box;
    const w = Math.max(120, box.width || 300);
    const h = Math.max(60, box.height || 90);
    this.svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
    const innerW = w - PAD.left - PAD.right;
    const innerH = h - PAD.top - PAD.bottom;
    const t1 = points.length ? points[points.length - 1][0] : 0;
    const t0 = Math.min(points.length ? points[0][0] : 0, t1 - 60);
    let max = 0;
    for (const p of points) for (let i = 1; i < p.length; i++) if (p[i] > max) max = p[i];
    max = niceMax(max);
    const x = (t) => PAD.left + ((t - t0) / Math.max(1, t1 - t0)) * innerW;
    const y = (v) => PAD.top + innerH - (v / max) * innerH;
    const size = `${w}x${h}x${max}`;
    if (size !== this.lastSize) this.drawGrid(w, h, max, y);
    this.lastSize = size;
    this.paths.forEach((path, i) => {
      let d = "";
      let pen = false;
      for (const p of points) {
        const v = p[i + 1];
        if (v === null || v === undefined) { pen = false; continue; }
        d += `${pen ? "L" : "M"}${x(p[0]).toFixed(1)},${y(v).toFixed(1)}`;
        pen = true;
      }
      path.setAttribute("d", d);
    });
  }

  drawGrid(w, h, max, y) {
    this.grid.replaceChildren();
    for (const frac of [0, 0.5, 1]) {
      const v = max * frac;
      const yy = y(v);
      this.grid.append(el("line", { x1: PAD.left, x2: w - PAD.right, y1: yy, y2: yy }));
      const label = el("text", { x: PAD.left - 6, y: yy + 3, "text-anchor": "end" });
      label.textContent = shortNumber(v);
      this.grid.append(label);
    }
    const now = el("text", { x: w - PAD.right, y: h - 4, "text-anchor": "end" });
    now.textContent = "now";
    this.grid.append(now);
  }
}
