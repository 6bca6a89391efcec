// A line diff (Myers' O(ND) algorithm) shown as a unified diff with 3 lines of context.

import { h } from "./dom.js";

const CONTEXT = 3;
// Beyond this many differing lines the trace (O(D²) memory) grows too large; say so instead.
const MAX_EDITS = 2000;

/** Edit script of two line arrays: [{op: " " | "-" | "+", line, a, b}], or null if too large. */
export function diffLines(a, b) {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const offset = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace = [];
  for (let d = 0; d <= Math.min(max, MAX_EDITS); d++) {
    // Only diagonals -d-1 … d+1 are read back for this round.
    trace.push({ lo: -d - 1, values: v.slice(offset - d - 1, offset + d + 2) });
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[offset + k - 1] < v[offset + k + 1])
        ? v[offset + k + 1]
        : v[offset + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[offset + k] = x;
      if (x >= n && y >= m) return backtrack(trace, a, b, d);
    }
  }
  return null;
}

function backtrack(trace, a, b, depth) {
  const ops = [];
  let x = a.length;
  let y = b.length;
  for (let d = depth; d > 0; d--) {
    const { lo, values } = trace[d];
    const at = (k) => values[k - lo];
    const k = x - y;
    const prevK = k === -d || (k !== d && at(k - 1) < at(k + 1)) ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) { x--; y--; ops.push({ op: " ", line: a[x], a: x, b: y }); }
    if (x === prevX) { y--; ops.push({ op: "+", line: b[y], a: x, b: y }); }
    else { x--; ops.push({ op: "-", line: a[x], a: x, b: y }); }
  }
  while (x > 0 && y > 0) { x--; y--; ops.push({ op: " ", line: a[x], a: x, b: y }); }
  return ops.reverse();
}

/** The diff of two texts as a <pre> of hunks; equal texts say so. */
export function renderDiff(before, after, { from, to }) {
  const ops = diffLines(before.split("\n"), after.split("\n"));
  if (ops === null) return h("p", {}, `The versions differ in more than ${MAX_EDITS} lines; compare them with the API.`);
  const changed = ops.filter((o) => o.op !== " ").length;
  if (!changed) return h("p.diff-summary", {}, `${from} and ${to} have the same definition.`);
  const added = ops.filter((o) => o.op === "+").length;
  const lines = [];
  let lastShown = -1;
  ops.forEach((o, i) => {
    const near = ops.slice(Math.max(0, i - CONTEXT), i + CONTEXT + 1).some((x) => x.op !== " ");
    if (!near) return;
    if (lastShown >= 0 && i > lastShown + 1) lines.push(h("span.diff-gap", {}, "⋯\n"));
    lastShown = i;
    const cls = o.op === "+" ? "diff-add" : o.op === "-" ? "diff-del" : "diff-same";
    const label = o.op === "+" ? "added" : o.op === "-" ? "removed" : null;
    lines.push(h(`span.${cls}`, label ? { title: label } : {}, `${o.op} ${o.line}\n`));
  });
  return h("div", {},
    h("p.diff-summary", {}, `${from} → ${to}: ${added} line${added === 1 ? "" : "s"} added, ${changed - added} removed (“+” added, “-” removed).`),
    h("pre.diff", { tabindex: "0", "aria-label": `Differences from ${from} to ${to}` }, lines));
}
