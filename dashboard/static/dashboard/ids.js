// Page elements by id: lookups and last written values are remembered, so
// an update reads nothing back from the DOM and writes only what changed.
// Shared by the inspector page and its queriers and frontends panels.

import { setText as writeText } from "./dom.js";

const nodes = new Map();
export function byId(id) {
  let node = nodes.get(id);
  if (!node) { node = document.getElementById(id); nodes.set(id, node); }
  return node;
}

export function setText(id, text) {
  writeText(byId(id), text);
}

export function setProp(id, name, value) {
  const node = byId(id);
  if (node[name] !== value) node[name] = value;
}
