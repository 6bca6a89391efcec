// A user-input form built from a requirement's userInputSchema, and the checks the server
// makes (temporal_workflows/gates.py collect_input), run before sending.

import { h, newId } from "./dom.js";
import { parseJson } from "./api.js";

const NUMBER_TYPES = new Set(["float", "int", "number"]);
const BOOLEAN_TYPES = new Set(["bool", "boolean"]);
const LIST_TYPES = new Set(["list", "array"]);
const OBJECT_TYPES = new Set(["dict", "object"]);

function typeOf(field) {
  const t = field.fieldType || "str";
  if (NUMBER_TYPES.has(t)) return "number";
  if (BOOLEAN_TYPES.has(t)) return "boolean";
  if (LIST_TYPES.has(t)) return "array";
  if (OBJECT_TYPES.has(t)) return "object";
  return "string";
}

const has = (value) => value !== undefined && value !== null;

// A number as JSON writes it (Number() also takes "0x10", "Infinity", "+5"), spaces
// around it ignored. An int field takes an integer only ("1e3" is a float in JSON); a
// float field any finite number, sent as typed (Number() made "12.0" the integer 12).
const JSON_NUMBER = /^-?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?$/;
const JSON_INTEGER = /^-?(0|[1-9]\d*)$/;

function parseNumber(raw, integer) {
  const text = raw.trim();
  const n = Number(text);
  if (integer) return JSON_INTEGER.test(text) && Number.isSafeInteger(n) ? n : { invalid: "must be an integer" };
  return JSON_NUMBER.test(text) && Number.isFinite(n) ? (JSON.rawJSON ? JSON.rawJSON(text) : n) : { invalid: "must be a number" };
}

/** One form control per field; returns {element, read()} where read() gives {values, errors}. */
export function inputFields(schema) {
  const controls = schema.map(fieldControl);
  return {
    element: h("div.fields", {}, controls.map((c) => c.element)),
    read() {
      const values = {};
      const errors = [];
      for (const control of controls) {
        const { value, error } = control.read();
        control.showError(error);
        if (error) errors.push({ control, error });
        else if (value !== undefined) values[control.name] = value;
      }
      return { values, errors };
    },
    /** Put the server's problems under the fields they name: each of its `details`
     * (`path` `userInput.<name>`) under its field, else the message under the field it
     * names first (a 400 naming two fields showed both under the first). Returns the
     * first field given a problem. */
    showServerError(message, details = []) {
      const named = (text) => {
        const match = /userInput\.([^\s]+)/.exec(text || "");
        return (match && controls.find((c) => c.name === match[1])) || null;
      };
      let first = null;
      for (const detail of details) {
        const control = named(detail.path);
        if (!control) continue;
        control.showError(`${control.name} ${detail.message}`);
        first = first || control;
      }
      if (first) return first;
      const control = named(message);
      if (control) control.showError(message);
      return control;
    },
    controls,
  };
}

