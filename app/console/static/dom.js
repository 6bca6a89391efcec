// Building DOM safely: every datum goes in as text or an attribute, never as HTML.

let uid = 0;

/** A fresh id for label/description wiring. */
export function newId(prefix = "id") {
  uid += 1;
  return `${prefix}-${uid}`;
}

/** h("tag.class", {attrs, on: {event: fn}}, ...children): an element. */
export function h(spec, attrs = {}, ...children) {
  if (attrs instanceof Node || Array.isArray(attrs) || typeof attrs !== "object" || attrs === null) {
    children.unshift(attrs);
    attrs = {};
  }
  const [tag, ...classes] = spec.split(".");
  const el = document.createElement(tag || "div");
  if (classes.length) el.className = classes.join(" ");
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "on") {
      for (const [event, fn] of Object.entries(value)) el.addEventListener(event, fn);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (key === "value" || key === "checked" || key === "selected") {
      el[key] = value;
    } else if (key === "class") {
      el.className += (el.className ? " " : "") + value;
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Append children to `el` (null, undefined and false are skipped; arrays flattened). */
export function add(el, ...children) {
  append(el, children);
  return el;
}

/** Replace the children of `el`. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** Tell screen readers something without moving focus. */
export function announce(text) {
  const region = document.getElementById("announcer");
  if (!region) return;
  region.textContent = "";
  // A new text node after a tick, so the same message twice is still read.
  setTimeout(() => { region.textContent = text; }, 50);
}

const STATUS_LABELS = { awaiting_approval: "awaiting approval" };

/** A status as a labelled badge (text, never colour alone). */
export function badge(status) {
  const value = status || "not run";
  return h(`span.badge.status-${String(value).replace(/[^a-z_]/g, "")}`,
    { dataset: { status: value } }, STATUS_LABELS[value] || value.replace(/_/g, " "));
}

/** "3 m 4 s", "2 h 5 m", "4 d 1 h". */
export function duration(seconds) {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m} m ${s % 60} s`;
  const hrs = Math.floor(m / 60);
  if (hrs < 48) return `${hrs} h ${m % 60} m`;
  return `${Math.floor(hrs / 24)} d ${hrs % 24} h`;
}

/** A timestamp as a <time> element in the reader's locale. */
export function when(iso) {
  if (!iso) return h("span.muted", {}, "—");
  const date = new Date(iso);
  return h("time", { datetime: iso, title: iso }, date.toLocaleString());
}

/** `items` in a `spec` list, all but the last `few` folded above them under "N earlier
 * <noun>s" (a disclosure: its summary keeps the focus, Tab goes on into what it shows). */
export function folded(spec, items, few, noun, open = false) {
  const earlier = items.slice(0, Math.max(0, items.length - few));
  return [
    earlier.length
      ? h("details", { open }, h("summary", {}, `${earlier.length} earlier ${noun}${earlier.length === 1 ? "" : "s"}`),
          h(spec, {}, earlier))
      : null,
    h(spec, {}, items.slice(earlier.length)),
  ];
}

/** Pretty JSON for display. */
export function json(value) {
  return JSON.stringify(value === undefined ? null : value, null, 2);
}

/** A <pre> of a JSON value, in a scrollable, focusable region with a label. */
export function jsonBlock(value, label) {
  return h("pre.json", { tabindex: "0", "aria-label": label }, json(value));
}

/** A definition list of [term, description] pairs (missing descriptions skipped). */
export function facts(pairs) {
  const dl = h("dl.facts");
  for (const [term, value] of pairs) {
    if (value === undefined || value === null || value === "") continue;
    dl.append(h("div", {}, h("dt", {}, term), h("dd", {}, value)));
  }
  return dl;
}

/** Query string of the non-empty entries. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

/** A message block (role=alert for errors, status otherwise). */
export function notice(kind, ...children) {
  return h(`div.notice.notice-${kind}`, { role: kind === "error" ? "alert" : "status" }, ...children);
}
