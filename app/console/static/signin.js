// Sign-in (jwt mode): paste a token; it is kept in this tab's sessionStorage only.

import { api, session, ApiError } from "./api.js";
import { h, newId, notice, add } from "./dom.js";

export async function renderSignIn(main, _params, { config, navigate, search }) {
  document.title = "Sign in · Trellis";
  if (config.authMode === "dev") {
    add(main, h("h1", { tabindex: "-1" }, "Sign in"),
      h("p", {}, "This platform runs in dev mode (TRELLIS_AUTH_MODE=dev): there is nothing to sign in to, every request acts as the local admin."),
      h("p", {}, h("a", { href: "/console/" }, "Go to the approvals inbox")));
    return;
  }
  const next = safeNext(search.get("next"));
  const fieldId = newId("token");
  const hintId = newId("hint");
  const status = h("div", { "aria-live": "polite" });
  const input = h("input", {
    id: fieldId, name: "token", type: "password", autocomplete: "off", spellcheck: "false",
    required: true, "aria-describedby": hintId,
  });
  const form = h("form.card.narrow", { on: { submit } },
    h("div.field",
      h("label", { for: fieldId }, "Access token"),
      h("p.hint", { id: hintId },
        "A bearer token (JWT) from your identity provider, or one minted with ",
        h("code", {}, "trellis token"), ". It stays in this browser tab only and is forgotten when the tab closes."),
      input),
    status,
    h("div.actions", {}, h("button.primary", { type: "submit" }, "Sign in")));

  const reason = session.token
    ? notice("error", "The API did not accept the current token (expired or not valid). Sign in again.")
    : h("p", {}, "This Trellis API needs a token for every request.");
  add(main, h("h1", { tabindex: "-1" }, "Sign in"), reason, form);

  async function submit(event) {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      status.replaceChildren(notice("error", "Paste a token first."));
      input.focus();
      return;
    }
    session.signIn(token);
    try {
      await api("/approvals?perPage=1");
      navigate(next, { replace: true });
    } catch (err) {
      session.signOut();
      const message = err instanceof ApiError ? err.message : String(err);
      status.replaceChildren(notice("error", `Not signed in: ${message}`));
      input.focus();
    }
  }
}

function safeNext(next) {
  // Console paths only, as the browser resolves them ("/console/../api" is not one).
  const url = new URL(next || "/", location.origin);
  const { pathname: path } = url;
  return url.origin === location.origin && path.startsWith("/console/") && !path.startsWith("/console/sign-in")
    ? path + url.search : "/console/";
}
