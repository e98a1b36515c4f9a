// Holding rows still under the pointer. Live frames reorder the queue
// tree's tenants by depth and drop emptied ones, and the drill-down's
// requests leave and arrive, several times a second: the row an operator
// aimed at moved from under the pointer (Pause was the only way to click
// one, and a "Cancel…" could land on another request). While the pointer is
// over such a list, or a row or its button has the focus, its rows stay
// where they are. Figures stay live during a hold; only the rows and their
// order are kept, and the list catches up with the last frame the moment
// both pointer and focus have left. `Hold` is that mechanism; `TreeHold`
// (dashboard/tree.js) and the drill-down's list (drill_list.js) say which
// rows a held frame shows.

import { setText } from "./dom.js";

export const keyOf = (li) => (li._key === undefined ? li.dataset.key : li._key);
const isOthers = (node) => node.kind === "others" || node.kind === "actor-others";
// A hold this long, whose order differs from the live one, is said so (the
// root's `data-hold-hint` names where): a quick aim and click shows nothing.
const HINT_AFTER_MS = 2000;
// A held group shows at most this many rows more than its frame has: beyond
// them, emptied rows are kept and new ones wait for the catch-up, so a long
// hold over a busy cluster cannot grow the list without bound.
export const EXTRA_ROWS = 50;
const HINTS = {
  pointer: "order held while the pointer is here",
  focus: "order held while a row has the focus",
};
// Why a held row shows nothing queued (the title of its count).
export const GONE = {
  empty: "emptied: kept in place while the order is held",
  left: "not on this page now (emptied, or counted in others): kept in place while the order is held",
};

export class Hold {
  // `root`: the list; `catchUp` draws the last frame again, unheld; `item`:
  // the selector of its rows; `hints`: the words of the hint, by what holds.
  constructor(root, catchUp, { item, hints = HINTS }) {
    this.root = root;
    this.hints = hints;
    this.pointerRow = undefined; // the row under a mouse or pen; null: over no row; undefined: not over the list
    this.on = false;
    this.since = null; // when the hold began; null while there is none
    this.differs = false; // whether the rows shown are not the frame's, in its order
    this.skip = false; // the next frame is drawn unheld (a new search, projection or page)
    this.hint = root.dataset.holdHint ? document.getElementById(root.dataset.holdHint) : null;
    const release = () => {
      if (this.pointerRow === undefined && this.since !== null) catchUp();
    };
    // A touch has no hover, and its pointer leaves before the tap's click:
    // a tapped row takes the focus, which holds the list.
    root.addEventListener("pointerover", (e) => {
      if (e.pointerType !== "touch") this.pointerRow = e.target.closest(item);
    });
    root.addEventListener("pointerleave", (e) => {
      if (e.pointerType === "touch") return;
      this.pointerRow = undefined;
      release();
    });
    root.addEventListener("focusout", (e) => {
      if (!root.contains(e.relatedTarget)) release();
    });
  }

  // Before a frame is drawn: `focused`, whether the focus is in the list.
  begin(focused) {
    this.on = !this.skip && (focused || this.pointerRow !== undefined);
    this.skip = false;
    this.differs = false;
  }

  // The operator asked for other rows (typed a search, changed the
  // projection or page): held, the old ones stayed greyed under a resting
  // pointer until it moved.
  releaseNext() {
    this.skip = true;
  }

  // Whether rows inserted at the end of `container` (before `tail`) land
  // below every row under the pointer or with the focus.
  joinsBelow(container, tail) {
    if (!container.isConnected) return true; // a new row's group: the row joined below
    const active = document.activeElement;
    const anchors = [this.pointerRow, this.root.contains(active) ? active : undefined];
    return anchors.every((at) => {
      if (at === undefined) return true;
      // Over the list but on no row (or on one a collapse took out): nothing may move.
      if (at === null || !at.isConnected) return false;
      const after = (node) => Boolean(at.compareDocumentPosition(node) & Node.DOCUMENT_POSITION_FOLLOWING);
      return tail ? at !== tail && after(tail) : container.contains(at) || after(container);
    });
  }

  // After a frame is drawn: the hint, once a hold has kept a stale order a while.
  end(focused) {
    const now = performance.now();
    if (!this.on) this.since = null;
    else if (this.since === null) this.since = now;
    if (!this.hint) return;
    const shown = !this.hint.hidden;
    const show = this.on && (shown || (this.differs && now - this.since >= HINT_AFTER_MS));
    setText(this.hint, show ? this.hints[this.pointerRow !== undefined || !focused ? "pointer" : "focus"] : "");
    if (shown !== show) this.hint.hidden = !show;
  }
}

export class TreeHold extends Hold {
  // The queue tree's rows (tree.js); `catchUp` draws the last frame again, unheld.
  constructor(root, catchUp) {
    super(root, catchUp, { item: '[role="treeitem"]' });
  }

  // The nodes a held group shows: its rows in their order, with the frame's
  // figures, and a row whose node left the frame kept as emptied. A node new
  // to the group joins at its end (before its "others" row), only where that
  // is below the rows under the pointer and with the focus (EXTRA_ROWS
  // bounds how many).
  nodes(container, nodes) {
    const live = new Map(nodes.map((node, i) => [node.key, i]));
    // Without an "others" row in the frame every matching node is in it, so
    // one missing emptied; with one it may only have left this page.
    const paged = nodes.some(isOthers);
    const shown = [];
    for (let li = container.firstElementChild; li; li = li.nextElementSibling) {
      const i = live.get(keyOf(li));
      if (i !== undefined) shown.push(keepGroup(li, nodes[i]));
      else if (li._node) shown.push(emptied(li._node, paged ? "left" : "empty"));
    }
    const held = new Set(shown.map((node) => node.key));
    const fresh = nodes.filter((node) => !held.has(node.key));
    if (fresh.length) {
      const tail = shown.length && isOthers(shown[shown.length - 1]) ? container.lastElementChild : null;
      const room = this.joinsBelow(container, tail) ? Math.max(0, nodes.length + EXTRA_ROWS - shown.length) : 0;
      shown.splice(tail ? shown.length - 1 : shown.length, 0, ...fresh.slice(0, room));
    }
    if (!this.differs) {
      const order = shown.map((node) => (node.gone ? -1 : live.get(node.key)));
      this.differs = shown.length !== nodes.length || order.some((i, at) => i !== at);
    }
    return shown;
  }
}

// A held row whose node left the frame: nothing queued (`gone` says why),
// its child rows kept the same way.
function emptied(node, gone) {
  return { ...node, length: 0, by_priority: [], oldest_wait: null, children: [], gone };
}

// A held row keeps its open group even if the frame says it has no children
// left: its child rows stay, emptied.
function keepGroup(li, node) {
  const group = li.children[1];
  if (node.fanout || !group || !group.firstElementChild) return node;
  return { ...node, fanout: group.childElementCount };
}
