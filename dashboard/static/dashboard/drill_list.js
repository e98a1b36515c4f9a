// The drill-down's list: its rows' <li>s (drill_rows.js) keyed by request,
// kept in the listed order and patched in place, so the list keeps its
// scroll and open rows across updates; the keyboard focus kept through
// them; and only the rows in or near the list's view rewritten.
//
// At the panel's cap of 500 rows, rewriting every row's live texts (its
// place, its wait, its "… ago") on each update and tick, about four times a
// second, laid all 500 rows out again each time: about half of Chromium's
// main thread, in tasks of 100 ms and more. A row off in the list keeps the
// texts it was last given and is brought up to date as it comes within a
// list's height of the view: scrolled to, it is current before it shows.
// Which rows those are comes from an IntersectionObserver, off the update's
// path: measuring them in the update would force a layout of the rows it
// had just written. (`content-visibility: auto` skipped their layout too,
// but left rows off screen at a guessed height, and the list jumped.)
//
// The observer reports after the frame is painted, so a jump (End, Back to
// a row far down, a focus or scrollIntoView far away) showed its rows' old
// texts for a frame. The list's scroll event comes before that paint: the
// rows then in view are rewritten there (`catchUp`). And a row left with old
// texts is marked `stale` meanwhile: its live cells (place, oldest tag,
// details, wait) are `visibility: hidden` (dashboard.css), which keeps their
// size, paints none of the old text should a scroll the compositor runs on
// its own show the row before the page's thread has rewritten it, and takes
// them out of the accessibility tree, so a screen reader never reads an old
// wait or place. The row's query and buttons, which do not change, stay.
//
// Requests leave and arrive several times a second, and the rows shifted
// under a resting pointer: a "Cancel…" aimed at one request landed on
// another. While the pointer is over the list or the focus is in it, the
// list holds (tree_hold.js's `Hold`, as the queue tree does): its rows stay
// in their places, a row whose request left stays where it was, greyed and
// saying so, new rows join only below the rows in use, and the list
// catches up the moment both pointer and focus have left.

import { placeChildren, setText, splitKeyed } from "./dom.js";
import { createRow, updateRow, updateWait } from "./drill_rows.js";
import { EXTRA_ROWS, Hold } from "./tree_hold.js";

const LEFT = "left the queue";

// A row's <li> takes the focus from script only, and only until it loses it.
export function focusRow(li) {
  li.tabIndex = -1;
  li.addEventListener("blur", () => li.removeAttribute("tabindex"), { once: true });
  li.focus({ preventScroll: true });
}

// A row whose live texts are not current any more: hidden, not read (above).
function markStale(li) {
  if (li._stale) return;
  li._stale = true;
  li.classList.add("stale");
}

// A held row whose request left the queue (`left`), or one back in the frame:
// greyed and its buttons marked unavailable (not disabled: a focused button
// disabled would drop the focus, and with it the hold, under the operator).
function markLeft(li, left) {
  if (Boolean(li._left) === left) return;
  li._left = left;
  li.classList.toggle("left", left);
  for (const b of li.querySelectorAll(".acts button")) {
    if (left) b.setAttribute("aria-disabled", "true");
    else b.removeAttribute("aria-disabled");
  }
}

// The drill-down's card keeps its height while it shows one node. It sits at
// the foot of the page, most often scrolled to the bottom: when its tenant's
// queue emptied, the list collapsed (560 px of rows to none), the page got
// that much shorter, the browser scrolled it back by as much, and the whole
// panel, its boxes and Close under the pointer, moved down the window. The
// card's min-height follows the tallest it has been since it was opened on
// its node, so the page never gets shorter under it; the room a collapsed
// list leaves stays below its empty message. Content above the card that
// shrinks (the tree losing the tenant's row) needs nothing: the browser's
// scroll anchoring keeps the card in place, and the page has the room.
// Heights come from a ResizeObserver, which reports after layout and before
// paint, so no update forces a layout to measure. Only the queue's own
// comings and goings are held, as the list's `Hold` holds its rows: rows the
// operator asked for (the filter boxes, Show more, another node) start
// afresh from the frame that answers them, and so does a resized window,
// whose text wraps anew.
export class KeptHeight {
  constructor(el) {
    this.el = el;
    this.tallest = 0;
    this.pending = false; // other rows were asked for: the frame answering them lets go
    this.observer = new ResizeObserver((entries) => this.seen(entries.at(-1)));
    this.observer.observe(el);
    window.addEventListener("resize", () => this.release());
  }

