// A confirmation dialog (<dialog> shown modally: focus stays inside, Escape cancels).

import { h } from "./dom.js";

/** Resolves true when the user confirms, false otherwise. Focus starts on the safe choice. */
export function confirmDialog({ title, body, confirmLabel, danger = false }) {
  return new Promise((resolve) => {
    const back = h("button.secondary", { type: "button", value: "back" }, "Go back");
    const ok = h(`button.${danger ? "danger" : "primary"}`, { type: "button", value: "ok" }, confirmLabel);
    const titleId = `dialog-title-${Date.now()}`;
    const dialog = h("dialog.confirm", { "aria-labelledby": titleId },
      h("h2", { id: titleId }, title),
      h("p", {}, body),
      h("div.actions", {}, back, ok));
    const opener = document.activeElement;
    let answer = false;
    ok.addEventListener("click", () => { answer = true; dialog.close(); });
    back.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      dialog.remove();
      const target = again(opener);
      if (target) target.focus();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    back.focus();
  });
}

/** The opener, or what replaced it meanwhile (a live redraw), by its id or action. */
function again(el) {
  if (!el || el.isConnected) return el;
  if (el.id) return document.getElementById(el.id);
  const action = el.dataset && el.dataset.action;
  return action ? document.querySelector(`[data-action="${CSS.escape(action)}"]`) : null;
}
