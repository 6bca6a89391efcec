// The run page: status, controls, open gates, the tree with live statuses, node runs,
// lineage, the Temporal Web UI link.

import { api, follow, hidden, ApiError, newKey, mayUse, CONTROL_SCOPE } from "./api.js";
import { h, fill, badge, facts, when, duration, jsonBlock, notice, announce, add } from "./dom.js";
import { renderTree } from "./tree.js";
import { heldOpen, syncGates, tickClocks } from "./gate.js";
import { confirmDialog } from "./dialog.js";

// How many of a node's runs (loop iterations, retries) its detail shows.
const NODE_RUNS_SHOWN = 20;
// Without CONTROL_SCOPE the controls are offered disabled, saying why.
const NO_CONTROL = "You may watch this run; steering it needs the workflows-control scope, which your sign-in lacks.";
const LIVE_TEXT = "Live: node statuses change as the run goes. Choose a node to see its runs.";
const GONE_TEXT = "Live updates stopped: this run is no longer available to you (deleted, or your access was withdrawn).";
const ENDED_TEXT = "The run has ended: nothing here changes any more. Choose a node to see its runs.";
const LOST_TEXT = "Live updates paused: the API cannot be reached. Trying again; what is shown may be out of date.";
const STALE_TEXT = "Live updates paused: the run could not be read. Trying again; what is shown may be out of date.";
const LIVE_STATES = {
  live: ["muted", LIVE_TEXT], lost: ["notice notice-info", LOST_TEXT], stale: ["notice notice-info", STALE_TEXT],
  gone: ["notice notice-info", GONE_TEXT], ended: ["muted", ENDED_TEXT],
};
const GONE_WHY = "This run is no longer available to you.";
// Reads that failed are asked again after 0.5 s, doubling to 10 s; a lineage with a child
// still going is read again after 1 s, doubling to 30 s.
const RETRY_FIRST = 500;
const RETRY_MOST = 10_000;
const LINEAGE_MOST = 30_000;

// What each control may act on (the API answers 409/400 otherwise; the buttons say so first).
const CONTROLS = [
  { action: "pause", label: "Pause", when: ["running", "awaiting_approval"], keyed: true,
    text: "No new node starts until the run is resumed; steps already running finish." },
  { action: "resume", label: "Resume", when: ["paused"], keyed: true, text: "The run continues where it stopped." },
  { action: "cancel", label: "Cancel run", when: ["pending", "running", "paused", "awaiting_approval"], danger: true,
    text: "Running steps are cancelled, open gates close, and the run ends cancelled. This cannot be undone." },
  { action: "retry", label: "Retry", when: ["failed", "cancelled"], child: true,
    text: "A new run starts from the same definition and input, reusing every step that completed." },
  { action: "replay", label: "Replay", when: null, child: true,
    text: "A new run starts from the workflow's current definition with the same input; nothing is reused." },
];

