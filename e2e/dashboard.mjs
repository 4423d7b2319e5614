// Clicks through the llmfleet dashboard in headless Chromium (playwright-
// core, Debian's chromium) and checks what it shows against
// /llmfleet/v1/stats: the totals (net saving and routing misses among
// them), the by-client table, the prompt cache by route and model, the
// budget-miss labels, the charts (uPlot canvases), one colour per model,
// the route split (sync, flex, batch), value axes as wide as their labels,
// the period picker, "Connecting…" before the first figures, and that an
// admin key entered is sent as a bearer token (and forgotten on click).
// Prints PASS/FAIL lines; exits 1 if any check failed.
//
//	node e2e/dashboard.mjs BASE_URL OUT.png
import { createRequire } from "node:module";

const require = createRequire(process.env.PLAYWRIGHT_CORE_DIR ? process.env.PLAYWRIGHT_CORE_DIR + "/" : import.meta.url);
const { chromium } = require("playwright-core");

const [base, out] = process.argv.slice(2);
let failed = 0;
const pass = (m) => console.log("PASS " + m);
const fail = (m) => {
  console.log("FAIL " + m);
  failed++;
};
const close = (a, b) => Math.abs(Number(a) - Number(b)) <= 1e-9 * Math.max(1, Math.abs(Number(b)));

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync"],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } });
  const origin = new URL(base).origin;
  const foreign = [], auth = [];
  page.on("request", (r) => {
    if (!r.url().startsWith(origin) && !r.url().startsWith("data:")) foreign.push(r.url());
    if (r.url().includes("/llmfleet/v1/")) auth.push(r.headers()["authorization"] || "");
  });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));

  // Without the admin key the page shows aggregates only: no budget
  // misses (they carry request ids).
  await page.goto(base + "/llmfleet/?refresh=1");
  await page.waitForFunction(() => Number(document.body.dataset.polled) >= 1, null, { timeout: 15000 });
  const public_ = await (await page.request.get(base + "/llmfleet/v1/stats")).json();
  const publicMisses = await page.$$eval("#misses tr[data-outcome]", (trs) => trs.length);
  if (public_.recent_budget_misses.length === 0 && publicMisses === 0) pass("without the admin key: no per-request rows");
  else fail(`without the admin key: ${publicMisses} miss rows, stats ${JSON.stringify(public_.recent_budget_misses)}`);

  // With it, everything; the checks below compare the page with the
  // stats as the admin reads them.
  await page.evaluate(() => sessionStorage.setItem("llmfleet-admin-key", "e2e-admin-key"));
  await page.reload();
  await page.waitForFunction(() => Number(document.body.dataset.polled) >= 1, null, { timeout: 15000 });
  const stats = await (await page.request.get(base + "/llmfleet/v1/stats", { headers: { authorization: "Bearer e2e-admin-key" } })).json();

  // Totals.
  const kpi = async (id) => page.getAttribute("#" + id, "data-value");
  const want = { "kpi-paid": stats.cost_usd, "kpi-would": stats.sync_equivalent_usd, "kpi-saved": stats.saved_usd,
    "kpi-net": stats.net_saved_usd, "kpi-routing": stats.routing_miss_usd,
    "kpi-calls": stats.sync_calls + (stats.flex_calls || 0) + stats.batched_calls };
  let ok = true;
  for (const [id, v] of Object.entries(want)) {
    const got = await kpi(id);
    if (!close(got, v)) {
      fail(`${id} shows ${got}, /llmfleet/v1/stats says ${v}`);
      ok = false;
    }
  }
  if (ok) pass(`totals as /llmfleet/v1/stats: paid ${stats.cost_usd.toFixed(6)}, would have paid ${stats.sync_equivalent_usd.toFixed(6)}, saved ${stats.saved_usd.toFixed(6)}, net ${stats.net_saved_usd.toFixed(6)}, routing misses ${stats.routing_miss_usd.toFixed(6)}`);

  // The prompt cache: the hit rate and routing misses of each route, and
  // each cached model's hit rate by route, as /llmfleet/v1/stats says.
  const cache = await page.evaluate(() => ({
    routes: [...document.querySelectorAll("#cache-routes tr[data-route]")].map((tr) => ({
      route: tr.dataset.route, values: [...tr.querySelectorAll("td[data-value]")].map((td) => td.dataset.value),
    })),
    models: [...document.querySelectorAll("#cache-models tr[data-model]")].map((tr) => ({
      model: tr.dataset.model, cells: Object.fromEntries([...tr.querySelectorAll("td[data-route]")].map((td) => [td.dataset.route, td.textContent])),
      values: [...tr.querySelectorAll("td[data-value]")].map((td) => td.dataset.value),
    })),
  }));
  ok = cache.routes.length === Object.keys(stats.by_route || {}).length && cache.routes.some((r) => Number(r.values[0]) > 0);
  for (const r of cache.routes) {
    const b = stats.by_route[r.route];
    if (!b || !close(r.values[0], b.cache_hit_rate) || !close(r.values[1], b.routing_miss_usd)) {
      fail(`cache route ${r.route}: shows ${r.values}, stats ${JSON.stringify(b)}`);
      ok = false;
    }
  }
  const fmtHit = (b) => page.evaluate((b) => window.llmfleetDashboard.fmtHit(b), b);
  for (const m of cache.models) {
    const b = stats.by_model[m.model];
    if (!b || !close(m.values[0], b.cache_hit_rate) || !close(m.values[1], b.routing_miss_usd)) {
      fail(`cache model ${m.model}: shows ${m.values}, stats ${JSON.stringify(b)}`);
      ok = false;
    }
    for (const route of ["sync", "flex", "batch"]) {
      const want = await fmtHit(((stats.by_route_model || {})[route] || {})[m.model] || null);
      if (m.cells[route] !== want) {
        fail(`cache model ${m.model} on ${route}: shows ${m.cells[route]}, want ${want}`);
        ok = false;
      }
    }
  }
  if (ok && cache.models.length >= 2) {
    pass(`cache hit rates as /llmfleet/v1/stats: ${cache.routes.map((r) => r.route + " " + (100 * r.values[0]).toFixed(1) + "%").join(", ")}; ` +
      cache.models.map((m) => m.model + " " + JSON.stringify(m.cells)).join(", "));
  } else if (ok) fail(`cache by model: ${JSON.stringify(cache.models)}`);

  // By client.
  const rows = await page.$$eval("#clients tr[data-client]", (trs) => trs.map((tr) => ({
    client: tr.dataset.client, values: [...tr.querySelectorAll("td[data-value]")].map((td) => td.dataset.value),
  })));
  const clients = Object.keys(stats.by_client || {});
  ok = clients.length >= 2 && rows.length === clients.length;
  for (const r of rows) {
    const b = stats.by_client[r.client];
    if (!b || !close(r.values[0], b.calls) || !close(r.values[1], b.cost_usd) || !close(r.values[2], b.sync_equivalent_usd) || !close(r.values[3], b.saved_usd)) {
      fail(`client ${r.client}: shows ${r.values}, stats ${JSON.stringify(b)}`);
      ok = false;
    }
  }
  if (ok) pass(`by client as /llmfleet/v1/stats: ${rows.map((r) => r.client + " " + r.values[0] + " requests").join(", ")}`);
  else fail(`by client: rows ${JSON.stringify(rows)}, stats ${JSON.stringify(stats.by_client)}`);

  // By provider.
  const prows = await page.$$eval("#providers tr[data-provider]", (trs) => trs.map((tr) => ({
    provider: tr.dataset.provider, values: [...tr.querySelectorAll("td[data-value]")].map((td) => td.dataset.value),
  })));
  const providers = Object.keys(stats.by_provider || {});
  ok = providers.length === 2 && prows.length === providers.length;
  for (const r of prows) {
    const b = stats.by_provider[r.provider];
    if (!b || !close(r.values[0], b.calls) || !close(r.values[1], b.flex_calls || 0) || !close(r.values[2], b.cost_usd) ||
      !close(r.values[3], b.sync_equivalent_usd) || !close(r.values[4], b.saved_usd)) {
      fail(`provider ${r.provider}: shows ${r.values}, stats ${JSON.stringify(b)}`);
      ok = false;
    }
  }
  if (ok) pass(`by provider as /llmfleet/v1/stats: ${prows.map((r) => r.provider + " " + r.values[0] + " requests, " + r.values[1] + " flex").join("; ")}`);
  else fail(`by provider: rows ${JSON.stringify(prows)}, stats ${JSON.stringify(stats.by_provider)}`);

  // Budget misses: the 504 at the budget is "timed out", no "took".
  const misses = await page.$$eval("#misses tr[data-outcome]", (trs) => trs.map((tr) => ({
    outcome: tr.dataset.outcome, took: tr.children[4].textContent, label: tr.children[5].textContent,
  })));
  const timeout = misses.find((m) => m.outcome === "timeout_error");
  if (misses.length === stats.recent_budget_misses.length && timeout && timeout.label === "timed out at the budget" && timeout.took === "–" &&
    misses.every((m) => m.outcome === "ok" || m.label.startsWith("timed out"))) {
    pass(`budget misses labelled by what happened: ${misses.map((m) => m.label).join("; ")}`);
  } else {
    fail(`budget misses ${JSON.stringify(misses)} vs ${JSON.stringify(stats.recent_budget_misses)}`);
  }

  // Charts are drawn by uPlot (a canvas each), none by hand-built SVG.
  const canvases = await page.$$eval(".chart", (els) => els.map((e) => e.id + ":" + (e.querySelector("canvas") ? "canvas" : e.textContent.trim())));
  const svgs = await page.$$eval("svg", (els) => els.length);
  if (canvases.filter((c) => c.endsWith(":canvas")).length === 4 && svgs === 0) pass(`charts drawn by uPlot: ${canvases.join(", ")}`);
  else fail(`charts: ${canvases.join(", ")}; ${svgs} svg`);

  // A period without queue samples is a gap (a null uPlot does not draw
  // across), not a line.
  const gapped = await page.evaluate(() => window.llmfleetDashboard.withGaps([0, 5, 10, 60, 65], [[1, 2, 3, 4, 5]]));
  if (JSON.stringify(gapped) === JSON.stringify([[0, 5, 10, 35, 60, 65], [1, 2, 3, null, 4, 5]])) pass("a period without samples is drawn as a gap");
  else fail(`gaps: ${JSON.stringify(gapped)}`);

  // One colour per model: the same in the turnaround legend and the
  // model table, different between models.
  const colours = await page.evaluate(() => {
    const of = (sel) => Object.fromEntries([...document.querySelectorAll(sel)].map((s) => [s.textContent.trim(), s.querySelector("i.sw").style.background]));
    return { legend: of("#legend-turnaround span"), table: of("#models tr:not(.total) td:first-child") };
  });
  const legendModels = Object.keys(colours.legend);
  const same = legendModels.length >= 2 && legendModels.every((m) => colours.table[m] === colours.legend[m]);
  const distinct = new Set(Object.values(colours.legend)).size === legendModels.length;
  if (same && distinct) pass(`one colour per model: ${JSON.stringify(colours.legend)}`);
  else fail(`model colours: ${JSON.stringify(colours)}`);

  // The route split shows the three routes: the flex call is not sync.
  const donut = await page.$eval("#chart-donut .donut-ring", (el) => ({ bg: el.style.background, title: el.title }));
  const routes = `${stats.batched_calls} batched · ${stats.flex_calls} flex · ${stats.sync_calls} sync`;
  if (donut.bg.includes("var(--flex)") && donut.title === routes) pass(`route split: ${donut.title}`);
  else fail(`route split: ${JSON.stringify(donut)}, stats ${routes}`);

  // A value axis is as wide as its widest label (uPlot's size hook).
  const widths = await page.evaluate(() => {
    const ctx = document.createElement("canvas").getContext("2d");
    const u = { axes: [{ ticks: { size: 10 }, gap: 5, font: ["11px system-ui, sans-serif"] }], ctx };
    ctx.font = "11px system-ui, sans-serif";
    return { size: window.llmfleetDashboard.axisSize(u, ["$0", "$1,234.5"], 0, 1), label: ctx.measureText("$1,234.5").width / (window.devicePixelRatio || 1) };
  });
  if (widths.size >= widths.label + 15) pass(`a value axis fits its labels: ${widths.size}px for a ${widths.label.toFixed(1)}px label`);
  else fail(`axis size ${JSON.stringify(widths)}`);

  // The period picker: 1 h asks /llmfleet/v1/stats?period=1h, whose
  // figures the page shows; "all" again goes back to the default.
  const polled = await page.evaluate(() => Number(document.body.dataset.polled));
  await page.click('#period button[data-period="1h"]');
  await page.waitForFunction((n) => Number(document.body.dataset.polled) > n, polled, { timeout: 15000 });
  const hour = await (await page.request.get(base + "/llmfleet/v1/stats?period=1h", { headers: { authorization: "Bearer e2e-admin-key" } })).json();
  const picked = await page.evaluate(() => ({ pressed: document.querySelector('#period button[aria-pressed="true"]').dataset.period, url: location.search,
    calls: document.getElementById("kpi-calls").dataset.value, paid: document.getElementById("kpi-paid").dataset.value }));
  if (hour.period === "1h" && picked.pressed === "1h" && picked.url.includes("period=1h") &&
    close(picked.calls, hour.sync_calls + hour.flex_calls + hour.batched_calls) && close(picked.paid, hour.cost_usd)) {
    pass(`period picker: 1 h shows ${picked.calls} requests, $${Number(picked.paid).toFixed(6)}, as /llmfleet/v1/stats?period=1h`);
  } else fail(`period picker: ${JSON.stringify(picked)}, stats ${JSON.stringify({ period: hour.period, cost: hour.cost_usd })}`);
  await page.click('#period button[data-period="all"]');

  // Until its first figures come, the page says it is connecting, not
  // that nothing happened.
  const slow = await browser.newPage();
  await slow.route("**/llmfleet/v1/**", async (route) => {
    await new Promise((r) => setTimeout(r, 2000));
    await route.continue().catch(() => {}); // the page may be closed by then
  });
  await slow.goto(base + "/llmfleet/");
  const early = await slow.evaluate(() => [document.getElementById("chart-turnaround").textContent.trim(), document.querySelector("#models td").textContent.trim()]);
  if (early[0] === "Connecting…" && early[1] === "Connecting…") pass("before its first figures the page says Connecting…");
  else fail(`before the first figures: ${JSON.stringify(early)}`);
  await slow.close();

  // An admin key in the tab's sessionStorage goes with every fetch as a
  // bearer token; "Forget" (a click) stops it.
  await page.evaluate(() => sessionStorage.setItem("llmfleet-admin-key", "e2e-admin-key"));
  auth.length = 0;
  await page.reload();
  await page.waitForFunction(() => Number(document.body.dataset.polled) >= 1, null, { timeout: 15000 });
  const sent = auth.filter((a) => a === "Bearer e2e-admin-key").length;
  await page.click("#adminkey-forget");
  await page.waitForFunction(() => !sessionStorage.getItem("llmfleet-admin-key"));
  auth.length = 0;
  await page.waitForFunction(() => Number(document.body.dataset.polled) >= 3, null, { timeout: 15000 });
  if (sent >= 2 && auth.length > 0 && auth.every((a) => a === "")) pass(`admin key sent as a bearer token (${sent} fetches), forgotten on click`);
  else fail(`admin key: ${sent} fetches with it, then ${JSON.stringify(auth)}`);

  if (foreign.length === 0) pass("nothing fetched from outside the proxy");
  else fail(`fetched from elsewhere: ${foreign.join(" ")}`);
  if (errors.length === 0) pass("no script error");
  else fail(`script errors: ${errors.join(" | ")}`);

  await page.screenshot({ path: out, fullPage: true });
  pass(`screenshot ${out}`);
} catch (e) {
  fail(String(e && e.stack ? e.stack : e));
} finally {
  await browser.close();
}
process.exit(failed ? 1 : 0);
