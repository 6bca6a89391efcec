// One open gate as a card with its decision form, generated from the requirement.

import { api, ApiError, requestKeys, mayUse, CONTROL_SCOPE } from "./api.js";
import { h, newId, notice, jsonBlock, duration, announce, add } from "./dom.js";
import { jsonEditor } from "./jsoneditor.js";
import { inputFields } from "./inputform.js";
import { draftOf, edited, signedInAgain } from "./drafts.js";

const RESOLUTION_WORDS = {
  confirm: "Approved",
  reject: "Rejected",
  edit: "Approved with edits",
  user_input: "Submitted",
  route_select: "Route chosen",
};

/** What the gate asks for, in words. */
export function gateKind(req) {
  if (req.requiresRouteSelection) return "Route selection";
  if (req.requiresUserInput) return "Input needed";
  if (req.kind === "iteration_review") return "Iteration review";
  if (req.requiresOutputReview && req.isPostExecution) return "Output review";
  return "Confirmation";
}

/** A card for one gate (an approvals item: `requirement` is the StepRequirementSummary). */
export function gateCard(item, { onDecided, onDismissed, headingLevel = "h2", showRunLink = true } = {}) {
  const req = item.requirement;
  const headingId = newId("gate");
  const card = h("article.card.gate", {
    "aria-labelledby": headingId,
    dataset: { runId: item.runId, stepId: item.stepId, gateKey: gateKey(item), createdAt: item.createdAt || "" },
  });
  const title = item.stepName || item.stepId;
  const runPath = `/console/workflows/${encodeURIComponent(item.workflowId)}/runs/${encodeURIComponent(item.runId)}`;
  const meta = h("dl.facts.gate-meta", {},
    h("div", {}, h("dt", {}, "Workflow"), h("dd", {},
      h("a", { href: `/console/workflows/${encodeURIComponent(item.workflowId)}` }, item.workflowName || item.workflowId))),
    showRunLink ? h("div", {}, h("dt", {}, "Run"), h("dd", {}, h("a", { href: runPath }, item.runId))) : null,
    // Which loop iteration and map item it waits in (0-based, as on node runs).
    req.iteration == null ? null : h("div", {}, h("dt", {}, "Iteration"), h("dd", { dataset: { role: "iteration" } }, String(req.iteration))),
    req.itemIndex == null ? null : h("div", {}, h("dt", {}, "Map item"), h("dd", { dataset: { role: "item-index" } }, String(req.itemIndex))),
    h("div", {}, h("dt", {}, "Waiting"), h("dd", {}, ageOf(item.createdAt, item.timeoutAt))),
    h("div", {}, h("dt", {}, "Timeout"), h("dd", {}, countdown(item.timeoutAt, req.onTimeout))),
    item.approvers && item.approvers.length
      ? h("div", {}, h("dt", {}, "Approvers"), h("dd", { dataset: { role: "approvers" } }, item.approvers.join(", ")))
      : null);

  add(card, 
    h("header.gate-head", {},
      h(headingLevel, { id: headingId }, title),
      h("span.kind", {}, gateKind(req)),
      pausedBadge(item.runStatus)),
    item.message ? h("p.message", {}, item.message) : null,
    meta,
    mayUse(CONTROL_SCOPE)
      ? decisionForm(item, card, { onDecided, onDismissed, runPath, showRunLink })
      : notice("info", "You may see this gate but not decide it: deciding needs the "
        + "workflows-control scope, which your sign-in lacks."));
  return card;
}

/** "run paused" on a gate whose run is paused: it is decided now, applied once resumed. */
function pausedBadge(runStatus) {
  return runStatus === "paused" ? h("span.badge.status-paused", { dataset: { role: "run-paused" } }, "run paused") : null;
}

// A gate waits no longer than its timeout (which decides it): its age stops there.
function ageOf(createdAt, timeoutAt) {
  if (!createdAt) return h("span.muted", {}, "—");
  return h("span", { dataset: { since: createdAt, until: timeoutAt || "" }, title: createdAt }, ageText(createdAt, timeoutAt));
}

const ageText = (since, until) => duration((Math.min(Date.now(), Date.parse(until) || Infinity) - Date.parse(since)) / 1000);

function countdown(timeoutAt, onTimeout) {
  if (!timeoutAt) return h("span", {}, "none (waits until decided)");
  return h("span", { dataset: { deadline: timeoutAt, onTimeout: onTimeout || "cancel" }, title: timeoutAt },
    countdownText(timeoutAt, onTimeout));
}

