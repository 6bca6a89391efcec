// One workflow: state, trigger form, runs, schedules, versions (diff, restore), tree.

import { api, apiTagged, ApiError, hidden, requestKeys, mayUse, CONTROL_SCOPE, WRITE_SCOPE } from "./api.js";
import { h, fill, notice, query, when, newId, badge, facts, add, announce, folded } from "./dom.js";
import { toggleButton } from "./workflows.js";
import { renderTree } from "./tree.js";
import { renderDiff } from "./diff.js";
import { jsonEditor } from "./jsoneditor.js";
import { draftOf, signedInAgain } from "./drafts.js";
import { renderSchedules } from "./schedules.js";
import { confirmDialog } from "./dialog.js";

const RUNS_PER_PAGE = 20;
const RUNS_REFRESH_SECONDS = 10;
// Versions listed above the compare form; earlier ones are behind a disclosure.
const VERSIONS_LISTED = 10;
// What a version diff compares: the definition as saved, without bookkeeping.
const NOT_COMPARED = new Set(["workflowId", "version", "createdAt", "createdBy"]);

export async function renderWorkflow(main, [workflowId], { config, search, navigate }) {
  const path = `/workflows/${encodeURIComponent(workflowId)}`;
  const consolePath = `/console/workflows/${encodeURIComponent(workflowId)}`;
  let wf;
  // The shown definition's ETag: a restore's If-Match, so a later save is not overwritten.
  let etag;
  let graph;
  let versions;
  try {
    let read;
    [read, graph, versions] = await Promise.all([apiTagged(path), api(`${path}/graph`), api(`${path}/versions`)]);
    ({ data: wf, etag } = read);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    add(main, h("h1", { tabindex: "-1" }, "Workflow"), notice("error", `Could not load the workflow: ${err.message}`));
    return null;
  }
  if (!main.isConnected) return null; // the user moved on while it loaded
  const status = search.get("status") || "";
  const page = Math.max(1, Number(search.get("page")) || 1);

  const triggerSection = h("section.card", { "aria-labelledby": "trigger-h" });
  const runsSection = h("section", { "aria-labelledby": "runs-h" });
  const schedulesSection = h("section", { "aria-labelledby": "schedules-h" });
  const versionsSection = h("section", { "aria-labelledby": "versions-h" });
  const headBox = h("div");
  const factsBox = h("div");
  const treeBox = h("div.tree-wrap");

  add(main, headBox, factsBox, triggerSection, runsSection, schedulesSection, versionsSection,
    h("section", { "aria-labelledby": "definition-h" },
      h("h2", { id: "definition-h" }, "Definition"), treeBox));

  renderHead();
  renderFacts();
  renderDefinition();
  renderTrigger();
  await Promise.all([
    renderRuns(), renderVersions(),
    renderSchedules(schedulesSection, { wf, path, consolePath, onRunStarted: renderRuns }),
  ]);
  // New runs show without a reload; not in a hidden tab, nor over a list in use.
  const timer = setInterval(() => {
    if (!hidden() && !runsSection.contains(document.activeElement)
      && runsSection.querySelector("select").value === status) renderRuns();
  }, RUNS_REFRESH_SECONDS * 1000);
  return () => clearInterval(timer);

  /** The name and description, which a restore may change. */
  function renderHead() {
    document.title = `${wf.name} · Trellis`;
    fill(headBox,
      h("nav.crumbs", { "aria-label": "Breadcrumb" },
        h("a", { href: "/console/workflows" }, "Workflows"), " › ", h("span", { "aria-current": "page" }, wf.name)),
      h("div.page-head", {}, h("h1", { tabindex: "-1" }, wf.name), toggleButton(wf, toggled)),
      wf.description ? h("p", {}, wf.description) : null);
  }

  /** The page's own switch changed the ETag: no conflict, unless another version was saved. */
  function toggled(updated, tag) {
    if (updated.version === wf.version && tag) etag = tag;
    renderTrigger();
  }

  function renderFacts() {
    fill(factsBox, facts([["Id", h("code", {}, wf.id)], ["Version", String(wf.version)], ["Updated", when(wf.updatedAt)]]));
  }

  function renderDefinition() {
    fill(treeBox, renderTree(graph, { showStatus: false }).element);
  }

  function renderTrigger() {
    const errors = h("div", { "aria-live": "assertive" });
    const may = mayUse(CONTROL_SCOPE);
    const send = h("button.primary", { type: "submit", disabled: !wf.enabled || !may }, "Trigger run");
    const editor = jsonEditor({
      label: "Initial input (JSON object)", name: "initialInput", value: {}, rows: 6, expect: "object",
      hint: "Steps see it as input in their templates and CEL expressions.",
    });
    const form = h("form", { novalidate: true, on: { submit } }, editor.element, errors, h("div.actions", {}, send));
    fill(triggerSection,
      h("h2", { id: "trigger-h" }, "Trigger a run"),
      wf.enabled ? null : notice("info", "This workflow is disabled: enable it to trigger a run."),
      may ? null : notice("info", "Triggering a run needs the workflows-control scope, which your sign-in lacks."),
      form);
    const draft = draftOf(`trigger:${workflowId}`, form, () => ({ sent: keyFor.sent() }));
    // A double click, or the same input sent again after a lost answer (or after signing in
    // again), starts one run.
    const keyFor = requestKeys(draft && draft.sent);
    if (draft) fill(errors, signedInAgain());

    async function submit(event) {
      event.preventDefault();
      const { value: initialInput, error } = editor.read();
      if (error) {
        fill(errors, notice("error", `Not started: the input ${error}`));
        return;
      }
      fill(errors);
      const body = { triggerSource: "manual", initialInput };
      send.disabled = true;
      try {
        const accepted = await api(`${path}/runs`, { method: "POST", body, extraHeaders: { "Idempotency-Key": keyFor(body) } });
        navigate(`${consolePath}/runs/${encodeURIComponent(accepted.runId)}`);
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return; // the sign-in page took over
        send.disabled = !wf.enabled || !may;
        fill(errors, notice("error", `Not started: ${err.message}`));
        send.focus(); // disabling it took the focus away
      }
    }
  }

  async function renderRuns() {
    const selectId = newId("status");
    const select = h("select", { id: selectId, name: "status" },
      h("option", { value: "" }, "every status"),
      config.runStatuses.map((s) => h("option", { value: s, selected: s === status }, s.replace(/_/g, " "))));
    const filter = h("form.inline-form", {
      on: { submit: (e) => { e.preventDefault(); navigate(`${consolePath}${query({ status: select.value })}`); } },
    }, h("label", { for: selectId }, "Show runs with"), select, h("button.secondary", { type: "submit" }, "Filter"));
    let data;
    try {
      // Counts, not node runs: a page of runs of thousands of node runs each was megabytes.
      data = await api(`${path}/runs${query({ status, page, perPage: RUNS_PER_PAGE, nodeRuns: "summary" })}`);
    } catch (err) {
      fill(runsSection, h("h2", { id: "runs-h" }, "Runs"), filter, notice("error", `Could not load runs: ${err.message}`));
      return;
    }
    const { runs, pagination } = data;
    fill(runsSection, h("h2", { id: "runs-h" }, "Runs"), filter,
      runs.length
        ? h("div.table-wrap", {}, h("table.cards", {},
            h("caption.visually-hidden", {}, "Runs"),
            h("thead", {}, h("tr", {}, ["Run", "Status", "Trigger", "Version", "Started", "Finished"].map((t) => h("th", { scope: "col" }, t)))),
            h("tbody", {}, runs.map((r) => h("tr", { dataset: { runId: r.id } },
              h("th.text", { scope: "row", "data-label": "Run" }, h("a", { href: `${consolePath}/runs/${encodeURIComponent(r.id)}` }, h("code", {}, r.id))),
              h("td", { "data-label": "Status" }, badge(r.status)),
              h("td", { "data-label": "Trigger" }, r.triggerSource),
              h("td", { "data-label": "Version" }, String(r.workflowVersion)),
              h("td", { "data-label": "Started" }, when(r.startedAt)),
              h("td", { "data-label": "Finished" }, when(r.finishedAt)))))))
        : pagination.total > 0
          ? h("p", {}, `Page ${page} is past the last (${pagination.totalPages}). `,
              h("a", { href: `${consolePath}${query({ status, page: pagination.totalPages })}` }, "Go to the last page"))
          : h("p", {}, status ? `No ${status.replace(/_/g, " ")} runs.` : "No runs yet."),
      pagination.totalPages > 1 && page <= pagination.totalPages
        ? h("nav.pager", { "aria-label": "Run pages" },
            page > 1 ? h("a", { href: `${consolePath}${query({ status, page: page - 1 })}` }, "← Newer") : null,
            h("span", {}, `Page ${page} of ${pagination.totalPages}`),
            page < pagination.totalPages ? h("a", { href: `${consolePath}${query({ status, page: page + 1 })}` }, "Older →") : null)
        : null);
  }

  async function renderVersions(message = null) {
    const list = versions.versions;
    const out = h("div", { "aria-live": "polite" });
    const restored = h("div", { "aria-live": "assertive" }, message);
    const fromId = newId("from");
    const toId = newId("to");
    const options = (selected) => list.map((v) => h("option", { value: String(v.version), selected: v.version === selected }, `v${v.version} · ${new Date(v.createdAt).toLocaleString()}`));
    const from = h("select", { id: fromId, name: "from" }, options(Math.max(1, wf.version - 1)));
    const to = h("select", { id: toId, name: "to" }, options(wf.version));
    // Who saved it: versions saved before Trellis recorded it name no one.
    const by = (v) => (v.createdBy ? ` by ${v.createdBy}` : "");
    // Saving a definition needs workflows-write: without it Restore is offered disabled.
    const mayWrite = mayUse(WRITE_SCOPE);
    const restoreButton = (v) => h("button.secondary.small", {
      type: "button", "aria-label": `Restore v${v.version}`, dataset: { restore: String(v.version) },
      disabled: !mayWrite, title: mayWrite ? null : "Restoring needs the workflows-write scope, which your sign-in lacks",
      on: { click: (event) => restore(v, event.currentTarget) },
    }, "Restore");
    const item = (v) => h("li", { dataset: { version: String(v.version) } },
      h("strong", {}, `v${v.version}`), ` · ${v.name} · ${v.numNodes} ${v.numNodes === 1 ? "node" : "nodes"} · `, when(v.createdAt), by(v),
      v.version === wf.version ? h("span.muted", {}, " (current)") : [" ", restoreButton(v)]);
    // The rest folded: 500 versions put the compare form 14,000 px down.
    fill(versionsSection, h("h2", { id: "versions-h" }, "Versions"),
      restored,
      folded("ol.plain.versions", list.map(item), VERSIONS_LISTED, "version"),
      list.length > 1
        ? h("form.inline-form", { on: { submit: compare } },
            h("label", { for: fromId }, "Compare"), from, h("label", { for: toId }, "with"), to,
            h("button.secondary", { type: "submit" }, "Show differences"))
        : h("p.muted", {}, "Only one version so far: every save that changes the definition adds one."),
      out);

    async function compare(event) {
      event.preventDefault();
      try {
        const [a, b] = await Promise.all([api(`${path}/versions/${from.value}`), api(`${path}/versions/${to.value}`)]);
        fill(out, renderDiff(comparable(a), comparable(b), { from: `v${a.version}`, to: `v${b.version}` }));
      } catch (err) {
        fill(out, notice("error", `Could not compare: ${err.message}`));
      }
    }

    /** Save version `v`'s definition as the current one (a new version), under the ETag of
     * the definition this page shows: a save made since is refused with the API's 412. */
    async function restore(v, button) {
      const ok = await confirmDialog({
        title: `Restore v${v.version}?`,
        body: `v${v.version}'s definition (name, description, nodes, canvas, concurrency) is saved as the workflow's current one, a new version after v${wf.version}. Runs already started keep their version.`,
        confirmLabel: `Restore v${v.version}`,
      });
      if (!ok) return;
      button.disabled = true;
      fill(restored);
      try {
        const old = await api(`${path}/versions/${v.version}`);
        const body = {
          name: old.name, description: old.description ?? null, canvas: old.canvas,
          nodes: old.nodes, maxConcurrency: old.maxConcurrency,
        };
        const saved = await apiTagged(path, { method: "PUT", body, extraHeaders: etag ? { "If-Match": etag } : {} });
        const before = wf.version;
        ({ data: wf, etag } = saved);
        [graph, versions] = await Promise.all([api(`${path}/graph`), api(`${path}/versions`)]);
        renderHead();
        renderFacts();
        renderDefinition();
        const text = wf.version === before
          ? `v${v.version}'s definition is the current one already: nothing was saved.`
          : `Restored v${v.version}: its definition is now v${wf.version}.`;
        await renderVersions(notice("success", text));
        const heading = versionsSection.querySelector("h2");
        heading.setAttribute("tabindex", "-1");
        heading.focus(); // the button pressed is gone with the list it was in
        announce(text);
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return; // the sign-in page took over
        const again = err instanceof ApiError && err.status === 412
          ? " Reload the page to see the definition as it is now, then restore again if you still want to."
          : "";
        fill(restored, notice("error", h("span", { dataset: { status: String(err.status) } },
          `Not restored: ${err.message.replace(/[^.!?]$/, "$&.")}${again}`)));
        button.disabled = !mayWrite;
        button.focus();
      }
    }
  }
}

function comparable(version) {
  const kept = Object.fromEntries(Object.entries(version).filter(([k]) => !NOT_COMPARED.has(k)));
  return JSON.stringify(kept, null, 2);
}
