// The REST API as the console calls it: JSON in and out, the session's token on every request.

const TOKEN_KEY = "trellis.console.token";
let apiBase = "/api/v1";

let scopesClaim = "scope";
// The scopes the console asks about (app/auth/caller.py): steering runs and deciding
// gates, and changing definitions.
export const CONTROL_SCOPE = "workflows-control";
export const WRITE_SCOPE = "workflows-write";

/** Where the platform's tokens keep their scopes (the console's config says). */
export function setScopesClaim(claim) {
  scopesClaim = claim || "scope";
}

/** Whether the signed-in token grants `scope` (what to offer only: the API checks every
 * request). Without a token (dev mode), yes. */
export function mayUse(scope) {
  if (!session.token) return true;
  return words(claimAt(session.claims() || {}, scopesClaim)).includes(scope);
}

/** A claim by name, or by a dotted path into nested objects, as the API reads it
 * (`claim` in app/auth/tokens.py: `realm_access.roles`). */
function claimAt(claims, path) {
  if (Object.prototype.hasOwnProperty.call(claims, path)) return claims[path];
  let value = claims;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object" || Array.isArray(value) || !(part in value)) return null;
    value = value[part];
  }
  return value;
}

/** Scopes from a claim, as the API's `words`: a space-separated string or a list of strings. */
function words(value) {
  if (typeof value === "string") return value.split(/\s+/).filter(Boolean);
  if (Array.isArray(value)) return value.filter((v) => typeof v === "string" && v);
  return [];
}

export function setApiBase(base) {
  apiBase = base;
}

/** The signed-in token: sessionStorage only (gone when the tab closes; never in a URL). */
export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY);
  },
  signIn(token) {
    sessionStorage.setItem(TOKEN_KEY, token.trim().replace(/^Bearer\s+/i, ""));
  },
  signOut() {
    sessionStorage.removeItem(TOKEN_KEY);
  },
  /** Who the token names (read from its payload for display only; the API verifies it). */
  claims() {
    const token = this.token;
    if (!token) return null;
    try {
      const part = token.split(".")[1].replace(/-/g, "+").replace(/_/g, "/");
      const text = decodeURIComponent(
        [...atob(part)].map((c) => "%" + c.charCodeAt(0).toString(16).padStart(2, "0")).join(""));
      return JSON.parse(text);
    } catch {
      return {};
    }
  },
};

/** An error answer of the API: status, its stable code, the message and details. */
export class ApiError extends Error {
  constructor(status, body) {
    const error = (body && body.error) || {};
    super(error.message || `The API answered ${status}`);
    this.status = status;
    this.code = error.code || "unknown";
    this.details = error.details || [];
  }
}

function headers(extra = {}) {
  const all = { Accept: "application/json", ...extra };
  const token = session.token;
  if (token) all.Authorization = `Bearer ${token}`;
  return all;
}

/**
 * Idempotency-Keys for one form: the same request sent again (its answer was lost, or a
 * second click) gets the same key, so the API applies it once; another request a new key.
 * `sent` (from `keyFor.sent()`) carries on a form redrawn after signing in again.
 */
export function requestKeys(sent = null) {
  let last = sent || { request: null, key: null };
  const keyFor = (request) => {
    const text = JSON.stringify(request);
    if (last.request !== text) last = { request: text, key: newKey() };
    return last.key;
  };
  /** The last request sent and its key, or null before the first. */
  keyFor.sent = () => (last.request === null ? null : { ...last });
  return keyFor;
}

/** A fresh Idempotency-Key (crypto.randomUUID needs a secure context; plain http has none). */
export function newKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return "console-" + [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** JSON text as values; a number a JS number would change (9007199254740993, 1.0) is
 * kept as JSON.rawJSON, which JSON.stringify writes back as it came. */
export const parseJson = (text) => JSON.parse(text, (_key, value, context) =>
  typeof value === "number" && JSON.rawJSON && context.source !== String(value) ? JSON.rawJSON(context.source) : value);

/** Call the API; resolves to the JSON body (null for 204), rejects with ApiError. */
export async function api(path, options = {}) {
  return (await call(path, options)).data;
}

/** Call the API; resolves to `{data, etag}`: the body and its `ETag` (for `If-Match`). */
export const apiTagged = (path, options = {}) => call(path, options);

async function call(path, { method = "GET", body, signal, extraHeaders = {} } = {}) {
  const own = body === undefined ? {} : { "Content-Type": "application/json" };
  const init = { method, signal, headers: headers({ ...own, ...extraHeaders }) };
  if (body !== undefined) init.body = JSON.stringify(body);
  let response;
  try {
    response = await fetch(apiBase + path, init);
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, { error: { code: "network", message: "The API could not be reached. Is Trellis running?" } });
  }
  if (response.status === 204) return { data: null, etag: null };
  let data = null;
  try {
    data = parseJson(await response.text());
  } catch {
    // not JSON (a proxy's error page): the status says enough
  }
  if (!response.ok) {
    const error = new ApiError(response.status, data);
    if (response.status === 401) window.dispatchEvent(new CustomEvent("trellis:unauthorized", { detail: error }));
    throw error;
  }
  return { data, etag: response.headers.get("ETag") };
}