export function countdownText(timeoutAt, onTimeout) {
  const left = (Date.parse(timeoutAt) - Date.now()) / 1000;
  const then = `then ${onTimeout === "approve" ? "approved" : onTimeout === "skip" ? "skipped" : "run cancelled"}`;
  return left > 0 ? `in ${duration(left)} (${then})` : `expired (${then})`;
}

/**
 * One key per opening of a gate: a step gated again (a loop's next iteration, a review
 * re-opened after a rejection with onReject=retry) is a new gate with a new card.
 */
function gateKey(item) {
  return `${item.runId}/${item.stepId}/${item.createdAt || ""}`;
}

/** Make `list` show one card per item (in order), never replacing a card that stays. A
 * closed gate's card leaves unless decided, deciding, or held open (then it says so). */
export function syncGates(list, items, options = {}) {
  const wanted = new Set(items.map(gateKey));
  for (const card of [...list.children]) {
    if (wanted.has(card.dataset.gateKey) || card.classList.contains("decided")) continue;
    if (card.classList.contains("deciding")) continue;
    if (!heldOpen(card)) card.remove();
    else if (!card.classList.contains("closed")) markClosed(card, options.onDismissed);
  }
  let previous = null;
  for (const item of items) {
    const key = gateKey(item);
    let card = [...list.children].find((c) => c.dataset.gateKey === key);
    if (!card) {
      card = gateCard(item, options);
      // Oldest first: past the cards kept from before (decided, closed) that are no younger
      // (a loop's next iteration goes below the outcome of the one before, not above it).
      let next = previous ? previous.nextElementSibling : list.firstElementChild;
      while (next && !wanted.has(next.dataset.gateKey) && !(opened(next) > opened(card))) next = next.nextElementSibling;
      list.insertBefore(card, next);
    } else {
      // A card that stays follows its run being paused or resumed since it was drawn.
      const shown = card.querySelector("[data-role=run-paused]");
      const wanted = pausedBadge(item.runStatus);
      if (shown && !wanted) shown.remove();
      else if (!shown && wanted) card.querySelector(".gate-head").append(wanted);
    }
    previous = card;
  }
}

const opened = (card) => Date.parse(card.dataset.createdAt);

/** A card the approver is at: the focus is in it, or its form holds what they typed or
 * chose (the focus may have gone on to the next card, or to the tree). */
export function heldOpen(card) {
  const form = card.querySelector("form.decision");
  return card.contains(document.activeElement) || Boolean(form && edited(form));
}

// What a closed card says of what was sent from it (a refusal is no "nothing was sent").
const SENT = {
  refused: "Your decision was sent and refused (the answer is below)",
  lost: "Your decision was sent but its answer was lost: it may have been applied",
};

/** A held card whose gate closed says so and stops acting live; what was typed stays. */
function markClosed(card, onDismissed) {
  card.classList.add("closed");
  const note = notice("info",
    h("p.result-title", {}, "This gate has closed"),
    h("p", {}, "While this card was open it was decided elsewhere, timed out, or its run "
      + `ended (cancelled or failed). ${SENT[card.dataset.sent] || "Nothing you entered here was sent"}; `
      + "the run's page shows what happened."),
    h("button.secondary.small", { type: "button", on: { click: dismiss } }, "Dismiss"));
  note.dataset.role = "gate-closed";
  card.querySelector(".gate-head").after(note);
  for (const button of card.querySelectorAll("form button")) button.disabled = true;
  stopClocks(card);

  // As an outcome's Dismiss: the focus to the page heading, not <body>; on a run page the
  // section goes with its last card.
  function dismiss() {
    card.remove();
    const heading = document.querySelector("main h1");
    if (heading) heading.focus();
    if (onDismissed) onDismissed();
  }
}

/** A card's age and its deadline's countdown stop where they are (tickClocks skips them). */
function stopClocks(card) {
  for (const el of card.querySelectorAll("[data-since], [data-deadline]")) {
    delete el.dataset.since;
    delete el.dataset.deadline;
  }
}

/** Refresh every age and countdown on the page (called once a second). */
export function tickClocks(root = document) {
  for (const el of root.querySelectorAll("[data-since]")) {
    el.textContent = ageText(el.dataset.since, el.dataset.until);
  }
  for (const el of root.querySelectorAll("[data-deadline]")) {
    el.textContent = countdownText(el.dataset.deadline, el.dataset.onTimeout);
  }
}

