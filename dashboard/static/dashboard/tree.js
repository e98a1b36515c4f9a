// The queue tree: an ARIA tree (role tree/treeitem/group, aria-expanded,
// aria-level) with a roving tabindex and arrow-key navigation, patched in
// place by node key on every update so focus and expansion survive and an
// update touches only the rows whose figures changed. While the pointer or
// the focus is on it, the tree holds its rows in place (tree_hold.js).

import { placeChildren, setAttr, setText, splitKeyed } from "./dom.js";
import {
  formatWait, iso, nodeLabel, nodeName, priorityClass, priorityText, showText, visible,
} from "./format.js";
import { GONE, TreeHold, keyOf } from "./tree_hold.js";

export class TreeView {
  constructor(root, onToggle) {
    this.root = root;
    this.onToggle = onToggle || (() => {});
    this.expanded = new Map(); // key -> bool, only where the user chose
    this.focusKey = null;
    this.stuckAfter = null; // seconds; set from the header
    this.onDrill = null; // (node key, nodes from the top down to it) => void, set by the inspector
    this.live = null; // the last frame's nodes, drawn again when a hold ends
    this.hold = new TreeHold(root, () => this.render(this.live));
    root.addEventListener("keydown", (e) => this.onKey(e));
    root.addEventListener("click", (e) => this.onClick(e));
    root.addEventListener("focusin", (e) => {
      const item = e.target.closest('[role="treeitem"]');
      if (item) this.setFocus(item, false);
    });
    this.ensureTabStop();
  }

  defaultExpanded(kind, level) {
    return kind === "component" && level === 1;
  }

  isExpanded(node, level) {
    const chosen = this.expanded.get(node.key);
    return chosen === undefined ? this.defaultExpanded(node.kind, level) : chosen;
  }

  // Keys the server should send children for: open nodes among those shown.
  openKeys(defaults) {
    const keys = new Set(defaults.filter((k) => this.expanded.get(k) !== false));
    for (const [key, open] of this.expanded) if (open) keys.add(key);
    return [...keys].slice(0, 400);
  }

  // The next frame answers a new question (search, projection, page): drawn unheld.
  releaseHold() {
    this.hold.releaseNext();
  }

  render(nodes) {
    this.live = nodes;
    // Rows come and go several times a second as short queues empty and
    // refill. Removing (or moving) the focused row drops focus to the body,
    // where arrow keys do nothing: focus then returns to the same node, or
    // to the nearest one that is still there. A hold keeps the focused row,
    // so this is for rows the server drew before the first frame.
    const active = document.activeElement;
    const inside = this.root.contains(active);
    const item = inside ? active.closest('[role="treeitem"]') : null;
    const near = item ? this.nearKeys(item) : [];
    this.hold.begin(inside);
    this.reconcile(this.root, nodes, 1);
    this.ensureTabStop();
    // The tree itself holds focus only while it has no rows (refocus).
    if (inside && (active === this.root || !this.root.contains(document.activeElement))) this.refocus(near);
    if (this.hold.on || this.hold.since !== null) this.hold.end(inside);
  }

  // `li`'s key, then its siblings' (the next ones first: the row that takes
  // its place), then its parent's and the parent's siblings', up the tree.
  nearKeys(li) {
    const keys = [];
    for (let at = li; at && this.root.contains(at); at = at.parentElement.closest('[role="treeitem"]')) {
      keys.push(keyOf(at));
      for (let s = at.nextElementSibling; s; s = s.nextElementSibling) keys.push(keyOf(s));
      for (let s = at.previousElementSibling; s; s = s.previousElementSibling) keys.push(keyOf(s));
    }
    return keys;
  }

  refocus(keys) {
    const shown = new Map(this.visibleItems().map((li) => [keyOf(li), li]));
    const near = keys.find((key) => shown.has(key));
    if (near !== undefined) {
      this.setFocus(shown.get(near));
      return;
    }
    const first = this.visibleItems()[0];
    if (first) {
      this.setFocus(first);
      return;
    }
    // No row is left at all: the tree itself keeps focus until rows come back.
    this.root.tabIndex = -1;
    this.root.focus();
  }

