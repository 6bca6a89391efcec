// What was typed when the sign-in ran out (a 401), given back once signed in again. In
// memory only: what the user typed has no business in storage, and sign-in never reloads.

import { notice } from "./dom.js";

const open = new Map(); // key → { form, initial, extra }
const kept = new Map(); // key → { values, ...extra() }
const drawn = new WeakMap(); // form → its values as drawn (before any draft came back)

/** Watch a form under a key kept across redraws; `extra()` adds what else comes back (the
 * Idempotency-Key sent). Returns what was kept for it (or null), once. */
export function draftOf(key, form, extra = () => ({})) {
  const initial = JSON.stringify(valuesOf(form));
  drawn.set(form, initial);
  open.set(key, { form, initial, extra });
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

/** Whether the user typed or chose anything in a watched form (a draft given back counts). */
export function edited(form) {
  return drawn.has(form) && JSON.stringify(valuesOf(form)) !== drawn.get(form);
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
