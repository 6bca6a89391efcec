// A workflow's schedules: timing, state, next and recent firings (linked to their runs),
// controls, and a form to create one.

import { api, ApiError, requestKeys, mayUse, CONTROL_SCOPE, WRITE_SCOPE } from "./api.js";
import { h, fill, notice, when, newId, badge, facts, announce, duration, folded } from "./dom.js";
import { jsonEditor } from "./jsoneditor.js";
import { confirmDialog } from "./dialog.js";
import { draftOf, signedInAgain } from "./drafts.js";

const OVERLAP_POLICIES = ["skip", "buffer_one", "buffer_all", "cancel_other", "terminate_other", "allow_all"];
// After "Trigger now": how often, and how many times, the schedule is read again until
// the firing's run shows.
const FOLLOW_EVERY_MS = 1000;
const FOLLOW_TRIES = 15;
// Schedules listed in full (the newest); earlier ones are behind a disclosure, as versions are.
const SCHEDULES_LISTED = 5;

/** Draw `wf`'s schedules into `section`; `onRunStarted` once a triggered firing's run shows. */
export async function renderSchedules(section, { wf, path, consolePath, onRunStarted }) {
  const base = `${path}/schedules`;
  const list = h("div");
  const out = h("div", { "aria-live": "polite" });
  const cards = new Map(); // schedule id → its <li>
  // Schedules made from this page: Temporal's list shows a new one a moment late.
  const madeHere = new Set();
  fill(section, h("h2", { id: "schedules-h" }, "Schedules"), out, list, createForm());
  await load();

  async function load() {
    let listed;
    try {
      listed = (await api(base)).schedules;
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) return;
      fill(list, notice("error", `Could not load the schedules: ${err.message}`));
      return;
    }
    const missing = [...madeHere].filter((id) => !listed.some((s) => s.id === id));
    const late = await Promise.all(missing.map((id) => api(`${base}/${encodeURIComponent(id)}`).catch(() => null)));
    const shown = [...listed, ...late.filter(Boolean)];
    cards.clear();
    const items = shown.map((s) => card(s));
    shown.forEach((s, i) => cards.set(s.id, items[i]));
    drawList(items);
  }

  function drawList(items, open) {
    if (!items.length) {
      fill(list, h("p", { dataset: { role: "no-schedules" } }, "No schedules."));
      return;
    }
    fill(list, folded("ul.plain.schedules", items, SCHEDULES_LISTED, "schedule", open));
  }

  /** Draw `schedule` in its card (a new card when it has none), with `message` above it. */
  function redraw(schedule, message = null) {
    const fresh = card(schedule, message);
    const old = cards.get(schedule.id);
    if (old && old.isConnected) old.replaceWith(fresh);
    else if (list.querySelector("ul.schedules")) list.lastElementChild.append(fresh); // the unfolded list
    else drawList([fresh]);
    cards.set(schedule.id, fresh);
  }

  function card(s, message = null) {
    const headingId = newId("schedule");
    const zone = localZone();
    const errors = h("div", { "aria-live": "assertive" });
    const mayWrite = mayUse(WRITE_SCOPE);
    const mayControl = mayUse(CONTROL_SCOPE);
    const described = { "aria-describedby": headingId };
    const pauseMay = s.paused ? mayWrite && mayControl : mayWrite;
    const pause = h("button.secondary", {
      type: "button", ...described, dataset: { control: "pause" }, disabled: !pauseMay, on: { click: () => setPaused(!s.paused) },
      title: pauseMay ? null : `${s.paused ? "Unpausing" : "Pausing"} needs ${s.paused ? "the workflows-write and workflows-control scopes" : "the workflows-write scope"}, which your sign-in lacks`,
    }, s.paused ? "Unpause" : "Pause");
    const fire = h("button.secondary", {
      type: "button", ...described, dataset: { control: "trigger" }, disabled: !mayControl, on: { click: trigger },
      title: mayControl ? null : "Triggering needs the workflows-control scope, which your sign-in lacks",
    }, "Trigger now");
    const remove = h("button.danger", {
      type: "button", ...described, dataset: { control: "delete" }, disabled: !mayWrite, on: { click: del },
      title: mayWrite ? null : "Deleting needs the workflows-write scope, which your sign-in lacks",
    }, "Delete");
    const buttons = [pause, fire, remove];
    const li = h("li.card.schedule", { dataset: { scheduleId: s.id } },
      h("div.gate-head", {}, h("h3", { id: headingId }, timing(s)), badge(s.paused ? "paused" : "active")),
      s.note ? h("p.muted", { dataset: { role: "note" } }, s.note) : null,
      facts([
        ["Id", h("code", {}, s.id)],
        ["Overlap policy", s.overlapPolicy.replace(/_/g, " ")],
        ["Input", h("code", {}, JSON.stringify(s.initialInput))],
        ["Created", h("span", {}, when(s.createdAt), ` (${zone} time)`, s.createdBy ? ` by ${s.createdBy}` : "")],
        ["Firings", firings(s)],
      ]),
      h("div.split", {},
        // In the reader's zone (as every time here, each saying so), which the heading's need not be.
        h("div", {}, h("h4", {}, `Next firings (${zone} time)`),
          s.nextActionTimes.length
            ? h("ol.plain.next", {}, s.nextActionTimes.map((t) => h("li", {}, when(t))))
            : h("p.muted", {}, s.paused ? "None while paused." : "None.")),
        h("div", {}, h("h4", {}, `Recent firings (${zone} time)`), recent(s))),
      message, errors,
      h("div.actions", {}, buttons));
    return li;

    async function act(button, work) {
      const allowed = buttons.map((b) => !b.disabled); // what the token's scopes allow
      for (const b of buttons) b.disabled = true;
      fill(errors);
      try {
        await work();
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return; // the sign-in page took over
        fill(errors, problem(`${button.textContent}: not done`, err));
        buttons.forEach((b, i) => { b.disabled = !allowed[i]; });
        button.focus();
      }
    }

    function setPaused(paused) {
      return act(pause, async () => {
        const action = paused ? "pause" : "unpause";
        const changed = await api(`${base}/${encodeURIComponent(s.id)}/${action}`, { method: "POST" });
        redraw(changed, notice("success", paused ? "Paused." : "Unpaused."));
        focusIn(s.id, "button[data-control=pause]");
        announce(paused ? "Schedule paused" : "Schedule unpaused");
      });
    }

    function trigger() {
      return act(fire, async () => {
        const fired = await api(`${base}/${encodeURIComponent(s.id)}/trigger`, { method: "POST" });
        redraw(s, notice("success", fired.message));
        focusIn(s.id, "button[data-control=trigger]");
        announce("Schedule fired");
        await follow(s.numActions);
      });
    }

    async function del() {
      const ok = await confirmDialog({
        title: "Delete this schedule?",
        body: `${timing(s)} stops firing for good. Runs it started carry on.`,
        confirmLabel: "Delete schedule",
        danger: true,
      });
      if (!ok) return;
      await act(remove, async () => {
        await api(`${base}/${encodeURIComponent(s.id)}`, { method: "DELETE" });
        madeHere.delete(s.id);
        cards.delete(s.id);
        // Drawn again from the cards left, so the fold counts right (and stays open if it was).
        drawList([...list.querySelectorAll("li.schedule")].filter((li) => li.dataset.scheduleId !== s.id),
          list.querySelector("details")?.open);
        fill(out, notice("success", `Deleted the schedule ${timing(s)}.`));
        section.querySelector("h2").setAttribute("tabindex", "-1");
        section.querySelector("h2").focus();
      });
    }

    /** Read the schedule again until the firing after `before` has its run (or give up). */
    async function follow(before) {
      for (let i = 0; i < FOLLOW_TRIES; i += 1) {
        await new Promise((resolve) => setTimeout(resolve, FOLLOW_EVERY_MS));
        if (!section.isConnected) return;
        let now;
        try {
          now = await api(`${base}/${encodeURIComponent(s.id)}`);
        } catch {
          return; // deleted meanwhile, or the API is away: the page says what it last knew
        }
        if (now.numActions <= before) continue;
        const latest = newestFirst(now.recentActions)[0];
        if (!latest?.runId) continue;
        redraw(now, notice("success", "Fired: its run started. ",
          h("a", { href: runHref(latest.runId) }, "Open the run")));
        onRunStarted();
        return;
      }
    }
  }

  function focusIn(id, selector) {
    const el = cards.get(id)?.querySelector(selector);
    if (el && !el.disabled) el.focus();
  }

  function recent(s) {
    if (!s.recentActions.length) return h("p.muted", {}, "None yet.");
    // No run: the workflow was disabled, the run deleted, or fired before runs were named.
    return h("ol.plain.recent", {}, newestFirst(s.recentActions).map((a) =>
      h("li", {}, when(a.startedAt), " · ",
        a.runId
          ? h("a", { href: runHref(a.runId) }, h("code", {}, a.runId))
          : h("span.muted", {}, "no run"))));
  }

  function runHref(runId) {
    return `${consolePath}/runs/${encodeURIComponent(runId)}`;
  }

  function createForm() {
    const may = mayUse(WRITE_SCOPE) && mayUse(CONTROL_SCOPE);
    const errors = h("div", { "aria-live": "assertive" });
    const kindName = newId("timing");
    const radio = (value, label, checked) => {
      const id = newId("timing");
      return h("span.choice", {},
        h("input", { type: "radio", id, name: kindName, value, checked, on: { change: shownTiming } }),
        h("label", { for: id }, label));
    };
    const cronId = newId("cron");
    const cronHint = `${cronId}-hint`;
    const cron = h("input", { type: "text", id: cronId, name: "cron", spellcheck: "false", autocomplete: "off", "aria-describedby": `${cronHint} ${cronId}-error` });
    const everyId = newId("every");
    const every = h("input", { type: "text", id: everyId, name: "intervalSeconds", inputmode: "numeric", autocomplete: "off", "aria-describedby": `${everyId}-error` });
    const zoneId = newId("zone");
    const zoneHint = `${zoneId}-hint`;
    const zone = h("input", { type: "text", id: zoneId, name: "timeZone", value: "UTC", spellcheck: "false", autocomplete: "off", "aria-describedby": `${zoneHint} ${zoneId}-error` });
    // Why a field was refused, under it and read with it (as a gate's fields have theirs).
    const why = (field) => h("p.field-error", { id: `${field.id}-error`, hidden: true });
    const cronField = h("div.field", {},
      h("label", { for: cronId }, "Cron expression"),
      h("p.hint", { id: cronHint }, "Five fields (minute hour day-of-month month day-of-week), e.g. 0 9 * * MON-FRI, or @daily, @hourly…"),
      cron, why(cron));
    const zoneField = h("div.field", {},
      h("label", { for: zoneId }, "Time zone"),
      h("p.hint", { id: zoneHint }, `An IANA name the cron's times are in (yours: ${localZone()}).`),
      zone, why(zone));
    const everyField = h("div.field", { hidden: true }, h("label", { for: everyId }, "Every (seconds)"), every, why(every));
    const policyId = newId("overlap");
    const policy = h("select", { id: policyId, name: "overlapPolicy", "aria-describedby": `${policyId}-hint` },
      OVERLAP_POLICIES.map((p) => h("option", { value: p }, p.replace(/_/g, " "))));
    const pausedId = newId("paused");
    const paused = h("input", { type: "checkbox", id: pausedId, name: "paused" });
    const editor = jsonEditor({
      label: "Input of its runs (JSON object)", name: "scheduleInput", value: {}, rows: 4, expect: "object",
    });
    const send = h("button.primary", { type: "submit", disabled: !may }, "Create schedule");
    const form = h("form", { novalidate: true, "aria-label": "New schedule", on: { submit } },
      may ? null : notice("info", "Creating a schedule needs the workflows-write and workflows-control scopes, which your sign-in lacks."),
      h("fieldset.field", {}, h("legend", {}, "Fires"),
        h("div.choices", {}, radio("cron", "On a cron", true), radio("interval", "Every N seconds", false))),
      cronField, zoneField, everyField,
      h("div.field", {}, h("label", { for: policyId }, "Overlap policy"),
        h("p.hint", { id: `${policyId}-hint` }, "What a firing does while the previous firing's run is still starting."), policy),
      h("div.field", {}, h("span.choice", {}, paused, h("label", { for: pausedId }, "Create it paused"))),
      editor.element, errors, h("div.actions", {}, send));
    const draft = draftOf(`schedule:${wf.id}`, form, () => ({ sent: keyFor.sent() }));
    // A double click, or the same schedule sent again after a lost answer, makes one.
    let keyFor = requestKeys(draft && draft.sent);
    if (draft) fill(errors, signedInAgain());
    shownTiming();
    // Folded until wanted (the list is what an operator reads); open when it gives back a draft.
    return h("details.card.new-schedule", { open: !!draft }, h("summary", {}, "New schedule"), form);

    function byCron() {
      return form.querySelector(`input[name="${kindName}"]:checked`).value === "cron";
    }

    function shownTiming() {
      // A refusal was of the timing given: another choice starts without its marks.
      for (const field of [cron, every, zone]) mark(field);
      cronField.hidden = !byCron();
      zoneField.hidden = !byCron();
      everyField.hidden = byCron();
    }

    /** Mark `field` refused (or, with no text, no longer) and say why under it. */
    function mark(field, text) {
      if (text) field.setAttribute("aria-invalid", "true");
      else field.removeAttribute("aria-invalid");
      const el = form.querySelector(`#${field.id}-error`);
      el.textContent = text || "";
      el.hidden = !text;
    }

    function refuse(field, text) {
      mark(field, text[0].toUpperCase() + text.slice(1));
      fill(errors, notice("error", `Not created: ${text}`));
      field.focus();
    }

    async function submit(event) {
      event.preventDefault();
      for (const field of [cron, every, zone]) mark(field);
      fill(errors);
      const body = {};
      if (byCron()) {
        if (!cron.value.trim()) return refuse(cron, "give a cron expression.");
        body.cron = cron.value.trim();
        body.timeZone = zone.value.trim() || "UTC";
      } else {
        if (!/^\s*[0-9]+\s*$/.test(every.value) || Number(every.value) < 1) {
          return refuse(every, "the interval is a whole number of seconds, 1 or more.");
        }
        body.intervalSeconds = Number(every.value);
      }
      const { value: initialInput, error } = editor.read();
      if (error) return fill(errors, notice("error", `Not created: the input ${error}`));
      Object.assign(body, { initialInput, overlapPolicy: policy.value, paused: paused.checked });
      send.disabled = true; // which takes the focus away: it goes back below
      let focus = send;
      try {
        const made = await api(base, { method: "POST", body, extraHeaders: { "Idempotency-Key": keyFor(body) } });
        keyFor = requestKeys(); // the same form sent again makes another schedule
        madeHere.add(made.id);
        redraw(made, [], null);
        fill(errors, notice("success", `Created: ${timing(made)}.`));
        announce("Schedule created");
      } catch (err) {
        if (err instanceof ApiError && err.status === 401) return; // the sign-in page took over
        fill(errors, problem("Not created", err));
        // The first field the API named (`cron`, `timeZone`, `intervalSeconds`).
        const fields = { cron, timeZone: zone, intervalSeconds: every };
        const detail = err.details.find((d) => fields[d.path]);
        const named = detail && fields[detail.path];
        if (named) mark(named, detail.message);
        focus = named || send;
      } finally {
        send.disabled = !may;
        if (form.isConnected) focus.focus();
      }
    }
  }
}

