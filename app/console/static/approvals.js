// The approvals inbox: every gate the caller may decide, oldest first, each with its form.

import { api, ApiError, hidden } from "./api.js";
import { h, fill, notice, query, add } from "./dom.js";
import { syncGates, tickClocks } from "./gate.js";

const PER_PAGE = 50;
// New gates appear without a reload; cards being filled in are never replaced.
const REFRESH_SECONDS = 10;

export async function renderApprovals(main, _params, { search }) {
  document.title = "Approvals · Trellis";
  const page = Math.max(1, Number(search.get("page")) || 1);
  const summary = h("p.summary", { "aria-live": "polite" });
  const list = h("div.gates");
  const pager = h("nav.pager", { "aria-label": "Approval pages" });
  const refresh = h("button.secondary", { type: "button", on: { click: () => load(true) } }, "Refresh");
  add(main, 
    h("div.page-head", {}, h("h1", { tabindex: "-1" }, "Approvals"), refresh),
    h("p.muted", {}, "Gates waiting for a decision you may make, oldest first."),
    summary, list, pager);

  const clock = setInterval(() => tickClocks(list), 1000);
  // Not in a hidden tab (an inbox left open in one asked every 10 s all day); shown again,
  // it asks at once, so a returning approver sees what came meanwhile.
  const timer = setInterval(() => { if (!hidden()) load(false); }, REFRESH_SECONDS * 1000);
  const onShown = () => { if (!hidden()) load(false); };
  document.addEventListener("visibilitychange", onShown);
  let loading = false;
  let stopped = false;
  // Asked for while a load was in flight (true: by the Refresh button). That load's answer
  // may predate what the asker came for (a gate made a moment ago): one more load follows it.
  let askedAgain = null;

  async function load(byUser) {
    if (stopped) return;
    if (loading) {
      askedAgain = Boolean(askedAgain) || byUser;
      return;
    }
    loading = true;
    try {
      const data = await api(`/approvals${query({ page, perPage: PER_PAGE })}`);
      // A decision taken here asks again at once: the count said one more than waited until the
      // next refresh. The card showing its outcome stays (syncGates keeps it).
      syncGates(list, data.approvals, { onDecided: () => load(false) });
      const total = data.pagination.total;
      const past = total > 0 && page > data.pagination.totalPages;
      summary.textContent = total === 0
        ? "Nothing is waiting for you."
        : `${total} gate${total === 1 ? "" : "s"} waiting.` +
          (past ? ` Page ${page} is past the last (${data.pagination.totalPages}): decided gates left fewer pages.` : "");
      renderPager(data.pagination);
      if (byUser) summary.textContent += " (refreshed)";
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        askedAgain = null; // the sign-in page took over
        return;
      }
      fill(summary, notice("error", `Could not load the inbox: ${err.message}`));
    } finally {
      loading = false;
      if (askedAgain !== null) {
        const again = askedAgain;
        askedAgain = null;
        load(again);
      }
    }
  }

  function renderPager(p) {
    fill(pager);
    if (p.total > 0 && page > p.totalPages) {
      add(pager, h("a", { href: `/console/approvals${query({ page: p.totalPages })}` }, `Go to the last page (${p.totalPages})`));
      return;
    }
    if (p.totalPages <= 1) return;
    add(pager, 
      page > 1 ? h("a", { href: `/console/approvals${query({ page: page - 1 })}` }, "← Older") : null,
      h("span", {}, `Page ${page} of ${p.totalPages}`),
      page < p.totalPages ? h("a", { href: `/console/approvals${query({ page: page + 1 })}` }, "Newer →") : null);
  }

  await load(false);
  return () => {
    stopped = true;
    clearInterval(clock);
    clearInterval(timer);
    document.removeEventListener("visibilitychange", onShown);
  };
}