  releaseNext() {
    this.pending = true;
  }

  // A frame was drawn; `answers`: it lists what was last asked for.
  drawn(answers) {
    if (!this.pending) return;
    this.release();
    this.pending = !answers;
  }

  seen(entry) {
    const height = entry.borderBoxSize?.[0]?.blockSize ?? this.el.offsetHeight;
    if (height <= this.tallest) return; // hidden (0), or held by the min-height
    this.tallest = height;
    this.el.style.minHeight = `${height}px`; // as tall as it is: nothing moves now
  }

  release() {
    this.tallest = 0;
    this.pending = false;
    this.el.style.minHeight = "";
    // Observed afresh, it reports its height at the next frame even if that
    // did not change (an observer reports only changes), and is held at it.
    this.observer.unobserve(this.el);
    this.observer.observe(this.el);
  }
}

export class DrillList {
  // `list`: the <ol>; `editor`: rows get a Cancel… button; `fallback`: what
  // takes the focus when the row that had it left and no row is left.
  constructor(list, { editor, fallback }) {
    this.list = list;
    this.editor = editor;
    this.fallback = fallback;
    // What the rows were last drawn with: updateRow's view, its `open` and
    // `text` as the panel's set of opened keys and map of fetched texts.
    this.view = null;
    this.live = []; // the last frame's rows, listed again when a hold ends
    this.near = new Set(); // the <li>s in or near the view
    this.hold = new Hold(list, () => this.render(this.live, this.view), { item: ".drill-row" });
    this.observer = new IntersectionObserver((entries) => this.seen(entries), { root: list, rootMargin: "100% 0px" });
    list.addEventListener("scroll", () => this.catchUp(), { passive: true });
  }

  clear() {
    this.observer.disconnect();
    this.near.clear();
    this.list.replaceChildren();
  }

  // Lists `rows` (decoded, in order) as `view` says: a new row is drawn
  // whole wherever it lands (its height is right from the start), a kept one
  // only in or near the view; each knows its row and place for later.
  render(rows, view) {
    this.live = rows;
    const place = this.focusPlace();
    const focused = this.list.contains(document.activeElement);
    this.view = view;
    this.hold.begin(focused);
    const shown = this.hold.on ? this.held(rows) : rows.map((row, i) => ({ row, place: i, left: false }));
    const keys = new Set(shown.map(({ row }) => row.key));
    const { kept, stale } = splitKeyed(this.list, keys, (li) => li.dataset.key);
    for (const li of stale) {
      this.observer.unobserve(li);
      this.near.delete(li);
      li.remove();
    }
    const wanted = shown.map(({ row, place: i, left }) => {
      let li = kept.get(row.key);
      const fresh = !li;
      if (fresh) {
        li = createRow(row, this.editor);
        this.observer.observe(li);
      }
      li._row = row;
      li._place = i;
      markLeft(li, left);
      if (fresh || this.near.has(li)) this.draw(li);
      else markStale(li);
      return li;
    });
    placeChildren(this.list, wanted);
    if (place) this.keepFocus(place);
    if (this.hold.on || this.hold.since !== null) this.hold.end(focused);
  }