/**
 * Follow a Server-Sent Events stream with fetch (EventSource cannot send a token): onEvent
 * per message after the event id `after` (null: all), resuming after the last id. Ends
 * when the stream does and `shouldStop()` says so, or on abort. onState("live" | "lost" |
 * "gone": 404, not retried). A hidden tab holds no stream (Chromium's 6 connections to a
 * host were all taken by background run pages): it resumes when shown.
 */
export async function follow(path, { onEvent, shouldStop, signal, onState = () => {}, after = null }) {
  let lastId = after;
  let delay = 500;
  while (!signal.aborted) {
    await shown(signal);
    const stream = new AbortController();
    const close = () => { if (signal.aborted || hidden()) stream.abort(); };
    signal.addEventListener("abort", close);
    document.addEventListener("visibilitychange", close);
    try {
      const extra = { Accept: "text/event-stream" };
      if (lastId) extra["Last-Event-ID"] = lastId;
      const response = await fetch(apiBase + path, { headers: headers(extra), signal: stream.signal });
      if (response.status === 401) {
        window.dispatchEvent(new CustomEvent("trellis:unauthorized"));
        return;
      }
      if (response.status === 404) {
        onState("gone"); // deleted, or no longer visible to this caller: nothing to retry
        return;
      }
      if (!response.ok) throw new Error(`stream answered ${response.status}`);
      delay = 500;
      onState("live");
      for await (const message of messages(response.body, stream.signal)) {
        if (message.id) lastId = message.id;
        if (message.data !== null) onEvent(message.event || "message", parseJson(message.data));
      }
      if (!stream.signal.aborted && await shouldStop()) return;
    } catch (err) {
      if (signal.aborted) return;
    } finally {
      signal.removeEventListener("abort", close);
      document.removeEventListener("visibilitychange", close);
    }
    if (stream.signal.aborted) continue; // hidden: open again once shown
    onState("lost");
    await new Promise((resolve) => setTimeout(resolve, delay));
    delay = Math.min(delay * 2, 10_000);
  }
}

/** Whether the tab is hidden: what is in it then asks the API nothing. */
export const hidden = () => document.visibilityState === "hidden";

/** Resolves once the tab is shown (at once if it is), or the page is left. */
function shown(signal) {
  return new Promise((resolve) => {
    const check = () => {
      if (hidden() && !signal.aborted) return;
      document.removeEventListener("visibilitychange", check);
      resolve();
    };
    document.addEventListener("visibilitychange", check);
    signal.addEventListener("abort", check, { once: true });
    check();
  });
}

async function* messages(body, signal) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const abort = () => reader.cancel().catch(() => {});
  signal.addEventListener("abort", abort);
  let buffer = "";
  let current = { id: null, event: null, data: null };
  try {
    while (true) {
      const { value, done } = await reader.read();
      if (done) return;
      buffer += value;
      let newline;
      while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
        const line = buffer.slice(0, newline);
        buffer = buffer.slice(newline + (buffer.startsWith("\r\n", newline) ? 2 : 1));
        if (line === "") {
          if (current.data !== null) yield current;
          current = { id: null, event: null, data: null };
          continue;
        }
        if (line.startsWith(":")) continue;
        const colon = line.indexOf(":");
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? "" : line.slice(colon + 1);
        if (value.startsWith(" ")) value = value.slice(1);
        if (field === "data") current.data = current.data === null ? value : `${current.data}\n${value}`;
        else if (field === "id") current.id = value;
        else if (field === "event") current.event = value;
      }
    }
  } finally {
    signal.removeEventListener("abort", abort);
  }
}
