// The console's entry: load the platform's facts, route paths to pages, handle sign-in.

import { session, setApiBase, setScopesClaim } from "./api.js";
import { h, fill } from "./dom.js";
import { renderApprovals } from "./approvals.js";
import { renderRun } from "./run.js";
import { renderWorkflows } from "./workflows.js";
import { renderWorkflow } from "./workflow.js";
import { renderSignIn } from "./signin.js";
import { keepDrafts } from "./drafts.js";

const ROUTES = [
  [/^\/console\/?$/, "approvals", renderApprovals],
  [/^\/console\/approvals\/?$/, "approvals", renderApprovals],
  [/^\/console\/workflows\/?$/, "workflows", renderWorkflows],
  [/^\/console\/workflows\/([^/]+)\/?$/, "workflows", renderWorkflow],
  [/^\/console\/workflows\/([^/]+)\/runs\/([^/]+)\/?$/, "workflows", renderRun],
  [/^\/console\/sign-in\/?$/, null, renderSignIn],
];

let config = null;
let cleanup = null;
// Which show() is the latest: a page replaced while drawing (the user moved on, a 401)
// starts nothing after; it draws into its own box, out of #main, never seen.
let shown = 0;
let drawnAt = ""; // the path and query of the page shown

/** Go to a console path (history entry added unless `replace`). */
export function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  show(true);
}

async function show(moveFocus) {
  const current = ++shown;
  if (cleanup) {
    cleanup();
    cleanup = null;
  }
  const main = document.getElementById("main");
  const path = location.pathname;
  drawnAt = path + location.search;
  const route = ROUTES.find(([pattern]) => pattern.test(path));
  for (const link of document.querySelectorAll("[data-nav]")) {
    if (route && link.dataset.nav === route[1]) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  renderWho();
  main.setAttribute("aria-busy", "true");
  const page = h("div");
  fill(main, page);
  if (!route) {
    fill(page, h("h1", { tabindex: "-1" }, "Page not found"),
      h("p", {}, "Nothing lives at this address. ", h("a", { href: "/console/" }, "Go to the approvals inbox.")));
    document.title = "Not found · Trellis";
  } else {
    const params = route[0].exec(path).slice(1).map(decodeURIComponent);
    const ctx = { config, navigate, search: new URLSearchParams(location.search) };
    try {
      const stop = (await route[2](page, params, ctx)) || null;
      if (current !== shown) {
        if (stop) stop(); // replaced while it drew: what it started stops at once
        return;
      }
      cleanup = stop;
    } catch (err) {
      if (current !== shown) return;
      fill(page, h("h1", { tabindex: "-1" }, "Something went wrong"),
        h("p", { role: "alert" }, `This page could not be drawn: ${err.message}. Reload to try again.`));
      console.error(err);
    }
  }
  main.removeAttribute("aria-busy");
  if (moveFocus) {
    const heading = main.querySelector("h1");
    (heading || main).focus();
  }
}

function renderWho() {
  const who = document.getElementById("who");
  if (config.authMode === "dev") {
    fill(who, h("span", { title: "TRELLIS_AUTH_MODE=dev: every request acts as the local admin" }, "Dev mode (no sign-in)"));
    return;
  }
  if (!session.token) {
    fill(who, location.pathname.startsWith("/console/sign-in") ? null : h("a", { href: "/console/sign-in" }, "Sign in"));
    return;
  }
  const claims = session.claims() || {};
  const name = claims.name || claims.sub || "signed in";
  fill(who,
    h("span", {}, "Signed in as ", h("strong", {}, name)),
    h("button.link", { type: "button", on: { click: () => { session.signOut(); navigate("/console/sign-in"); } } }, "Sign out"));
}

document.addEventListener("click", (event) => {
  const link = event.target.closest("a[href]");
  if (!link || event.defaultPrevented || event.button !== 0) return;
  if (event.metaKey || event.ctrlKey || event.shiftKey || event.altKey || link.target) return;
  const url = new URL(link.href, location.href);
  if (url.origin !== location.origin || !url.pathname.startsWith("/console")) return;
  // A link within this page (the skip link's #main) is the browser's: it moves focus there.
  if (url.hash && url.pathname === location.pathname && url.search === location.search) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
});

// Not when only the fragment changed (the skip link, or Back from it): the page stays.
window.addEventListener("popstate", () => {
  if (location.pathname + location.search !== drawnAt) show(true);
});

window.addEventListener("trellis:unauthorized", () => {
  if (location.pathname.startsWith("/console/sign-in")) return;
  keepDrafts(); // what the user typed comes back once they have signed in again
  const next = location.pathname + location.search;
  navigate(`/console/sign-in?next=${encodeURIComponent(next)}`, { replace: true });
});

async function start() {
  try {
    const response = await fetch("/console/config.json", { headers: { Accept: "application/json" } });
    if (!response.ok) throw new Error(`it answered ${response.status}`);
    config = await response.json();
  } catch (err) {
    fill(document.getElementById("main"), h("h1", { tabindex: "-1" }, "The console could not start"),
      h("p", { role: "alert" }, `Its settings (/console/config.json) could not be read: ${err.message}. Is Trellis running? Reload the page to try again.`));
    return;
  }
  setApiBase(config.apiBase);
  setScopesClaim(config.scopesClaim);
  await show(false);
}

start();