export async function renderRun(main, [workflowId, runId], { config }) {
  document.title = `Run ${runId} · Trellis`;
  const base = `/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(runId)}`;
  // Node runs counted, not listed (a run may have thousands): see loadNodeRuns.
  const detailPath = `${base}?nodeRuns=summary`;
  const abort = new AbortController();
  let run;
  let graph;
  try {
    [run, graph] = await Promise.all([api(detailPath), api(`${base}/graph`)]);
  } catch (err) {
    if (err instanceof ApiError && err.status === 401) return null;
    add(main, h("h1", { tabindex: "-1" }, "Run"), notice("error", `Could not load the run: ${err.message}`));
    return null;
  }
  if (!main.isConnected) return null; // the user moved on while it loaded: nothing starts
  const startKeys = new Map();
  let selected = null;
  let nodeRuns = []; // the chosen node's node runs shown, newest first
  let nodeRunsOf = null; // the node they are of
  let nodeRunsTotal = 0;
  let nodeRunsTop = null; // the newest node run's number asked for (null: the latest, as it grows)
  let nodeRunsShown = [0, 0]; // the numbers of the newest and oldest shown
  let nodeRunsError = null; // why they could not be read (null: they were)
  const touched = new Set(); // nodes with events since their node runs were read

  const statusSlot = h("span", { dataset: { role: "run-status" } }, badge(run.status));
  const summary = h("div");
  const controls = h("div.toolbar", { role: "group", "aria-label": "Run controls" });
  const controlResult = h("div", { "aria-live": "polite" });
  const gatesSection = h("section", { "aria-labelledby": "gates-h" });
  const gateList = h("div.gates");
  const detail = h("section.node-detail", { "aria-labelledby": "node-h", id: "node-detail" });
  const lineage = h("section", { "aria-labelledby": "lineage-h" });
  const decisions = h("section", { "aria-labelledby": "decisions-h" });
  let tree = renderTree(graph, { onSelect: selectNode });
  const treeSlot = h("div.tree-wrap", {}, tree.element);
  let gone = false; // the run answered 404: deleted, or no longer visible to this caller
  let readFailures = 0; // reads of the run that failed in a row (not a 404)
  let retryTimer = null;
  let lineageTimer = null;
  let lineageDelay = 0;
  let lineageReads = 0;
  let readWaiters = []; // resolved once a read of the run succeeds (or it is gone, or the page left)
  const terminal = new Set(config.terminalRunStatuses);
  // An ended run is not followed: its stream would send the whole log (a long loop's
  // 40,004 events, 14 MB) to say what its detail says.
  const following = !terminal.has(run.status);
  const first = following ? "live" : "ended";
  let streamState = first; // what the stream says: live, lost, or ended (once a read showed the end)
  const liveState = h("p", {
    class: LIVE_STATES[first][0], "aria-live": "polite", dataset: { role: "live-state", state: first },
  }, LIVE_STATES[first][1]);

  add(main, 
    h("nav.crumbs", { "aria-label": "Breadcrumb" },
      h("a", { href: "/console/workflows" }, "Workflows"), " › ",
      h("a", { href: `/console/workflows/${encodeURIComponent(workflowId)}` }, run.definitionSnapshot.name), " › ",
      h("span", { "aria-current": "page" }, "Run")),
    h("div.page-head", {}, h("h1", { tabindex: "-1" }, "Run ", h("code", {}, runId)), statusSlot),
    summary, controls, controlResult,
    gatesSection,
    h("div.split", {},
      h("section", { "aria-labelledby": "tree-h" },
        h("h2", { id: "tree-h" }, "Definition"),
        liveState,
        treeSlot),
      detail),
    decisions, lineage);

  renderSummary();
  renderControls();
  renderGates();
  renderDetail();
  renderDecisions();
  renderLineage();

  // Never read again unless now: it may have ended between its graph's read and its own.
  if (!following && !terminal.has(graph.status)) refresh();

  const clock = setInterval(() => tickClocks(gatesSection), 1000);
  let refreshTimer = null;
  let refreshDue = 0; // when a refresh put off by a stream of events happens all the same

  let opened = false; // the stream has been open once
  if (following) follow(`${base}/events`, {
    signal: abort.signal,
    // After what the graph shows (not the whole log); what changed meanwhile is read by
    // the refresh once the stream is open.
    after: graph.lastEventId ? String(graph.lastEventId) : null,
    onState(state) {
      if (state === "gone") return markGone();
      if (state === "live" && !opened) refresh();
      opened = opened || state === "live";
      streamState = state;
      showLiveState();
    },
    onEvent(type, event) {
      if (event.nodeId && event.status) tree.setStatus(event.nodeId, event.status);
      if (event.nodeId) touched.add(event.nodeId);
      if (type.startsWith("run_") && event.status) setStatus(event.status);
      scheduleRefresh();
    },
    async shouldStop() {
      // Only a read of the run says it ended: the `run_*` event's status alone left its
      // counts, output and gates as the last read (one that failed) had them, for good.
      if (!(await refresh()) && !gone) await nextRead();
      // A deleted workflow's run ends with `run_cancelled`, but is gone (the 404 says so).
      if (gone || abort.signal.aborted) return true;
      const ended = terminal.has(run.status);
      if (ended) streamState = "ended"; // it said "Live: node statuses change…"
      showLiveState();
      return ended;
    },
  });

  return () => {
    abort.abort();
    clearInterval(clock);
    clearTimeout(refreshTimer);
    clearTimeout(retryTimer);
    clearTimeout(lineageTimer);
    settleReads();
  };

  // After a 200 ms pause in the events, or a second at most (a busy run's never pause).
  function scheduleRefresh() {
    clearTimeout(refreshTimer);
    const now = Date.now();
    if (!refreshDue) refreshDue = now + 1000;
    refreshTimer = setTimeout(() => { refreshDue = 0; refresh(); }, Math.min(200, Math.max(0, refreshDue - now)));
  }

  /** The line under "Definition": gone, the stream lost, the run unread, else the stream's state. */
  function showLiveState() {
    if (gone) return setLiveState("gone");
    if (streamState === "lost") return setLiveState("lost");
    setLiveState(readFailures ? "stale" : streamState);
  }

  /** Resolves once a read of the run succeeds (the retries go on meanwhile). */
  function nextRead() {
    return new Promise((resolve) => readWaiters.push(resolve));
  }

  function settleReads() {
    const waiting = readWaiters;
    readWaiters = [];
    for (const resolve of waiting) resolve();
  }

  // Said once per change, so a screen reader hears a lost link and its return once.
  function setLiveState(state) {
    if (liveState.dataset.state === state) return;
    liveState.dataset.state = state;
    [liveState.className, liveState.textContent] = LIVE_STATES[state];
  }

  /** The run answered 404: say so, and offer nothing the API would refuse. */
  function markGone() {
    if (gone) return;
    gone = true;
    clearTimeout(retryTimer);
    settleReads();
    showLiveState();
    run.pendingRequirements = []; // its open gates' cards go, or say they closed
    renderControls();
    renderGates();
    renderDetail();
  }

  /** Read the run and its graph again and draw them; false when the read failed (a failed
   * read is asked again, backing off, until one succeeds: the page says it may be out of date). */
  async function refresh() {
    if (gone || abort.signal.aborted) return false;
    clearTimeout(retryTimer);
    try {
      const [fresh, freshGraph] = await Promise.all([api(detailPath), api(`${base}/graph`)]);
      if (abort.signal.aborted) return false;
      run = fresh;
      for (const node of freshGraph.nodes) tree.setStatus(node.id, node.status);
      graph = freshGraph;
      if (selected && touched.has(selected)) await loadNodeRuns();
      setStatus(run.status);
      renderSummary();
      renderGates();
      renderDetail();
      renderDecisions();
    } catch (err) {
      if (err instanceof ApiError && err.status === 404) markGone();
      if (gone || abort.signal.aborted || (err instanceof ApiError && err.status === 401)) return false;
      readFailures += 1;
      showLiveState();
      retryTimer = setTimeout(retryRead, Math.min(RETRY_FIRST * 2 ** (readFailures - 1), RETRY_MOST));
      return false;
    }
    readFailures = 0;
    showLiveState();
    settleReads();
    return true;
  }

  // A hidden tab asks nothing: it asks again once shown.
  function retryRead() {
    if (!hidden()) return refresh();
    retryTimer = setTimeout(retryRead, RETRY_MOST);
  }

  function setStatus(status) {
    const current = statusSlot.firstChild && statusSlot.firstChild.dataset.status;
    if (current === status) return;
    fill(statusSlot, badge(status));
    run.status = status;
    renderControls();
    announce(`Run is now ${status.replace(/_/g, " ")}`);
  }

  function renderSummary() {
    const shown = [run.status, run.finishedAt, run.errorSummary, run.finalOutput, run.nodeRunSummary];
    redraw(summary, shown, drawSummary);
  }

  // Who, when the API knows (the caller's name, else their id), and how (manual, schedule…);
  // a schedule's run says which, linked to its workflow's page, where its schedules are.
  function triggeredBy(r) {
    const who = r.triggeredBy ? (r.triggeredBy.username || r.triggeredBy.userId) : null;
    const how = who ? `${who} (${r.triggerSource})` : r.triggerSource;
    if (!r.scheduleId) return how;
    return h("span", {}, `${how} `, h("a", {
      href: `/console/workflows/${encodeURIComponent(workflowId)}`, dataset: { role: "schedule" },
      "aria-label": `schedule ${r.scheduleId}, on the workflow's page`,
    }, h("code", {}, r.scheduleId)));
  }

  function drawSummary() {
    const started = run.startedAt ? Date.parse(run.startedAt) : null;
    const finished = run.finishedAt ? Date.parse(run.finishedAt) : null;
    const ui = config.temporalUiUrl
      ? h("a", { href: `${config.temporalUiUrl}/namespaces/${encodeURIComponent(config.temporalNamespace)}/workflows/${encodeURIComponent(runId)}`, target: "_blank", rel: "noopener noreferrer" }, "Open in Temporal Web UI")
      : h("span.muted", {}, "not configured (TRELLIS_TEMPORAL_UI_URL)");
    fill(summary,
      facts([
        ["Workflow", h("a", { href: `/console/workflows/${encodeURIComponent(workflowId)}` }, run.definitionSnapshot.name)],
        ["Version", String(run.workflowVersion)],
        ["Triggered by", triggeredBy(run)],
        ["Started", when(run.startedAt)],
        ["Finished", run.finishedAt ? when(run.finishedAt) : null],
        ["Took", started && finished ? duration((finished - started) / 1000) : null],
        ["Parent run", run.parentRunId ? runLink(run.parentRunId) : null],
        ["Node runs", countsText(run.nodeRunSummary)],
        ["Temporal", ui],
      ]),
      run.errorSummary ? notice("error", h("strong", {}, "Error: "), run.errorSummary) : null,
      h("details", { dataset: { key: "io" } }, h("summary", {}, "Input and output"),
        h("h3", {}, "Initial input"), jsonBlock(run.initialInput, "Initial input"),
        h("h3", {}, "Final output"), jsonBlock(run.finalOutput, "Final output")));
  }

  function renderControls() {
    // The focus stays on the same control, or the first enabled (Pause once paused).
    const focused = controls.contains(document.activeElement) ? document.activeElement.dataset.action : null;
    const steering = mayUse(CONTROL_SCOPE);
    fill(controls, CONTROLS.map((c) => {
      const allowed = !gone && steering && (!c.when || c.when.includes(run.status));
      const why = gone ? GONE_WHY : steering ? `Not while the run is ${run.status.replace(/_/g, " ")}` : NO_CONTROL;
      return h(`button.${c.danger ? "danger" : "secondary"}`, {
        type: "button", disabled: !allowed, dataset: { action: c.action },
        title: allowed ? c.text : why,
        on: { click: () => control(c) },
      }, c.label);
    }), steering ? null : h("p.muted", { dataset: { role: "no-control" } }, NO_CONTROL));
    if (focused) {
      const same = controls.querySelector(`[data-action="${focused}"]`);
      const target = same && !same.disabled ? same : controls.querySelector("button:not(:disabled)");
      if (target) target.focus();
    }
  }

  async function control(c) {
    const ok = await confirmDialog({
      title: `${c.label}?`, body: c.text, confirmLabel: c.label, danger: !!c.danger,
    });
    if (!ok) return;
    try {
      const result = await startRun(`${base}/${c.action}`, c.child || c.keyed);
      if (c.child) {
        const childId = result.runId;
        fill(controlResult, notice("success", `${c.label}: started run `, runLink(childId), "."));
      } else {
        fill(controlResult, notice("success", `${c.label}: ${result.message}`));
        if (result.status) setStatus(result.status);
      }
      announce(`${c.label} done`);
      scheduleRefresh();
      renderLineage();
    } catch (err) {
      fill(controlResult, notice("error", `${c.label} refused: ${err.message}`));
    }
  }

  /** POST a control; a keyed one carries an Idempotency-Key kept while its answer is
   * lost, so pressing again applies it once (after an answer, a new key). */
  async function startRun(path, keyed) {
    if (!keyed) return api(path, { method: "POST" });
    if (!startKeys.has(path)) startKeys.set(path, newKey());
    try {
      const result = await api(path, { method: "POST", extraHeaders: { "Idempotency-Key": startKeys.get(path) } });
      startKeys.delete(path);
      return result;
    } catch (err) {
      // Unanswered (no connection, 5xx): it may have started; the same key asks again.
      if (err instanceof ApiError && err.status > 0 && err.status < 500) startKeys.delete(path);
      throw err;
    }
  }

  function renderGates() {
    const items = (run.pendingRequirements || []).map((req) => ({
      workflowId, workflowName: run.definitionSnapshot.name, runId, runStatus: run.status,
      stepId: req.stepId, stepName: req.stepName, createdAt: req.createdAt, timeoutAt: req.timeoutAt,
      message: req.confirmationMessage || req.userInputMessage || req.outputReviewMessage || req.iterationReviewMessage,
      approvers: approversOf(run.definitionSnapshot.nodes, req.stepId),
      requirement: req,
    }));
    // A card being typed in stays (saying its gate closed), as in the inbox.
    const typing = [...gateList.children].some(heldOpen);
    if (!items.length && !typing && !gateList.querySelector(".decided, .deciding")) {
      fill(gatesSection);
      fill(gateList);
      return;
    }
    if (!gatesSection.firstChild) {
      add(gatesSection, h("h2", { id: "gates-h" }, "Waiting for a decision"), gateList);
    }
    // The last outcome dismissed on a run that waits no more takes the section's heading with it.
    syncGates(gateList, items, {
      headingLevel: "h3", showRunLink: false, onDecided: scheduleRefresh, onDismissed: renderGates,
    });
  }

  async function selectNode(nodeId) {
    if (selected !== nodeId) nodeRunsTop = null;
    selected = nodeId;
    tree.select(nodeId);
    await loadNodeRuns();
    renderDetail();
    const heading = detail.querySelector("h2");
    if (heading) heading.focus();
  }

  /** The chosen node's node runs, by id: `{runId}.{nodeId}.{n}` for n = the newest asked
   * for (the latest unless paged to older ones) down, NODE_RUNS_SHOWN of them. */
  async function loadNodeRuns() {
    const nodeId = selected;
    touched.delete(nodeId);
    const node = graph.nodes.find((n) => n.id === nodeId);
    const latest = node && node.nodeRunId ? Number(node.nodeRunId.split(".").pop()) || 0 : 0;
    const top = nodeRunsTop == null ? latest : Math.min(nodeRunsTop, latest);
    const counts = [];
    for (let n = top; n >= 1 && counts.length < NODE_RUNS_SHOWN; n--) counts.push(n);
    const answers = await Promise.allSettled(counts.map((n) =>
      api(`${base}/nodes/${encodeURIComponent(`${runId}.${nodeId}.${n}`)}`)));
    if (selected !== nodeId) return; // another node was chosen meanwhile
    if (nodeRunsOf !== nodeId) nodeRuns = []; // another node's are not this one's
    nodeRunsOf = nodeId;
    // One absent (404) is left out; any other failure is said, never "has not run".
    const failed = answers.find((a) => a.status === "rejected" && !(a.reason instanceof ApiError && a.reason.status === 404));
    if (failed) {
      nodeRunsError = failed.reason.message;
      touched.add(nodeId); // the next refresh asks again
      return;
    }
    nodeRunsError = null;
    nodeRuns = answers.filter((a) => a.status === "fulfilled").map((a) => a.value);
    nodeRunsTotal = latest;
    nodeRunsShown = counts.length ? [counts[0], counts[counts.length - 1]] : [0, 0];
  }

  /** Page the chosen node's runs: `top` the newest number to show (null: the latest). */
  async function pageNodeRuns(top) {
    nodeRunsTop = top != null && top >= nodeRunsTotal ? null : top;
    await loadNodeRuns();
    renderDetail();
  }

  function renderDetail() {
    redraw(detail, [selected, run.status, gone, nodeRuns, nodeRunsTotal, nodeRunsShown, nodeRunsError], drawDetail);
  }

  function drawDetail() {
    if (!selected) {
      fill(detail, h("h2", { id: "node-h", tabindex: "-1" }, "Node runs"),
        h("p.muted", {}, "Choose a node in the definition to see its runs: input, output, attempts, errors and executor."));
      return;
    }
    const node = graph.nodes.find((n) => n.id === selected);
    const rerunnable = node && !node.parentId && node.nodeType === "step";
    fill(detail,
      h("h2", { id: "node-h", tabindex: "-1" }, node ? node.name : selected),
      facts([["Type", node && node.nodeType], ["Executor", node && node.executorKey ? h("code", {}, node.executorKey) : null]]),
      rerunnable ? h("div.toolbar", {}, h("button.secondary", {
        type: "button", disabled: gone || !mayUse(CONTROL_SCOPE) || !["completed", "failed"].includes(run.status),
        dataset: { action: "rerun" },
        title: gone ? GONE_WHY : mayUse(CONTROL_SCOPE) ? "Runs this step again in a new run, reusing the outputs of the steps before it" : NO_CONTROL,
        on: { click: () => rerun(node) },
      }, "Rerun from this node")) : null,
      nodeRunsError
        ? notice("error", `The node runs could not be read: ${nodeRunsError} `,
            h("button.secondary.small", { type: "button", dataset: { action: "reload-node-runs" }, on: { click: () => pageNodeRuns(nodeRunsTop) } }, "Try again"))
        : null,
      nodeRunsError ? null : pageText(),
      nodeRunsPager(),
      nodeRuns.length
        ? h("ol.node-runs", {}, nodeRuns.map(nodeRunItem))
        : nodeRunsError ? null : h("p.muted", {}, "This node has not run (yet) in this run."));
  }

  function pageText() {
    const [top, bottom] = nodeRunsShown;
    if (nodeRunsTotal <= nodeRuns.length) return null;
    if (top === nodeRunsTotal) return h("p.muted", {}, `The latest ${nodeRuns.length} of ${nodeRunsTotal} node runs, newest first.`);
    return h("p.muted", {}, `Node runs ${top} to ${bottom} of ${nodeRunsTotal}, newest first.`);
  }

  // A map's failed item may be any of thousands: older pages reach every node run.
  function nodeRunsPager() {
    if (nodeRunsTotal <= NODE_RUNS_SHOWN || nodeRunsOf !== selected) return null;
    const [top, bottom] = nodeRunsShown;
    const button = (action, label, disabled, to) => h("button.secondary.small", {
      type: "button", disabled, dataset: { action }, on: { click: () => pageNodeRuns(to) },
    }, label);
    return h("nav.toolbar", { "aria-label": "Pages of this node's runs" },
      button("newest-node-runs", "Latest", top >= nodeRunsTotal, null),
      button("newer-node-runs", "Newer", top >= nodeRunsTotal, top + NODE_RUNS_SHOWN),
      button("older-node-runs", "Older", bottom <= 1, bottom - 1));
  }

  async function rerun(node) {
    const ok = await confirmDialog({
      title: `Rerun “${node.name}”?`,
      body: "A new run starts that reuses the outputs of the steps before this one and runs this step again.",
      confirmLabel: "Rerun",
    });
    if (!ok) return;
    try {
      const result = await startRun(`${base}/nodes/${encodeURIComponent(node.id)}/rerun`, true);
      fill(controlResult, notice("success", "Rerun: started run ", runLink(result.run_id), "."));
      announce("Rerun done"); // as every other control says
      renderLineage();
    } catch (err) {
      fill(controlResult, notice("error", `Rerun refused: ${err.message}`));
    }
  }

  function nodeRunItem(nr) {
    const started = nr.startedAt ? Date.parse(nr.startedAt) : null;
    const finished = nr.finishedAt ? Date.parse(nr.finishedAt) : null;
    const snapshot = (key, label, value) => h("details", { dataset: { key: `${nr.id}:${key}` } },
      h("summary", {}, label), jsonBlock(value, `${label} of ${nr.id}`));
    return h("li.card.node-run", { dataset: { nodeRunId: nr.id } },
      h("h3", {}, h("code", {}, nr.id), " ", badge(nr.status)),
      facts([
        ["Attempts", String(nr.attempt)],
        ["Started", when(nr.startedAt)],
        ["Finished", nr.finishedAt ? when(nr.finishedAt) : null],
        ["Took", started && finished ? duration((finished - started) / 1000) : null],
        ["Executor", nr.resolvedExecutor ? executorText(nr.resolvedExecutor) : null],
        ["Reused from", nr.reusedFromNodeRunId ? h("code", {}, nr.reusedFromNodeRunId) : null],
        // Where it sits: a map's item or a loop's iteration (0-based), inside which node run.
        ["Item", nr.itemIndex == null ? null : String(nr.itemIndex)],
        ["Iteration", nr.iteration == null ? null : String(nr.iteration)],
        ["Inside", nr.parentNodeRunId ? h("code", {}, nr.parentNodeRunId) : null],
      ]),
      nr.error ? notice("error", h("strong", {}, "Error: "), nr.error) : null,
      snapshot("in", "Input snapshot", nr.inputSnapshot),
      snapshot("out", "Output snapshot", nr.outputSnapshot));
  }

  function renderDecisions() {
    const resolved = run.resolvedRequirements || [];
    if (!resolved.length) {
      fill(decisions);
      return;
    }
    fill(decisions, h("h2", { id: "decisions-h" }, "Decisions"),
      h("div.table-wrap", {}, h("table.cards", {},
        h("thead", {}, h("tr", {}, ["Step", "Item or iteration", "Decision", "By", "When", "Feedback"].map((t) => h("th", { scope: "col" }, t)))),
        h("tbody", {}, resolved.map((r) => h("tr", {},
          h("td.text", { "data-label": "Step" }, r.stepName || r.stepId),
          h("td", { "data-label": "Item or iteration" }, whereDecided(r)),
          h("td", { "data-label": "Decision" }, (r.resolution || "").replace(/_/g, " ")),
          h("td.text", { "data-label": "By" }, r.decidedBy || (r.source ? `(${r.source})` : "—")),
          h("td", { "data-label": "When" }, when(r.decidedAt)),
          h("td.text", { "data-label": "Feedback" }, r.rejectionFeedback || "—")))))));
  }

  /** Draw the lineage; read again, backing off, while a child shown has not ended (a child
   * kept its first status, "pending", on a finished run's page) or the read failed. */
  async function renderLineage({ again = false } = {}) {
    clearTimeout(lineageTimer);
    if (!again) lineageDelay = 0;
    const mine = ++lineageReads; // an older read answering later draws nothing
    let children = null;
    try {
      children = (await api(`${base}/children?perPage=50&nodeRuns=summary`)).runs;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      // Lineage is secondary: the page stays useful without it.
    }
    if (abort.signal.aborted || mine !== lineageReads) return;
    if (!children || children.some((c) => !terminal.has(c.status))) {
      lineageDelay = Math.min(lineageDelay ? lineageDelay * 2 : 1000, LINEAGE_MOST);
      lineageTimer = setTimeout(function readLineage() {
        if (hidden()) lineageTimer = setTimeout(readLineage, lineageDelay); // asks nothing while hidden
        else renderLineage({ again: true });
      }, lineageDelay);
    }
    // Unread, it keeps what it showed (it said no run was started from this run).
    if (!children && lineage.firstChild) return;
    const shown = children && children.map((c) => [c.id, c.status, c.triggerSource, c.startedAt]);
    redraw(lineage, [run.parentRunId, shown], () => fill(lineage, h("h2", { id: "lineage-h" }, "Lineage"),
      facts([["Parent", run.parentRunId ? runLink(run.parentRunId) : "none (an original run)"]]),
      !children
        ? notice("error", "The runs started from this run could not be read. Trying again.")
        : children.length
        ? h("div", {}, h("h3", {}, "Runs started from this run"),
            h("ul.plain", {}, children.map((c) => h("li", {}, runLink(c.id), " ", badge(c.status), " ", c.triggerSource, " · ", when(c.startedAt)))))
        : h("p.muted", {}, "No run was started from this run.")));
  }

  function runLink(id) {
    return h("a", { href: `/console/workflows/${encodeURIComponent(workflowId)}/runs/${encodeURIComponent(id)}` }, h("code", {}, id));
  }
}