  reconcile(container, nodes, level) {
    if (this.hold.on) nodes = this.hold.nodes(container, nodes);
    const keys = new Set(nodes.map((n) => n.key));
    const { kept, stale } = splitKeyed(container, keys, keyOf);
    // A row that has focus is never recycled: focus must not jump to
    // another tenant's row.
    const active = document.activeElement;
    const pool = stale.filter((li) => !li.contains(active) && keyOf(li) !== this.focusKey);
    let reused = 0;
    const wanted = nodes.map((node) => {
      let li = kept.get(node.key);
      if (!li && reused < pool.length) li = this.rekey(pool[reused++], node.key);
      if (!li) li = this.create(node, level);
      this.update(li, node, level);
      return li;
    });
    const used = new Set(pool.slice(0, reused));
    for (const li of stale) {
      if (used.has(li)) continue;
      if (keyOf(li) === this.focusKey) this.focusKey = null;
      li.remove();
    }
    placeChildren(container, wanted);
  }

  rekey(li, key) {
    li._key = key;
    li.dataset.key = key;
    li._sig = undefined;
    li._node = undefined;
    return li;
  }

  create(node, level) {
    const li = document.createElement("li");
    li.setAttribute("role", "treeitem");
    li.dataset.key = node.key;
    li._key = node.key;
    li.setAttribute("aria-level", String(level));
    li.tabIndex = -1;
    li.innerHTML =
      '<div class="row"><span class="twisty" aria-hidden="true"></span><span class="name"></span>' +
      '<span class="count"></span><span class="bar" aria-hidden="true"></span><span class="prios"></span>' +
      '<span class="wait"></span><span class="drill-cell"></span></div>';
    return li;
  }

  // Rows keep their figures in JS properties and compare before writing, so
  // an update writes only what changed: the wait cell ticks on every update,
  // the rest only when the row's counts or expansion change.
  update(li, node, level) {
    li._node = node;
    const hasChildren = (node.fanout || 0) > 0;
    const open = hasChildren && this.isExpanded(node, level);
    const prios = priorityText(node.by_priority);
    const gone = node.gone || "";
    const sig = `${node.kind}|${node.length}|${prios}|${node.count}|${hasChildren}|${open}|${gone}`;
    const row = li.firstElementChild;
    if (!li._cells) {
      // Rows rendered before the drill cell existed get one.
      if (row.children.length < 7) row.append(Object.assign(document.createElement("span"), { className: "drill-cell" }));
      li._cells = Array.from(row.children);
    }
    const cells = li._cells;
    if (li._sig !== sig) {
      li._sig = sig;
      const cls = `node kind-${node.kind}${gone ? " gone" : ""}`;
      if (li.className !== cls) li.className = cls;
      if (li.dataset.kind !== node.kind) li.dataset.kind = node.kind;
      setAttr(li, "aria-label", gone === "left" ? `${iso(nodeName(node))}: not on this page now` : nodeLabel(node));
      const name = nodeName(node);
      showText(cells[1], name);
      // Either may be cut short in a narrow row: the title has it whole.
      setAttr(cells[1], "title", visible(name));
      // How many a row that left the page holds is not in the frame.
      setText(cells[2], gone === "left" ? "–" : String(node.length));
      setAttr(cells[2], "title", gone ? GONE[gone] : null);
      this.drawBar(cells[3], node);
      setText(cells[4], prios);
      setAttr(cells[4], "title", prios);
      this.drillButton(cells[6], node);
      if (hasChildren) setAttr(li, "aria-expanded", open ? "true" : "false");
      else if (li.hasAttribute("aria-expanded")) li.removeAttribute("aria-expanded");
    }
    setText(cells[5], formatWait(node.oldest_wait));
    // Stuck: the node's oldest request waited longer than the threshold.
    const stuck = this.stuckAfter !== null && node.oldest_wait !== null && node.oldest_wait > this.stuckAfter;
    if (li.classList.contains("stuck") !== stuck) {
      li.classList.toggle("stuck", stuck);
      cells[5].title = stuck ? `oldest request waited over ${this.stuckAfter} s: stuck` : "";
    }
    let group = li.children[1];
    if (!hasChildren) {
      if (group) group.remove();
      return;
    }
    if (!group) {
      group = document.createElement("ul");
      group.setAttribute("role", "group");
      li.append(group);
    }
    if (open) this.reconcile(group, node.children || [], level + 1);
    else if (group.firstChild) group.replaceChildren();
  }

  // A "requests" button on tenant, component and actor nodes opens the drill-down.
  drillButton(cell, node) {
    const wanted = this.onDrill && (node.kind === "tenant" || node.kind === "component" || node.kind === "actor");
    let button = cell.firstElementChild;
    if (!wanted) { if (button) button.remove(); return; }
    if (!button) {
      button = document.createElement("button");
      button.type = "button";
      button.className = "drill small";
      button.textContent = "≡";
      cell.append(button);
    }
    button.tabIndex = cell.closest('[role="treeitem"]') === this.tabStop ? 0 : -1;
    button.setAttribute("aria-label", `Requests of ${iso(node.name)}`);
    button.title = `List the requests of ${iso(node.name)} in dequeue order`;
  }

