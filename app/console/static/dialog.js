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
      if (opener && opener.isConnected) opener.focus();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    back.focus();
  });
}
