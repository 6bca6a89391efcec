// The definition tree, drawn from a graph view (nodes with parentId, typed edges).

import { h, badge } from "./dom.js";

const LANE_LABELS = {
  branch_true: () => "if true",
  branch_false: () => "if false",
  choice: (edge) => `route “${edge.choice}”`,
  parallel: (_edge, i) => `in parallel: branch ${i + 1}`,
  loop: () => "each iteration",
  map: () => "each item",
};

/** The tree as nested lists (nodes as buttons with `onSelect`): {element, setStatus, select}. */
export function renderTree(graph, { onSelect, showStatus = true } = {}) {
  const byId = new Map(graph.nodes.map((n) => [n.id, n]));
  const next = new Map();
  const entries = new Map();
  const hasPrevious = new Set();
  for (const edge of graph.edges) {
    if (edge.kind === "sequence") {
      const a = byId.get(edge.source);
      const b = byId.get(edge.target);
      if (a && b && (a.parentId || null) === (b.parentId || null)) {
        next.set(edge.source, edge.target);
        hasPrevious.add(edge.target);
      }
    } else if (LANE_LABELS[edge.kind]) {
      if (!entries.has(edge.source)) entries.set(edge.source, []);
      entries.get(edge.source).push(edge);
    }
  }
  const rows = new Map();
  const placed = new Set();

  function lane(startId) {
    const ids = [];
    for (let id = startId; id && !placed.has(id); id = next.get(id)) {
      placed.add(id);
      ids.push(id);
    }
    return h("ol.tree-list", {}, ids.map((id) => item(byId.get(id))));
  }

  function item(node) {
    const label = [node.name, node.nodeType, node.executorKey].filter(Boolean).join(", ");
    const status = showStatus ? badge(node.status) : null;
    const content = [
      h("span.node-name", {}, node.name),
      h("span.node-type", {}, node.nodeType),
      node.executorKey ? h("code.node-executor", {}, node.executorKey) : null,
      status,
    ];
    const row = onSelect
      ? h("button.node", {
          type: "button", "aria-pressed": "false", dataset: { nodeId: node.id },
          // The badge's words ("awaiting approval"), not the raw value a screen reader spells out.
          "aria-label": showStatus ? `${label}: ${status.textContent}` : label,
          on: { click: () => onSelect(node.id) },
        }, content)
      : h("div.node", { dataset: { nodeId: node.id } }, content);
    rows.set(node.id, { row, status, label });
    const lanes = (entries.get(node.id) || []).map((edge, i) =>
      h("div.lane", {}, h("p.lane-label", {}, LANE_LABELS[edge.kind](edge, i)), lane(edge.target)));
    return h("li", {}, row, lanes.length ? h("div.lanes", {}, lanes) : null);
  }

  const tops = graph.nodes.filter((n) => !n.parentId);
  const first = tops.find((n) => !hasPrevious.has(n.id)) || tops[0];
  const root = first ? lane(first.id) : h("ol.tree-list");
  // Anything no edge reached still shows (at the end of the top level).
  for (const node of graph.nodes) if (!placed.has(node.id)) root.append(item(node));
  root.classList.add("tree");

  return {
    element: root,
    setStatus(nodeId, status) {
      const entry = rows.get(nodeId);
      if (!entry || !entry.status) return;
      const fresh = badge(status);
      entry.status.replaceWith(fresh);
      entry.status = fresh;
      if (onSelect) entry.row.setAttribute("aria-label", `${entry.label}: ${fresh.textContent}`);
    },
    select(nodeId) {
      for (const [id, entry] of rows) {
        if (onSelect) entry.row.setAttribute("aria-pressed", String(id === nodeId));
      }
    },
  };
}