/** "Cron 0 9 * * MON-FRI (Europe/Berlin)" or "Every 3600 s (1 h 0 m)". */
function timing(s) {
  if (s.cron !== null && s.cron !== undefined) return `Cron ${s.cron} (${s.timeZone})`;
  const n = s.intervalSeconds;
  return n >= 60 ? `Every ${n} s (${duration(n)})` : `Every ${n} s`;
}

function firings(s) {
  const skipped = s.numActionsSkippedOverlap + s.numActionsMissedCatchupWindow;
  return `${s.numActions} so far${skipped ? `, ${skipped} skipped` : ""}`;
}

function newestFirst(actions) {
  return [...actions].sort((a, b) => Date.parse(b.startedAt) - Date.parse(a.startedAt));
}

/** An API error as the console shows others: its message, with the details it names that
 * it does not already say (a 400's message often is its one detail). */
function problem(what, err) {
  const more = (err.details || []).map((d) => (d.path ? `${d.path}: ${d.message}` : d.message))
    .filter((text) => !err.message.includes(text));
  return notice("error", h("span", { dataset: { status: String(err.status) } }, `${what}: ${err.message}`),
    more.length ? h("ul", {}, more.map((text) => h("li", {}, text))) : null);
}

function localZone() {
  try {
    return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
  } catch {
    return "UTC";
  }
}
