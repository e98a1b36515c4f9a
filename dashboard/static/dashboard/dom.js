// Keyed DOM reconciliation shared by the tree and the queriers panel.
// Invariant: after `placeChildren(container, wanted)` the container's element
// children are exactly `wanted`, in order, and the fewest nodes were moved:
// the rows that kept their relative order (a longest increasing run of their
// old positions) stay where they are. Moving a row costs a detach, an attach
// and style work for its whole subtree, and rankings shift by a few places per
// update, so minimal moves is what keeps an update cheap.

// Indices (into `seq`) of one longest strictly increasing subsequence;
// entries < 0 (new nodes) never belong to it.
function increasingRun(seq) {
  const tails = [];
  const prev = new Array(seq.length);
  for (let i = 0; i < seq.length; i++) {
    const v = seq[i];
    if (v < 0) continue;
    let lo = 0;
    let hi = tails.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (seq[tails[mid]] < v) lo = mid + 1;
      else hi = mid;
    }
    prev[i] = lo > 0 ? tails[lo - 1] : -1;
    tails[lo] = i;
  }
  const keep = new Set();
  for (let i = tails.length ? tails[tails.length - 1] : -1; i >= 0; i = prev[i]) keep.add(i);
  return keep;
}

export function placeChildren(container, wanted) {
  const position = new Map();
  let i = 0;
  for (let child = container.firstElementChild; child; child = child.nextElementSibling) {
    position.set(child, i++);
  }
  const keep = increasingRun(wanted.map((el) => (position.has(el) ? position.get(el) : -1)));
  let next = null;
  for (let j = wanted.length - 1; j >= 0; j--) {
    const el = wanted[j];
    if (!keep.has(j)) container.insertBefore(el, next);
    next = el;
  }
}

// Splits a container's element children into those whose key is in `keys`
// (key -> element, first one wins) and the stale rest, in document order.
// Nothing is detached: callers recycle stale rows for new keys (rewriting a
// row's text is far cheaper than detaching one row and building another)
// and remove only what is left over.
export function splitKeyed(container, keys, keyOf) {
  const kept = new Map();
  const stale = [];
  for (let child = container.firstElementChild; child; child = child.nextElementSibling) {
    const key = keyOf(child);
    if (key !== undefined && keys.has(key) && !kept.has(key)) kept.set(key, child);
    else stale.push(child);
  }
  return { kept, stale };
}

// Writes that skip the DOM when nothing changed: an update rewrites few of
// the many cells it visits.
export function setText(node, text) {
  if (node._text === undefined) node._text = node.textContent;
  if (node._text !== text) {
    node._text = text;
    // Rewriting the one text node keeps its layout object; textContent
    // would replace the node and rebuild it.
    const only = node.firstChild;
    if (only && only === node.lastChild && only.nodeType === 3) only.data = text;
    else node.textContent = text;
  }
}

// A null value removes the attribute (getAttribute's answer for one not set).
export function setAttr(node, name, value) {
  if (node.getAttribute(name) === value) return;
  if (value === null) node.removeAttribute(name);
  else node.setAttribute(name, value);
}

// Whether the keyboard's place is lost: nothing has the focus (a disabled
// button, or a re-rendered page, dropped it to the body).
export const focusLost = () => document.activeElement === document.body || !document.activeElement;

const textOf = (node) => node.textContent.replace(/\s+/g, " ").trim();

// A status line (role=status) says what a box the server answered into holds
// (the tenant editor's explain and dry-run boxes): a screen reader does not
// read a box whose content is replaced whole, nor all of a long one. Its
// facts as "term: value" after any warning above them, else its text.
export function announce(status, box) {
  const facts = box.querySelectorAll(".facts > div");
  const notes = [...box.querySelectorAll(".rejected, .error")].map(textOf);
  const pairs = [...facts].map((d) => `${textOf(d.querySelector("dt"))}: ${textOf(d.querySelector("dd"))}`);
  status.textContent = facts.length ? [...notes, pairs.join(", ")].join(" ") : textOf(box);
}
