// The workflows page: search, page through, enable or disable.

import { api, apiTagged, ApiError, mayUse, WRITE_SCOPE } from "./api.js";
import { h, fill, notice, query, when, newId, announce, add } from "./dom.js";

const PER_PAGE = 20;

export async function renderWorkflows(main, _params, { search, navigate }) {
  document.title = "Workflows · Trellis";
  const q = search.get("q") || "";
  const page = Math.max(1, Number(search.get("page")) || 1);
  const searchId = newId("search");
  const input = h("input", { id: searchId, type: "search", name: "q", value: q, maxlength: "200" });
  const form = h("form.search", {
    role: "search",
    on: { submit: (e) => { e.preventDefault(); navigate(`/console/workflows${query({ q: input.value.trim() })}`); } },
  }, h("label", { for: searchId }, "Search by name or description"), h("div.inline", {}, input, h("button.primary", { type: "submit" }, "Search")));
  const results = h("div", { "aria-live": "polite" });
  add(main, h("h1", { tabindex: "-1" }, "Workflows"), form, results);

  let data;
  try {
    data = await api(`/workflows${query({ query: q, page, perPage: PER_PAGE })}`);
  } catch (err) {
    if (!(err instanceof ApiError && err.status === 401)) fill(results, notice("error", `Could not load workflows: ${err.message}`));
    return null;
  }
  const { workflows, pagination } = data;
  if (!workflows.length) {
    fill(results, h("p", {}, q ? `No workflow matches “${q}”.` : "No workflows yet. Create one through the API (POST /api/v1/workflows)."));
    return null;
  }
  fill(results,
    h("p.summary", {}, `${pagination.total} workflow${pagination.total === 1 ? "" : "s"}${q ? ` matching “${q}”` : ""}.`),
    h("div.table-wrap", {}, h("table.cards", {},
      h("caption.visually-hidden", {}, "Workflows"),
      h("thead", {}, h("tr", {}, ["Name", "Description", "Nodes", "Version", "Updated", "State"].map((t) => h("th", { scope: "col" }, t)))),
      h("tbody", {}, workflows.map(row)))),
    pager(pagination));

  function row(wf) {
    return h("tr", { dataset: { workflowId: wf.id } },
      h("th.text", { scope: "row", "data-label": "Name" }, h("a", { href: `/console/workflows/${encodeURIComponent(wf.id)}` }, wf.name)),
      h("td.text", { "data-label": "Description" }, wf.description || h("span.muted", {}, "—")),
      h("td", { "data-label": "Nodes" }, String(wf.numNodes)),
      h("td", { "data-label": "Version" }, String(wf.version)),
      h("td", { "data-label": "Updated" }, when(wf.updatedAt)),
      h("td", { "data-label": "State" }, toggleButton(wf)));
  }

  function pager(p) {
    if (p.totalPages <= 1) return null;
    return h("nav.pager", { "aria-label": "Workflow pages" },
      page > 1 ? h("a", { href: `/console/workflows${query({ q, page: page - 1 })}` }, "← Previous") : null,
      h("span", {}, `Page ${page} of ${p.totalPages}`),
      page < p.totalPages ? h("a", { href: `/console/workflows${query({ q, page: page + 1 })}` }, "Next →") : null);
  }
  return null;
}

/** An enable/disable switch (a button with aria-pressed) that toggles through the API;
 * `onChange(updated, etag)` gets the API's answer and its ETag. */
export function toggleButton(wf, onChange) {
  // Switching needs workflows-write: without it the switch shows the state, disabled.
  const may = mayUse(WRITE_SCOPE);
  const button = h("button.toggle", {
    type: "button", "aria-pressed": String(wf.enabled), "aria-label": `${wf.name} enabled`,
    disabled: !may, title: may ? null : "Switching needs the workflows-write scope, which your sign-in lacks",
    on: { click },
  }, wf.enabled ? "Enabled" : "Disabled");
  const error = h("span.field-error", { "aria-live": "polite" });
  async function click() {
    const focused = document.activeElement === button; // disabling it takes the focus away
    button.disabled = true;
    try {
      const { data: updated, etag } = await apiTagged(`/workflows/${encodeURIComponent(wf.id)}/toggle`, { method: "POST", body: { enabled: !wf.enabled } });
      wf.enabled = updated.enabled;
      button.setAttribute("aria-pressed", String(wf.enabled));
      button.textContent = wf.enabled ? "Enabled" : "Disabled";
      error.textContent = "";
      announce(`${wf.name} is now ${wf.enabled ? "enabled" : "disabled"}`);
      if (onChange) onChange(updated, etag);
    } catch (err) {
      error.textContent = `Not changed: ${err.message}`;
    } finally {
      button.disabled = !may;
      if (focused) button.focus();
    }
  }
  return h("span.toggle-wrap", {}, button, error);
}
