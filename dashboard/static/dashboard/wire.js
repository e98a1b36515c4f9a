// Decoder of the compact wire form (see dashboard/wire.py, which encodes it).

const KINDS = { t: "tenant", c: "component", o: "others", a: "actor", x: "actor-others", n: "own" };
const STATES = { b: "busy", i: "idle", w: "waiting" };
const TRANSPORTS = { w: "websocket", g: "grpc" };

function key(kind, name, parent, prefix) {
  if (kind === "o" || kind === "x") return `${parent || prefix}/others`;
  if (kind === "a") return `${parent}/a:${name}`;
  if (kind === "n") return `${parent}/own`;
  return parent ? `${parent}/${name}` : `${prefix}:${name}`;
}

function node(raw, parent, prefix) {
  const [kind, name, length, flat, oldest, fanout, count, children] = raw;
  const k = key(kind, name, parent, prefix);
  const pairs = [];
  for (let i = 0; i < flat.length; i += 2) pairs.push([flat[i], flat[i + 1]]);
  return {
    kind: KINDS[kind], key: k, name, length, by_priority: pairs, oldest_wait: oldest,
    fanout, count, children: children.map((c) => node(c, k, prefix)),
  };
}

export function decodeTree(wire) {
  const prefix = wire.projection === "component-first" ? "c" : "t";
  return { ...wire, nodes: wire.nodes.map((n) => node(n, null, prefix)) };
}

export function decodeQueriers(wire) {
  return {
    ...wire,
    queriers: wire.queriers.map((q) => ({
      ...q,
      workers: q.workers.map(([id, state, tenant, component, priority, took, request]) => ({
        id, state: STATES[state], tenant, component, priority, for: took, request: request || null,
      })),
    })),
  };
}

export function decodeFrontends(wire) {
  return {
    ...wire,
    // A seventh element, the replica ID, comes only in the merged (scale-out) panel.
    frontends: wire.frontends.map(([transport, address, name, streams, outstanding, took, replica]) => ({
      transport: TRANSPORTS[transport], address, name, streams, outstanding, for: took,
      ...(replica === undefined ? {} : { replica }),
    })),
  };
}