  // The nodes from the top of the tree down to `li` (an actor's path is the
  // names of the actor nodes on the way).
  chain(li) {
    const nodes = [];
    for (let at = li; at && this.root.contains(at); at = at.parentElement.closest('[role="treeitem"]')) {
      if (at._node) nodes.unshift(at._node);
    }
    return nodes;
  }

  drawBar(bar, node) {
    const total = Math.max(1, node.length);
    const parts = node.by_priority;
    while (bar.children.length > parts.length) bar.lastChild.remove();
    parts.forEach(([p, c], i) => {
      let seg = bar.children[i];
      if (!seg) { seg = document.createElement("i"); bar.append(seg); }
      const cls = priorityClass(p);
      if (seg.className !== cls) seg.className = cls;
      const width = `${((100 * c) / total).toFixed(1)}%`;
      if (seg._width !== width) { seg._width = width; seg.style.width = width; }
    });
  }

  // -- focus and keyboard ---------------------------------------------------

  visibleItems() {
    const out = [];
    const walk = (container) => {
      for (const li of container.children) {
        out.push(li);
        if (li.getAttribute("aria-expanded") === "true" && li.children[1]) walk(li.children[1]);
      }
    };
    walk(this.root);
    return out;
  }

  // One treeitem carries tabindex 0 (the roving tab stop). Rows of a
  // collapsed group are detached, so a connected stop is a visible one and
  // most updates keep it without walking the tree.
  ensureTabStop() {
    const stop = this.tabStop;
    if (stop && stop.isConnected && stop.tabIndex === 0 && keyOf(stop) === this.focusKey) return;
    const items = this.visibleItems();
    let current = items.find((li) => keyOf(li) === this.focusKey);
    if (!current) current = items[0];
    this.moveStop(current || null);
    if (current) this.focusKey = keyOf(current);
  }

  setFocus(li, move = true) {
    if (!li) return;
    this.moveStop(li);
    this.focusKey = keyOf(li);
    if (move) li.focus();
  }

  // The tab stop is one row and its ≡ button: with every row's button in
  // the tab order, a page of 50 tenants took 50 Tabs to get past the tree.
  moveStop(li) {
    for (const other of this.root.querySelectorAll('[role="treeitem"][tabindex="0"], button.drill[tabindex="0"]')) {
      if (other !== li) other.tabIndex = -1;
    }
    this.tabStop = li;
    if (!li) return;
    li.tabIndex = 0;
    const button = li.querySelector(":scope > .row button.drill");
    if (button) button.tabIndex = 0;
  }

  toggle(li, open) {
    if (!li.hasAttribute("aria-expanded")) return;
    const want = open === undefined ? li.getAttribute("aria-expanded") !== "true" : open;
    this.expanded.set(keyOf(li), want);
    li.setAttribute("aria-expanded", want ? "true" : "false");
    li._sig = "";
    const node = li._node;
    if (node) this.update(li, node, Number(li.getAttribute("aria-level")));
    this.onToggle(keyOf(li), want);
  }

  onClick(e) {
    const li = e.target.closest('[role="treeitem"]');
    if (!li || !this.root.contains(li)) return;
    if (e.target.closest("button.drill")) {
      if (this.onDrill) this.onDrill(keyOf(li), this.chain(li));
      return;
    }
    this.setFocus(li);
    if (e.target.closest(".row") && e.target.closest(".row").parentElement === li) this.toggle(li);
  }

  onKey(e) {
    const li = e.target.closest('[role="treeitem"]');
    if (!li || e.target.closest("button.drill")) return;
    const items = this.visibleItems();
    const i = items.indexOf(li);
    const open = li.getAttribute("aria-expanded");
    let handled = true;
    switch (e.key) {
      case "ArrowDown": this.setFocus(items[i + 1]); break;
      case "ArrowUp": this.setFocus(items[i - 1]); break;
      case "Home": this.setFocus(items[0]); break;
      case "End": this.setFocus(items[items.length - 1]); break;
      case "ArrowRight":
        if (open === "false") this.toggle(li, true);
        else if (open === "true") this.setFocus(li.children[1] && li.children[1].firstElementChild);
        break;
      case "ArrowLeft":
        if (open === "true") this.toggle(li, false);
        else this.setFocus(li.parentElement.closest('[role="treeitem"]'));
        break;
      case "Enter":
      case " ":
        this.toggle(li);
        break;
      default: handled = false;
    }
    if (handled) e.preventDefault();
  }
}
