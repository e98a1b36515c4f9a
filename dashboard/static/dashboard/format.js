// Formatting shared with dashboard/templatetags/dashboard_tags.py: keep both
// spelled the same so accessible names do not change on the first update.

// A wait or a run is never negative; one computed a moment off (a row
// stamped after its frame, a replica's clock a little ahead) reads 0, not
// "-0.0 s".
export function formatWait(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  seconds = Math.max(0, seconds);
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m ${Math.floor(seconds % 60)}s`;
  return `${Math.floor(seconds / 3600)}h ${Math.floor((seconds % 3600) / 60)}m`;
}

export function formatRate(perSecond) {
  if (perSecond === null || perSecond === undefined) return "–";
  return perSecond >= 100 ? perSecond.toFixed(0) : perSecond.toFixed(1);
}

// The header's "Scheduler loop": its share of a core, and CPU per dispatched request.
// With several replicas it is the busiest one's, and names it.
export function loadText(load) {
  if (!load || typeof load.busy !== "number") return { busy: "–", cost: "", title: "" };
  const cost = typeof load.cpu_per_query_us === "number" ? `${formatMicros(load.cpu_per_query_us)}/query` : "";
  const notes = [];
  if (typeof load.lag_max === "number") notes.push(`the loop's worst delay over the last ${Math.max(1, Math.round(load.window))} s: ${formatSeconds(load.lag_max)}`);
  if (typeof load.replica === "string") notes.push(`the busiest replica: ${load.replica}`);
  return { busy: `${Math.round(load.busy * 100)}%`, cost, title: notes.join("; ") };
}

function formatMicros(us) {
  return us >= 10000 ? `${(us / 1000).toFixed(0)} ms` : `${us.toFixed(0)} µs`;
}

export function formatSeconds(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 0.001) return `${(seconds * 1e6).toFixed(0)} µs`;
  if (seconds < 1) return `${(seconds * 1000).toFixed(seconds < 0.01 ? 1 : 0)} ms`;
  return `${seconds.toFixed(seconds < 10 ? 2 : 1)} s`;
}

export function nodeLabel(node) {
  if (node.kind === "others") return `others (${node.count} tenants): ${node.length} queued`;
  if (node.kind === "actor-others") return `others (${node.count} actors): ${node.length} queued`;
  if (node.kind === "actor") return `actor ${node.name}: ${node.length} queued`;
  return `${node.name}: ${node.length} queued`;
}

export function nodeName(node) {
  if (node.kind === "others") return `${node.name} (${node.count} tenants)`;
  if (node.kind === "actor-others") return `${node.name} (${node.count} actors)`;
  return node.name;
}

// What an empty tree says (the template says the same): a search that
// matches no tenant is not an empty queue.
export function emptyTreeText(search, matching) {
  return search && !matching ? `No tenant matches “${search}”.` : "Nothing queued.";
}

export function priorityClass(priority) {
  return `pc-${Math.max(0, Math.min(priority, 5))}`;
}

export function priorityText(pairs) {
  return pairs.map(([p, c]) => `p${p} ${c}`).join(" · ");
}

const STATES = {
  busy: "busy",
  idle: "idle",
  "reserved-idle": "reserved · idle",
  "shutting-down": "shutting down",
  disconnected: "disconnected (kept)",
};

export function querierState(q) {
  return STATES[q.state] || q.state;
}

export function workerText(w) {
  const took = formatWait(w.for);
  if (w.state === "busy") return `#${w.id} busy · ${w.tenant} / ${w.component} / p${w.priority} · ${took}`;
  if (w.state === "waiting") return `#${w.id} waiting for work · ${took}`;
  return `#${w.id} idle · ${took}`;
}

export function transportLabel(transport) {
  return transport === "grpc" ? "gRPC" : transport;
}

export function frontendLabel(f) {
  const on = f.replica ? ` on replica ${f.replica}` : "";
  return `${transportLabel(f.transport)} frontend ${f.address}${on}: ${f.outstanding} outstanding`;
}

export function frontendsCount(panel) {
  let where = "total";
  if (panel.local_only) {
    const every = (panel.replicas || []).length;
    const listed = every - (panel.missing || []).length;
    where = listed > 1 ? `on ${listed} of ${every} replicas` : "on this replica";
  }
  return `${panel.total} ${where} · ${panel.outstanding} outstanding`;
}

export function frontendsMissing(panel) {
  const missing = panel.missing || [];
  if (!missing.length) return "";
  if (missing.length === 1) {
    return `Not listed: the frontends of replica ${missing[0]}, which does not publish them.`;
  }
  return `Not listed: the frontends of replicas ${missing.join(", ")}, which do not publish them.`;
}
