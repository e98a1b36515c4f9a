// The inspector's two charts (queued requests; oldest queued and p99 wait)
// over the live frames' points, the last 300 kept. The scheduler's config
// changes are marked on both and listed under them, each linked to its
// revision on History. Split from inspector.js, which feeds it every frame.

import { clockTime } from "./format.js";
import { byId, setProp } from "./ids.js";
import { TimeChart } from "./timeseries.js";

const ACCENT = "#2f5bd3";
const ORANGE = "#d9822b";

export class InspectorCharts {
  constructor() {
    this.points = [];
    this.changesShown = "";
    this.queued = new TimeChart(document.getElementById("chart-queued"), {
      yLabel: "requests",
      series: [{ label: "queued", color: ACCENT }],
    });
    this.wait = new TimeChart(document.getElementById("chart-wait"), {
      yLabel: "seconds",
      series: [
        { label: "oldest queued", color: ACCENT, unit: "s" },
        { label: "p99 wait", color: ORANGE, unit: "s" },
      ],
    });
  }

  // A full frame's points replace the charts'; a delta's are added to them.
  apply(points, full) {
    if (full) this.points = points;
    else if (points.length) this.points = this.points.concat(points).slice(-300);
    if (full || points.length) this.draw();
  }

  draw() {
    const points = this.points;
    const markers = configChanges(points);
    this.queued.setMarkers(markers);
    this.wait.setMarkers(markers);
    this.queued.draw(points.map((p) => [p[0], p[1]]));
    this.wait.draw(points.map((p) => [p[0], p[2], p[4]]));
    this.showChanges(markers);
  }

  showChanges(markers) {
    const sig = markers.map((m) => `${m.t}:${m.version}`).join(",");
    if (sig === this.changesShown) return;
    this.changesShown = sig;
    const list = byId("chart-changes-list");
    list.replaceChildren(...markers.map((m) => {
      const li = document.createElement("li");
      const a = document.createElement("a");
      const at = clockTime(m.t);
      a.href = `/history/#v${m.version}`;
      a.textContent = `#${m.version}`;
      a.setAttribute("aria-label", `Config change #${m.version} at ${at}, on History`);
      li.append(a, ` at ${at}`);
      return li;
    }));
    setProp("chart-changes", "hidden", markers.length === 0);
  }
}

// Seconds at which the scheduler's config version changed (a point's sixth
// figure; unknown before the runtime's first config), each linked to its
// revision on History.
function configChanges(points) {
  const out = [];
  for (let i = 1; i < points.length; i++) {
    const before = points[i - 1][5];
    const now = points[i][5];
    if (before != null && now != null && now !== before) { // != null: neither null nor undefined
      out.push({ t: points[i][0], version: now });
    }
  }
  return out;
}
