// The drill-down's list: its rows' <li>s (drill_rows.js) keyed by request,
// kept in the listed order and patched in place, so the list keeps its
// scroll and open rows across updates; the keyboard focus kept through
// them; and only the rows in or near the list's view rewritten.
//
// At the panel's cap of 500 rows, rewriting every row's live texts (its
// place, its wait, its "… ago") on each update and tick, about four times a
// second, laid all 500 rows out again each time: about half of Chromium's
// main thread, in tasks of 100 ms and more. A row off in the list keeps the
// texts it was last given, which no one sees, and is brought up to date as
// it comes within a list's height of the view: scrolled to, it is current
// before it shows; jumped to (End, a focus far down), it is by the next frame.
// Which rows those are comes from an IntersectionObserver, off the update's
// path: measuring them in the update would force a layout of the rows it
// had just written. (`content-visibility: auto` skipped their layout too,
// but left rows off screen at a guessed height, and the list jumped.)

import { placeChildren, splitKeyed } from "./dom.js";
import { createRow, updateRow, updateWait } from "./drill_rows.js";

// A row's <li> takes the focus from script only, and only until it loses it.
export function focusRow(li) {
  li.tabIndex = -1;
  li.addEventListener("blur", () => li.removeAttribute("tabindex"), { once: true });
  li.focus({ preventScroll: true });
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
    this.near = new Set(); // the <li>s in or near the view
    this.observer = new IntersectionObserver((entries) => this.seen(entries), { root: list, rootMargin: "100% 0px" });
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
    const place = this.focusPlace();
    this.view = view;
    const keys = new Set(rows.map((r) => r.key));
    const { kept, stale } = splitKeyed(this.list, keys, (li) => li.dataset.key);
    for (const li of stale) {
      this.observer.unobserve(li);
      this.near.delete(li);
      li.remove();
    }
    const wanted = rows.map((row, i) => {
      let li = kept.get(row.key);
      const fresh = !li;
      if (fresh) {
        li = createRow(row, this.editor);
        this.observer.observe(li);
      }
      li._row = row;
      li._place = i;
      if (fresh || this.near.has(li)) this.draw(li);
      return li;
    });
    placeChildren(this.list, wanted);
    if (place) this.keepFocus(place);
  }

  draw(li) {
    const { open, texts, ...view } = this.view;
    const { key } = li._row;
    updateRow(li, li._row, li._place, { ...view, open: open.has(key), text: texts.get(key) });
  }

  // The waits at `now`, between updates. A row drawn later is drawn at it too:
  // paused, one scrolled into view shows the wait the others froze at.
  tick(now) {
    if (!this.view) return;
    this.view.now = now;
    for (const li of this.near) updateWait(li, li._row, now);
  }

  seen(entries) {
    for (const { target: li, isIntersecting } of entries) {
      if (!isIntersecting) this.near.delete(li);
      else if (li.parentNode === this.list && !this.near.has(li)) {
        this.near.add(li);
        this.draw(li);
      }
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