function decisionForm(item, card, { onDecided, onDismissed, runPath, showRunLink }) {
  const req = item.requirement;
  const errors = h("div.form-errors", { "aria-live": "assertive" });
  const parts = [];
  let primary; // [resolution, label, build body]
  let fields = null;
  let editBody = null;

  if (req.stepOutput !== undefined && req.stepOutput !== null && !(req.requiresOutputReview && req.isPostExecution)) {
    parts.push(h("div.field", {}, h("p.label", {}, "Output so far"), jsonBlock(req.stepOutput, "Output so far")));
  }

  if (req.requiresRouteSelection) {
    const multiple = !!req.allowMultipleSelections;
    const suggested = new Set(req.suggestedChoices || []);
    // A tie (several suggested, one allowed) is the approver's to break: checking each
    // radio button would leave the last one chosen, silently.
    const tie = !multiple && suggested.size > 1;
    const group = newId("route");
    const legendId = newId("legend");
    const boxes = (req.availableChoices || []).map((choice, i) => {
      const id = `${group}-${i}`;
      const box = h("input", { type: multiple ? "checkbox" : "radio", name: group, id, value: choice, checked: !tie && suggested.has(choice) });
      return h("span.choice", {}, box,
        h("label", { for: id }, choice, suggested.has(choice) ? h("span.suggested", {}, " (suggested)") : null));
    });
    const tieId = newId("tie");
    // A refused choice is said under the routes, as a field's error is.
    const why = h("p.field-error", { id: `${group}-error`, hidden: true });
    const set = h("fieldset.field", { "aria-labelledby": legendId, "aria-describedby": tie ? `${tieId} ${why.id}` : why.id },
      h("legend", { id: legendId }, multiple ? "Routes to take (one or more)" : "Route to take"),
      tie ? h("p.hint", { id: tieId }, `The suggestion names ${suggested.size} routes; this gate takes one. Choose it.`) : null,
      h("div.choices", {}, boxes), why);
    parts.push(set);
    primary = ["route_select", multiple ? "Take selected routes" : "Take selected route", () => {
      const selected = [...card.querySelectorAll(`input[name="${group}"]:checked`)].map((b) => b.value);
      why.textContent = !selected.length ? "Choose a route first."
        : selected.length > 1 && !multiple ? "This router takes exactly one route." : "";
      why.hidden = !why.textContent;
      if (why.hidden) {
        set.removeAttribute("aria-invalid");
        return { body: { selectedChoices: selected } };
      }
      set.setAttribute("aria-invalid", "true");
      set.querySelector("input").focus();
      return { error: "Fix the field marked above." };
    }];
  } else if (req.requiresUserInput) {
    fields = inputFields(req.userInputSchema || []);
    parts.push(fields.element);
    primary = ["user_input", "Submit", () => {
      const { values, errors: found } = fields.read();
      if (found.length) {
        found[0].control.focus();
        return { error: found.length === 1 ? "Fix the field marked above." : `Fix the ${found.length} fields marked above.` };
      }
      return { body: { userInput: values } };
    }];
  } else if (req.requiresOutputReview && req.isPostExecution) {
    const editor = jsonEditor({
      label: "Step output (JSON)",
      name: "editedOutput",
      value: req.stepOutput,
      hint: "Approve it as it is, or edit it and approve the edited output: the edit replaces the output for every later step.",
    });
    parts.push(editor.element);
    parts.push(h("div.actions", {},
      button("confirm", "Approve as is"),
      button("edit", "Approve edited output")));
    primary = null;
    editBody = () => {
      const { value, error } = editor.read();
      return error ? { error: `The edited output ${error}` } : { body: { editedOutput: value } };
    };
  } else {
    primary = ["confirm", req.kind === "iteration_review" ? "Continue loop" : "Approve", () => ({ body: {} })];
  }

  if (primary) parts.push(h("div.actions", {}, button(primary[0], primary[1])));
  parts.push(errors);

  const feedbackId = newId("feedback");
  const feedback = h("textarea", { id: feedbackId, name: "feedback", rows: "2", maxlength: "10000" });
  const rejectWord = req.kind === "iteration_review" ? "End loop" : "Reject";
  parts.push(h("div.reject", {},
    h("div.field", {}, h("label", { for: feedbackId }, `Feedback (sent with “${rejectWord}”, optional)`), feedback),
    h("div.actions", {}, button("reject", rejectWord, "danger"))));

  const form = h("form.decision", { novalidate: true, on: { submit } }, parts);
  const draft = draftOf(`gate:${gateKey(item)}`, form, () => ({ sent: keyFor.sent() }));
  // The same decision sent again (a lost answer, an expired sign-in) goes under the same
  // Idempotency-Key: a keyless repeat would decide a loop's next review unseen.
  const keyFor = requestKeys(draft && draft.sent);
  if (draft) errors.replaceChildren(signedInAgain());
  return form;

  function button(resolution, label, style = "primary") {
    return h(`button.${style}`, { type: "submit", name: "resolution", value: resolution }, label);
  }

  async function submit(event) {
    event.preventDefault();
    const resolution = (event.submitter && event.submitter.value) || (primary && primary[0]) || "confirm";
    errors.replaceChildren();
    let built;
    if (resolution === "reject") built = { body: { feedback: feedback.value.trim() || null } };
    else if (resolution === "edit") built = editBody();
    else if (primary && resolution === primary[0]) built = primary[2]();
    else built = { body: {} };
    if (built.error) {
      errors.replaceChildren(notice("error", built.error));
      return;
    }
    const buttons = [...form.querySelectorAll("button")];
    buttons.forEach((b) => { b.disabled = true; });
    // Kept through a refresh that drops its gate until it says what happened.
    card.classList.add("deciding");
    try {
      // The opening of the gate this card shows: a loop's next iteration review (same
      // stepId) opened since is not decided by a card drawn for this one (409 instead).
      const gate = { nodeRunId: req.nodeRunId, iteration: req.iteration ?? null, itemIndex: req.itemIndex ?? null, kind: req.kind ?? null };
      const decision = { stepId: item.stepId, resolution, ...built.body, ...(req.nodeRunId ? { gate } : {}) };
      const result = await api(
        `/workflows/${encodeURIComponent(item.workflowId)}/runs/${encodeURIComponent(item.runId)}/approve`,
        { method: "POST", body: decision, extraHeaders: { "Idempotency-Key": keyFor(decision) } });
      decided(result, resolution);
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return; // the sign-in page took over
      if (err instanceof ApiError) card.dataset.sent = err.status ? "refused" : "lost";
      buttons.forEach((b) => { b.disabled = false; });
      const field = showFailure(err);
      // The focus, lost with the disabled buttons: the field named, or the button pressed.
      if (field) field.focus();
      else if (event.submitter && event.submitter.isConnected) event.submitter.focus();
    } finally {
      card.classList.remove("deciding");
    }
  }

  function decided(result, resolution) {
    const heading = h("p.result-title", { tabindex: "-1" }, `${RESOLUTION_WORDS[resolution] || "Decided"}: ${item.stepName || item.stepId}`);
    const panel = notice("success", heading,
      h("p", {}, result.message, ". The run is now ", h("strong", { dataset: { runStatus: result.status } }, result.status.replace(/_/g, " ")), "."),
      showRunLink ? h("p", {}, h("a", { href: runPath }, "Follow the run")) : null,
      h("button.secondary.small", { type: "button", on: { click: dismiss } }, "Dismiss"));
    form.replaceWith(panel);
    card.classList.add("decided");
    stopClocks(card);  // decided: its age and its deadline's countdown stop where they were
    heading.focus();
    announce(`${RESOLUTION_WORDS[resolution] || "Decided"}. ${result.message}`);
    if (onDecided) onDecided(item, result);
  }

  // The outcome stays through every refresh (the gate is no longer listed) until dismissed.
  function dismiss() {
    card.remove();
    const heading = document.querySelector("main h1");
    if (heading) heading.focus();
    if (onDismissed) onDismissed(item);
  }

  /** Show why the decision was not taken; returns the field the server named, if any. */
  function showFailure(err) {
    if (!(err instanceof ApiError)) {
      errors.replaceChildren(notice("error", String(err)));
      return null;
    }
    let text;
    let field = null;
    if (err.status === 400) {
      if (fields) field = fields.showServerError(err.message, err.details) || null;
      text = `The server refused this decision: ${err.message}`;
    } else if (err.status === 409) {
      text = `Already decided, or the run moved on: ${err.message}. Refresh to see the current state.`;
    } else if (err.status === 404) {
      text = `This gate is gone: ${err.message}`;
    } else if (err.status === 403) {
      text = `You may not decide this gate: ${err.message}`;
    } else if (err.status === 503) {
      text = `Not delivered: ${err.message} Try again shortly.`;
    } else {
      text = err.message;
    }
    errors.replaceChildren(notice("error", h("span", { dataset: { status: String(err.status) } }, text),
      err.details.length ? h("ul", {}, err.details.map((d) => h("li", {}, d.path ? `${d.path}: ${d.message}` : d.message))) : null));
    return field;
  }
}

