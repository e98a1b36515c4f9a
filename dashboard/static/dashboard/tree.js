// The queue tree: an ARIA tree (role tree/treeitem/group, aria-expanded,
// aria-level) with a roving tabindex and arrow-key navigation, patched in
// place by node key on every update so focus and expansion survive and an
// update touches only the rows whose figures changed.

import { formatWait, nodeLabel, nodeName, priorityClass, priorityText } from "./format.js";

export class TreeView {
  constructor(root, onToggle) {
    this.root = root;
    this.onToggle = onToggle || (() => {});
    this.expanded = new Map(); // key -> bool, only where the user chose
    this.focusKey = null;
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

  render(nodes) {
    this.reconcile(this.root, nodes, 1);
    this.ensureTabStop();
  }

  reconcile(container, nodes, level) {
    const existing = new Map();
    for (const child of container.children) existing.set(child.dataset.key, child);
    let index = 0;
    for (const node of nodes) {
      let li = existing.get(node.key);
      if (li) existing.delete(node.key);
      else li = this.create(node, level);
      this.update(li, node, level);
      const at = container.children[index];
      if (at !== li) container.insertBefore(li, at || null);
      index++;
    }
    for (const stale of existing.values()) {
      if (stale.dataset.key === this.focusKey) this.focusKey = null;
      stale.remove();
    }
  }

  create(node, level) {
    const li = document.createElement("li");
    li.setAttribute("role", "treeitem");
    li.dataset.key = node.key;
    li.setAttribute("aria-level", String(level));
    li.tabIndex = -1;
    li.innerHTML =
      '<div class="row"><span class="twisty" aria-hidden="true"></span><span class="name"></span>' +
      '<span class="count"></span><span class="bar" aria-hidden="true"></span><span class="prios"></span>' +
      '<span class="wait"></span></div>';
    return li;
  }

  update(li, node, level) {
    const hasChildren = (node.fanout || 0) > 0;
    const open = hasChildren && this.isExpanded(node, level);
    const prios = priorityText(node.by_priority);
    const sig = `${node.kind}|${node.length}|${prios}|${node.oldest_wait}|${node.count}|${hasChildren}|${open}`;
    if (li._sig !== sig) {
      li._sig = sig;
      li.className = `node kind-${node.kind}`;
      li.dataset.kind = node.kind;
      li.setAttribute("aria-label", nodeLabel(node));
      const row = li.firstElementChild;
      row.children[1].textContent = nodeName(node);
      row.children[2].textContent = String(node.length);
      this.drawBar(row.children[3], node);
      row.children[4].textContent = prios;
      row.children[5].textContent = formatWait(node.oldest_wait);
      if (hasChildren) li.setAttribute("aria-expanded", open ? "true" : "false");
      else li.removeAttribute("aria-expanded");
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
    li._node = node;
    if (open) this.reconcile(group, node.children || [], level + 1);
    else if (group.firstChild) group.replaceChildren();
  }

  drawBar(bar, node) {
    const total = Math.max(1, node.length);
    const parts = node.by_priority;
    while (bar.children.length > parts.length) bar.lastChild.remove();
    parts.forEach(([p, c], i) => {
      let seg = bar.children[i];
      if (!seg) { seg = document.createElement("i"); bar.append(seg); }
      seg.className = priorityClass(p);
      seg.style.width = `${((100 * c) / total).toFixed(1)}%`;
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

  ensureTabStop() {
    const items = this.visibleItems();
    let current = items.find((li) => li.dataset.key === this.focusKey);
    if (!current) current = items[0];
    for (const li of this.root.querySelectorAll('[role="treeitem"][tabindex="0"]')) {
      if (li !== current) li.tabIndex = -1;
    }
    if (current) {
      current.tabIndex = 0;
      this.focusKey = current.dataset.key;
    }
  }

  setFocus(li, move = true) {
    if (!li) return;
    for (const other of this.root.querySelectorAll('[role="treeitem"][tabindex="0"]')) other.tabIndex = -1;
    li.tabIndex = 0;
    this.focusKey = li.dataset.key;
    if (move) li.focus();
  }

  toggle(li, open) {
    if (!li.hasAttribute("aria-expanded")) return;
    const want = open === undefined ? li.getAttribute("aria-expanded") !== "true" : open;
    this.expanded.set(li.dataset.key, want);
    li.setAttribute("aria-expanded", want ? "true" : "false");
    li._sig = "";
    const node = li._node;
    if (node) this.update(li, node, Number(li.getAttribute("aria-level")));
    this.onToggle(li.dataset.key, want);
  }

  onClick(e) {
    const li = e.target.closest('[role="treeitem"]');
    if (!li || !this.root.contains(li)) return;
    this.setFocus(li);
    if (e.target.closest(".row") && e.target.closest(".row").parentElement === li) this.toggle(li);
  }

  onKey(e) {
    const li = e.target.closest('[role="treeitem"]');
    if (!li) return;
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
