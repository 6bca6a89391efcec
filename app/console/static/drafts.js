// What was typed in a form when the sign-in ran out (the API answered 401), given back to the
// same form once the page is drawn again after signing in. Kept in memory only: it holds what
// the user typed, which has no business in storage, and signing in never reloads the page.

import { notice } from "./dom.js";

const open = new Map(); // key → { form, initial, extra }
const kept = new Map(); // key → { values, ...extra() }

/**
 * Watch a form under a key that names it across redraws (a gate's key, a workflow's trigger).
 * `extra()` adds what else must come back, such as the Idempotency-Key of what was sent.
 * Returns what was kept for it (null when nothing was), once.
 */
export function draftOf(key, form, extra = () => ({})) {
  open.set(key, { form, initial: JSON.stringify(valuesOf(form)), extra });
  const draft = kept.get(key) || null;
  kept.delete(key);
  if (draft) restore(form, draft.values);
  return draft;
}

/** Keep every form on screen whose fields were changed or that sent something (on a 401). */
export function keepDrafts() {
  for (const [key, { form, initial, extra }] of open) {
    if (!form.isConnected) continue;
    const values = valuesOf(form);
    const more = extra();
    if (JSON.stringify(values) !== initial || more.sent) kept.set(key, { values, ...more });
  }
  open.clear();
}

/** Said on a form given back after signing in again. */
export function signedInAgain() {
  return notice("info", "Your sign-in ran out before this was sent, so nothing was done. "
    + "What you typed is back; send it when ready.");
}

function controls(form) {
  return [...form.elements].filter((el) => ["INPUT", "SELECT", "TEXTAREA"].includes(el.tagName));
}

// By position: the form is rebuilt from the same data, so its controls come in the same order.
function valuesOf(form) {
  return controls(form).map((el) => (el.type === "radio" || el.type === "checkbox" ? el.checked : el.value));
}

function restore(form, values) {
  controls(form).forEach((el, i) => {
    if (i >= values.length) return;
    if (el.type === "radio" || el.type === "checkbox") el.checked = values[i];
    else el.value = values[i];
    // The JSON editor says whether its text is valid JSON on input.
    el.dispatchEvent(new Event("input", { bubbles: true }));
  });
}