  // The rows a held list shows: its rows in their places, each with its
  // request as this frame has it (its place in the queue now), one whose
  // request is not in the frame kept as having left; the frame's new rows
  // after them, where that moves no row in use (EXTRA_ROWS bounds how many).
  held(rows) {
    const live = new Map(rows.map((row, i) => [row.key, i]));
    const shown = [];
    for (let li = this.list.firstElementChild; li; li = li.nextElementSibling) {
      const i = live.get(li.dataset.key);
      if (i !== undefined) shown.push({ row: rows[i], place: i, left: false });
      else if (li._row) shown.push({ row: li._row, place: -1, left: true });
    }
    const held = new Set(shown.map(({ row }) => row.key));
    const fresh = [];
    rows.forEach((row, i) => { if (!held.has(row.key)) fresh.push({ row, place: i, left: false }); });
    const room = this.hold.joinsBelow(this.list, null) ? Math.max(0, rows.length + EXTRA_ROWS - shown.length) : 0;
    shown.push(...fresh.slice(0, room));
    this.hold.differs = shown.length !== rows.length || shown.some(({ place }, at) => place !== at);
    return shown;
  }

  draw(li) {
    const { open, texts, ...view } = this.view;
    const { key } = li._row;
    updateRow(li, li._row, li._place, { ...view, open: open.has(key), text: texts.get(key), left: Boolean(li._left) });
    // Its last facts stay readable; its place and wait are said to be over.
    if (li._left) {
      setText(li._cells.pos, "–");
      setText(li._cells.wait, LEFT);
    }
    if (li._stale) {
      li._stale = false;
      li.classList.remove("stale");
    }
  }

  // The waits at `now`, between updates. A row drawn later is drawn at it too:
  // paused, one scrolled into view shows the wait the others froze at.
  tick(now) {
    if (!this.view) return;
    this.view.now = now;
    for (const li of this.near) if (!li._left) updateWait(li, li._row, now);
  }

  seen(entries) {
    for (const { target: li, isIntersecting } of entries) {
      if (!isIntersecting) {
        // Its texts go stale from the next tick on (a new row's included).
        this.near.delete(li);
        if (li.parentNode === this.list) markStale(li);
      } else if (li.parentNode === this.list && !this.near.has(li)) {
        this.near.add(li);
        this.draw(li);
      }
    }
  }

  // On the list's scroll, before the frame is painted: the rows now in its
  // view that the observer has not yet brought up to date are drawn. Every
  // offset is read before any row is written, so this costs the one layout
  // the frame would make anyway, plus the rewritten rows' own; a scroll
  // that brings no far row (the usual one, the observer's margin ahead of
  // it) reads a dozen offsets and writes nothing.
  catchUp() {
    if (!this.view) return;
    const rows = this.list.children;
    if (!rows.length) return;
    const base = rows[0].offsetTop;
    const top = this.list.scrollTop;
    const bottom = top + this.list.clientHeight;
    let lo = 0;
    let hi = rows.length;
    while (lo < hi) { // the first row whose bottom is below the view's top
      const mid = (lo + hi) >> 1;
      const li = rows[mid];
      if (li.offsetTop - base + li.offsetHeight <= top) lo = mid + 1;
      else hi = mid;
    }
    const due = [];
    for (let i = lo; i < rows.length && rows[i].offsetTop - base < bottom; i++) {
      if (!this.near.has(rows[i])) due.push(rows[i]);
    }
    for (const li of due) {
      this.near.add(li);
      this.draw(li);
    }
  }

  // Where the keyboard is in the list, before the rows change: the focused
  // element and its row's place.
  focusPlace() {
    const active = document.activeElement;
    const li = active && this.list.contains(active) ? active.closest(".drill-row") : null;
    return li ? { active, index: [...this.list.children].indexOf(li) } : null;
  }

  // A focused row that moved was taken out and put back, and one whose
  // request left the queue is gone: either way the focus fell to the page's
  // body and the next Tab started from the top of the inspector. It goes back
  // to the element, or to the row now in that place (the last row; the
  // fallback once the list is empty). The row, not its same button: an
  // Enter meant for the request that left would act on another one.
  keepFocus({ active, index }) {
    if (document.activeElement === active) return;
    if (active.isConnected) {
      if (active.matches(".drill-row")) focusRow(active);
      else active.focus({ preventScroll: true });
      return;
    }
    const rows = this.list.children;
    const li = rows[Math.min(index, rows.length - 1)];
    if (li) focusRow(li);
    else this.fallback.focus({ preventScroll: true });
  }
}
