// A JSON editor: a labelled textarea that says, as you type, whether its text is valid JSON,
// and can format it. read() gives {value} or {error} (and marks the field invalid).

import { h, newId, json } from "./dom.js";
import { parseJson } from "./api.js";

export function jsonEditor({ label, hint, value, name, rows, expect }) {
  const id = newId(name || "json");
  const statusId = `${id}-status`;
  const hintId = `${id}-hint`;
  const text = value === undefined ? "" : json(value);
  const area = h("textarea.code", {
    id, name, spellcheck: "false", "aria-describedby": [hint ? hintId : null, statusId].filter(Boolean).join(" "),
    rows: String(rows || Math.min(16, Math.max(4, text.split("\n").length + 1))), value: text,
  });
  const status = h("p.json-status", { id: statusId, "aria-live": "polite" });
  const format = h("button.secondary.small", { type: "button", on: { click: tidy } }, "Format");

  function parse() {
    try {
      const parsed = parseJson(area.value);
      if (expect === "object" && (typeof parsed !== "object" || !parsed || Array.isArray(parsed) || JSON.isRawJSON?.(parsed))) {
        return { error: "must be a JSON object, e.g. {\"name\": \"Ada\"}" };
      }
      return { value: parsed };
    } catch (err) {
      return { error: `is not valid JSON: ${err.message}` };
    }
  }

  function show(result) {
    if (result.error) {
      area.setAttribute("aria-invalid", "true");
      status.textContent = `${label} ${result.error}`;
      status.className = "json-status invalid";
    } else {
      area.removeAttribute("aria-invalid");
      status.textContent = "Valid JSON";
      status.className = "json-status valid";
    }
  }

  function tidy() {
    const result = parse();
    if (!result.error) area.value = json(result.value);
    show(result);
  }

  area.addEventListener("input", () => show(parse()));

  return {
    element: h("div.field", {},
      h("label", { for: id }, label),
      hint ? h("p.hint", { id: hintId }, hint) : null,
      area,
      h("div.json-tools", {}, status, format)),
    read() {
      const result = parse();
      show(result);
      if (result.error) area.focus();
      return result;
    },
  };
}
