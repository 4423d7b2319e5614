// llmfleet dashboard, spend limits panel: polls v1/stats for its
// "clients" (each client's spend today and this month, UTC, against its
// limits) and fills the panel; it stays hidden when no client has limits.
(function () {
  "use strict";

  function usd(v) {
    return "$" + (v || 0).toFixed(2);
  }

  function against(spent, limit) {
    return limit > 0 ? usd(spent) + " of " + usd(limit) : usd(spent) + " (no limit)";
  }

  function td(tr, text, cls) {
    const c = document.createElement("td");
    c.textContent = text;
    if (cls) c.className = cls;
    tr.appendChild(c);
  }

  function render(clients) {
    const card = document.getElementById("limits-card");
    const body = document.getElementById("spend-limits");
    if (!card || !body) return;
    card.hidden = !clients || clients.length === 0;
    body.textContent = "";
    for (const c of clients || []) {
      const tr = document.createElement("tr");
      td(tr, c.client);
      td(tr, against(c.today_usd, c.daily_usd), "num");
      td(tr, against(c.month_usd, c.monthly_usd), "num");
      td(tr, c.over_limit);
      td(tr, c.zdr ? "yes: never batched" : "no");
      const state = c.limit_reached
        ? c.limit_reached + " reached until " + new Date(c.resets_at).toISOString().replace(".000Z", "Z")
        : "within limits";
      td(tr, state, c.limit_reached ? "over" : "");
      body.appendChild(tr);
    }
  }

  async function poll() {
    try {
      const r = await fetch("v1/stats", { cache: "no-store" });
      if (r.ok) render((await r.json()).clients);
    } catch (e) {
      // the main poll reports the connection's state
    }
  }

  poll();
  setInterval(poll, 5000);
})();