function fieldControl(field) {
  const kind = typeOf(field);
  const id = newId("field");
  const errorId = `${id}-error`;
  const hintId = `${id}-hint`;
  const label = field.name + (field.required ? "" : " (optional)");
  const hint = [sentence(field.description), kindHint(kind, field)].filter(Boolean).join(" ");
  const errorEl = h("p.field-error", { id: errorId, hidden: true });
  const described = [hint ? hintId : null, errorId].filter(Boolean).join(" ");
  let input;
  let element;
  let read;

  if (Array.isArray(field.allowedValues) && field.allowedValues.length && kind !== "boolean") {
    input = h("select", { id, name: field.name, "aria-describedby": described },
      h("option", { value: "" }, field.required ? "Choose…" : "(none)"),
      field.allowedValues.map((v) =>
        h("option", { value: JSON.stringify(v), selected: has(field.value) && same(v, field.value) }, display(v))));
    read = () => (input.value === "" ? undefined : parseJson(input.value));
  } else if (kind === "boolean") {
    const group = newId("bool");
    // A radio cannot be unset: an optional field offers "No answer".
    const choices = [["true", "Yes"], ["false", "No"], ...(field.required ? [] : [["", "No answer"]])];
    const radios = choices.map(([value]) => h("input", {
      type: "radio", name: group, id: `${group}-${value || "none"}`, value,
      checked: value === (typeof field.value === "boolean" ? String(field.value) : ""),
    }));
    input = radios[0];
    element = h("fieldset.field", { "aria-describedby": described, dataset: { field: field.name } },
      h("legend", {}, label),
      hint ? h("p.hint", { id: hintId }, hint) : null,
      h("div.choices", radios.map((radio, i) => h("span.choice", {}, radio, h("label", { for: radio.id }, choices[i][1])))),
      errorEl);
    read = () => {
      const on = radios.find((radio) => radio.checked);
      return on && on.value ? on.value === "true" : undefined;
    };
  } else if (kind === "array" || kind === "object") {
    input = h("textarea.code", {
      id, name: field.name, rows: "3", spellcheck: "false", "aria-describedby": described,
      value: has(field.value) ? JSON.stringify(field.value) : "",
    });
    read = () => (input.value.trim() === "" ? undefined : parseList(input.value));
  } else {
    input = h("input", {
      // Numbers are typed as text and parsed here, as the server would read them.
      id, name: field.name, type: "text", inputmode: kind === "number" ? "decimal" : undefined,
      value: has(field.value) ? display(field.value) : "", "aria-describedby": described,
    });
    // Only an empty box is no answer: the server takes a string of spaces as one.
    read = () => {
      const text = input.value;
      if (kind !== "number") return text === "" ? undefined : text;
      return text.trim() === "" ? undefined : parseNumber(text, field.fieldType === "int");
    };
  }

  if (!element) {
    element = h("div.field", { dataset: { field: field.name } },
      h("label", { for: id }, label),
      hint ? h("p.hint", { id: hintId }, hint) : null,
      input,
      errorEl);
  }
  if (field.required) input.setAttribute("aria-required", "true");

  return {
    name: field.name,
    element,
    focus: () => input.focus(),
    showError(message) {
      errorEl.hidden = !message;
      errorEl.textContent = message || "";
      const target = kind === "boolean" ? element : input;
      if (message) target.setAttribute("aria-invalid", "true");
      else target.removeAttribute("aria-invalid");
    },
    read() {
      let value;
      try {
        value = read();
      } catch (err) {
        return { error: `${field.name}: ${err.message}` };
      }
      return check(field, kind, value);
    },
  };
}

// The server's rules, in its order and words: a value, a default or (if required) an
// error; the type; the allowed values.
function check(field, kind, value) {
  const name = field.name;
  if (value === undefined) {
    if (has(field.value) || !field.required) return { value: undefined };
    return { error: `${name} is required` };
  }
  if (value && value.invalid) return { error: `${name} ${value.invalid}` };
  const ok = {
    string: typeof value === "string",
    number: typeof value === "number" || JSON.isRawJSON?.(value),
    boolean: typeof value === "boolean",
    array: Array.isArray(value),
    object: typeof value === "object" && value !== null && !Array.isArray(value) && !JSON.isRawJSON?.(value),
  }[kind];
  if (!ok) return { error: `${name} must be ${kind === "array" ? "an array" : `a ${kind}`}` };
  if (Array.isArray(field.allowedValues) && !field.allowedValues.some((v) => same(v, value))) {
    return { error: `${name} must be one of ${field.allowedValues.map(display).join(", ")}` };
  }
  return { value };
}

// A description without a full stop ran into the kind's hint ("EUR A number.").
function sentence(text) {
  if (!text) return "";
  const trimmed = text.trim();
  return /[.!?:]$/.test(trimmed) ? trimmed : `${trimmed}.`;
}

function kindHint(kind, field) {
  if (kind === "number") return field.fieldType === "int" ? "A whole number." : "A number.";
  if (kind === "array") return 'A JSON list, e.g. ["a", "b"].';
  if (kind === "object") return 'A JSON object, e.g. {"key": "value"}.';
  return "";
}

function parseList(text) {
  try {
    return parseJson(text);
  } catch (err) {
    throw new Error(`not valid JSON (${err.message})`);
  }
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

function display(value) {
  return typeof value === "string" ? value : JSON.stringify(value);
}