/** Re-draw `section` with `draw` unless `shown` is unchanged, keeping the focus and the
 * open <details> (by data-key). */
function redraw(section, shown, draw) {
  const key = JSON.stringify(shown);
  if (section.dataset.shown === key) return;
  section.dataset.shown = key;
  const focused = section.contains(document.activeElement) ? focusKey(document.activeElement) : null;
  const open = new Set([...section.querySelectorAll("details[open]")].map((d) => d.dataset.key));
  draw();
  for (const details of section.querySelectorAll("details[data-key]")) {
    if (open.has(details.dataset.key)) details.open = true;
  }
  const again = focused && section.querySelector(focused);
  if (again) again.focus();
}

/** A selector that finds the same control after a re-draw. */
function focusKey(el) {
  if (el.id) return `#${CSS.escape(el.id)}`;
  if (el.dataset.action) return `[data-action="${el.dataset.action}"]`;
  if (el.tagName === "A" && el.getAttribute("href")) return `a[href="${CSS.escape(el.getAttribute("href"))}"]`;
  if (el.tagName === "SUMMARY" && el.parentElement.dataset.key) return `[data-key="${el.parentElement.dataset.key}"] > summary`;
  return null;
}

/** The `humanReview.approvers` of the node `id` in a definition tree (empty: any controller). */
function approversOf(nodes, id) {
  for (const node of nodes || []) {
    if (node.id === id) return (node.humanReview && node.humanReview.approvers) || [];
    const inner = [
      ...(node.children || []), ...(node.trueSteps || []), ...(node.falseSteps || []),
      ...(node.choices || []).flatMap((c) => c.steps || []),
    ];
    const found = inner.length ? approversOf(inner, id) : null;
    if (found) return found;
  }
  return null;
}

/** Which map item or loop iteration (0-based, as on the node runs) a decision was for. */
function whereDecided(r) {
  const parts = [];
  if (r.iteration != null) parts.push(`iteration ${r.iteration}`);
  if (r.itemIndex != null) parts.push(`item ${r.itemIndex}`);
  return parts.length ? parts.join(", ") : "—";
}

/** "12 (10 completed, 2 failed)" from a node-run summary. */
function countsText(summary) {
  if (!summary) return null;
  const parts = Object.entries(summary.byStatus || {})
    .filter(([, n]) => n > 0)
    .map(([status, n]) => `${n} ${status.replace(/_/g, " ")}`);
  return parts.length ? `${summary.total} (${parts.join(", ")})` : String(summary.total);
}

function executorText(executor) {
  const parts = Object.entries(executor)
    .filter(([, v]) => v != null && (typeof v !== "object" || JSON.isRawJSON?.(v)))
    .map(([k, v]) => `${k}: ${v.rawJSON || v}`);
  return h("code", {}, parts.join(", ") || JSON.stringify(executor));
}
