// llmfleet dashboard: polls v1/stats (the ledger summary) and v1/dashboard
// (the time series) next to this page and draws the charts with uPlot
// (vendored, served by the proxy: nothing is loaded from anywhere else).
"use strict";

(function () {
  const params = new URLSearchParams(location.search);
  const REFRESH_MS = Math.max(1, Number(params.get("refresh")) || 5) * 1000;
  const KEY_STORE = "llmfleet-admin-key";
  // The period of the totals and tables (v1/stats?period=); "all", the
  // ledger's whole history, is the server's default.
  const PERIODS = ["1h", "24h", "7d", "30d", "all"];
  let period = PERIODS.includes(params.get("period")) ? params.get("period") : "all";

  let last = { stats: null, snap: null };
  let lastOK = 0;

  const $ = (id) => document.getElementById(id);

  // ---- formatting ----------------------------------------------------

  function esc(s) {
    return String(s).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  }

  function fmtInt(n) {
    return Math.round(n || 0).toLocaleString("en-US");
  }

  function fmtUSD(v) {
    v = v || 0;
    const a = Math.abs(v);
    let s;
    if (a >= 1000) s = a.toLocaleString("en-US", { maximumFractionDigits: 0 });
    else if (a >= 1 || a === 0) s = a.toFixed(2);
    else if (a >= 0.01) s = a.toFixed(3);
    else s = a.toFixed(4);
    return (v < 0 ? "-$" : "$") + s;
  }

  function fmtAxisUSD(v) {
    if (v === 0) return "$0";
    if (v >= 1000) return "$" + (v / 1000).toLocaleString("en-US", { maximumFractionDigits: 1 }) + "k";
    if (v >= 1) return "$" + v.toLocaleString("en-US", { maximumFractionDigits: 2 });
    return "$" + Number(v.toPrecision(2));
  }

  function fmtDur(sec) {
    sec = Math.max(0, sec || 0);
    if (sec < 1) return (sec * 1000).toFixed(0) + "ms";
    if (sec < 60) return sec.toFixed(sec < 10 ? 1 : 0) + "s";
    const m = Math.floor(sec / 60), s = Math.floor(sec % 60);
    if (m < 60) return s ? m + "m " + String(s).padStart(2, "0") + "s" : m + "m";
    const h = Math.floor(m / 60);
    return m % 60 ? h + "h " + String(m % 60).padStart(2, "0") + "m" : h + "h";
  }

  function fmtAxisDur(sec) {
    if (sec === 0) return "0";
    if (sec < 60) return Number(sec.toPrecision(3)) + "s";
    if (sec < 3600) return Number((sec / 60).toPrecision(3)) + "m";
    return Number((sec / 3600).toPrecision(3)) + "h";
  }

  function pad2(n) {
    return String(n).padStart(2, "0");
  }

  function fmtClock(t, withSeconds) {
    const d = new Date(t);
    return pad2(d.getHours()) + ":" + pad2(d.getMinutes()) + (withSeconds ? ":" + pad2(d.getSeconds()) : "");
  }

  function fmtWhen(t) {
    const d = new Date(t);
    const today = new Date();
    const clock = fmtClock(d, true);
    if (d.toDateString() === today.toDateString()) return clock;
    return d.getFullYear() + "-" + pad2(d.getMonth() + 1) + "-" + pad2(d.getDate()) + " " + clock;
  }

  function plural(n, one, many) {
    return fmtInt(n) + " " + (n === 1 ? one : many);
  }

  // ---- colours -------------------------------------------------------

  function cssVar(name) {
    return getComputedStyle(document.documentElement).getPropertyValue(name).trim() || "#888";
  }

  // One colour per model, the same in every chart and table: each model
  // takes the palette slot a hash of its name picks, or the next free one
  // if another model (earlier by name) has it, so that a model keeps its
  // colour from one load to the next while the set of models is the same.
  const MODEL_COLOURS = ["#2563eb", "#db2777", "#16a34a", "#d97706", "#7c3aed", "#0891b2", "#92400e", "#64748b"];
  let colours = {};

  function hash(name) {
    let h = 2166136261;
    for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
    return h >>> 0;
  }

  function assignColours(models) {
    const names = [...new Set(models)].sort();
    const taken = new Set(), next = {};
    for (const name of names) {
      let slot = hash(name) % MODEL_COLOURS.length;
      for (let i = 0; i < MODEL_COLOURS.length && taken.has(slot); i++) slot = (slot + 1) % MODEL_COLOURS.length;
      taken.add(slot);
      next[name] = MODEL_COLOURS[slot];
    }
    colours = next;
  }

  function modelColour(name) {
    return colours[name] || MODEL_COLOURS[hash(name) % MODEL_COLOURS.length];
  }

  function swatch(colour) {
    const i = document.createElement("i");
    i.className = "sw model";
    i.style.background = colour;
    return i;
  }

  // ---- charts (uPlot) -------------------------------------------------

  const plots = {};
  // xRange holds each chart's time range, set before each draw: uPlot's
  // own pick for one or two points spans years.
  const xRange = {};
  const xScale = (id) => ({ time: true, range: () => xRange[id] });
  const DURATION_INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400];
  const COUNT_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000];

  function empty(el, text) {
    if (plots[el.id]) {
      plots[el.id].u.destroy();
      delete plots[el.id];
    }
    el.replaceChildren();
    const d = document.createElement("div");
    d.className = "empty";
    d.textContent = text;
    el.appendChild(d);
  }

  // plot draws data in el with the options opts() makes; a chart whose
  // signature (its series) is unchanged is updated in place.
  function plot(el, signature, opts, data) {
    const w = Math.max(200, el.clientWidth), h = Math.max(120, el.clientHeight);
    const p = plots[el.id];
    if (p && p.sig === signature) {
      if (p.w !== w || p.h !== h) {
        p.u.setSize({ width: w, height: h });
        p.w = w;
        p.h = h;
      }
      p.u.setData(data);
      return;
    }
    if (p) p.u.destroy();
    el.replaceChildren();
    const o = opts();
    o.width = w;
    o.height = h;
    o.legend = { show: false };
    o.cursor = Object.assign({ drag: { x: false, y: false } }, o.cursor || {});
    plots[el.id] = { u: new uPlot(o, data, el), sig: signature, w, h };
  }

  // axisSize fits a value axis to its widest label ("$1,234.5" is not
  // cut), as uPlot's size hook allows: measured on the chart's canvas.
  function axisSize(u, values, axisIdx, cycleNum) {
    const a = u.axes[axisIdx];
    if (cycleNum > 1) return a._size; // uPlot re-asks until the sizes settle
    let size = (a.ticks.size || 0) + (a.gap || 0);
    const longest = (values || []).reduce((l, v) => (String(v).length > l.length ? String(v) : l), "");
    if (longest) {
      u.ctx.font = a.font[0];
      size += u.ctx.measureText(longest).width / (window.devicePixelRatio || 1);
    }
    return Math.ceil(size) + 2;
  }

  function axis(fmt, extra) {
    const ink = cssVar("--ink-3"), grid = cssVar("--grid");
    return Object.assign({
      stroke: ink, grid: { stroke: grid, width: 1 }, ticks: { stroke: grid, width: 1 },
      font: "11px system-ui, sans-serif", values: fmt ? (u, vals) => vals.map(fmt) : undefined, size: axisSize,
    }, extra || {});
  }

  function timeAxis() {
    return axis(null, { size: 28 });
  }

  const secs = (t) => Date.parse(t) / 1000;

  // withGaps returns the sample times and values with a null inserted
  // wherever two samples are further apart than 2.5 sampling intervals
  // (the smallest spacing seen): no line is drawn across a period
  // without samples.
  function withGaps(times, columns) {
    let step = Infinity;
    for (let i = 1; i < times.length; i++) {
      const d = times[i] - times[i - 1];
      if (d > 0 && d < step) step = d;
    }
    const xs = [], cols = columns.map(() => []);
    for (let i = 0; i < times.length; i++) {
      if (i > 0 && times[i] - times[i - 1] > 2.5 * step) {
        xs.push((times[i] + times[i - 1]) / 2);
        cols.forEach((c) => c.push(null));
      }
      xs.push(times[i]);
      cols.forEach((c, j) => c.push(columns[j][i]));
    }
    return [xs, ...cols];
  }

  // netPaid is what a savings point's requests paid plus the routing
  // misses their saving does not count: the net saving is what lies
  // between it and what they would have paid.
  function netPaid(p) {
    const net = p.net_saved_usd == null ? p.saved_usd : p.net_saved_usd;
    return p.sync_equivalent_usd - net;
  }

  function drawSavings(el, snap) {
    const pts = (snap && snap.savings) || [];
    const withMisses = pts.some((p) => netPaid(p) - p.cost_usd > 1e-9);
    $("legend-netpaid").hidden = !withMisses;
    if (pts.length < 2 || pts[pts.length - 1].sync_equivalent_usd <= 0) {
      return empty(el, "No priced traffic yet");
    }
    const data = [pts.map((p) => secs(p.time)), pts.map((p) => p.sync_equivalent_usd), pts.map((p) => p.cost_usd)];
    if (withMisses) data.push(pts.map(netPaid));
    xRange[el.id] = [data[0][0], Math.max(data[0][data[0].length - 1], data[0][0] + 60)];
    plot(el, withMisses ? "savings+misses" : "savings", () => ({
      scales: { x: xScale(el.id), y: { range: (u, min, max) => [0, max > 0 ? max * 1.08 : 1] } },
      axes: [timeAxis(), axis(fmtAxisUSD)],
      series: [
        {},
        { label: "would have paid", stroke: cssVar("--would"), width: 2, dash: [5, 4], value: (u, v) => fmtUSD(v) },
        { label: "paid", stroke: cssVar("--paid"), width: 2.25, value: (u, v) => fmtUSD(v) },
        ...(withMisses ? [{ label: "paid + routing misses", stroke: cssVar("--miss"), width: 1.5, dash: [2, 3], points: { show: false }, value: (u, v) => fmtUSD(v) }] : []),
      ],
      bands: [{ series: [1, 2], fill: cssVar("--saved") }],
    }), data);
  }

  function drawTraffic(el, snap) {
    const pts = (snap && snap.traffic) || [];
    const flex = (p) => p.flex_calls || 0;
    if (!pts.some((p) => p.sync_calls + flex(p) + p.batched_calls > 0)) return empty(el, "No requests yet");
    const half = (snap.bucket_seconds || 60) / 2;
    // Stacked bars: the total (sync on top) is drawn first, then flex and
    // batched over it, then batched.
    const data = [pts.map((p) => secs(p.time) + half), pts.map((p) => p.sync_calls + flex(p) + p.batched_calls),
      pts.map((p) => flex(p) + p.batched_calls), pts.map((p) => p.batched_calls)];
    const bars = uPlot.paths.bars({ size: [0.72, 40] });
    xRange[el.id] = [data[0][0] - half, data[0][data[0].length - 1] + half];
    plot(el, "traffic3", () => ({
      scales: { x: xScale(el.id), y: { range: (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.1))] } },
      axes: [timeAxis(), axis(fmtInt, { incrs: COUNT_INCRS })],
      series: [
        {},
        { label: "sync", fill: cssVar("--sync"), stroke: cssVar("--sync"), paths: bars, points: { show: false } },
        { label: "flex", fill: cssVar("--flex"), stroke: cssVar("--flex"), paths: bars, points: { show: false } },
        { label: "batched", fill: cssVar("--batch"), stroke: cssVar("--batch"), paths: bars, points: { show: false } },
      ],
    }), data);
  }

  function drawDonut(el, stats) {
    // The three routes: batched, flex (synchronous, at batch prices), sync.
    const b = (stats && stats.batched_calls) || 0, f = (stats && stats.flex_calls) || 0, s = (stats && stats.sync_calls) || 0;
    const total = b + f + s;
    el.replaceChildren();
    const ring = document.createElement("div");
    ring.className = "donut-ring";
    const big = document.createElement("span"), small = document.createElement("span");
    big.className = "donut-big";
    small.className = "donut-small";
    if (total > 0) {
      const pct = (100 * b) / total, fpct = (100 * (b + f)) / total;
      ring.style.background = "conic-gradient(var(--batch) 0 " + pct + "%, var(--flex) " + pct + "% " + fpct + "%, var(--sync) " + fpct + "% 100%)";
      ring.title = fmtInt(b) + " batched · " + fmtInt(f) + " flex · " + fmtInt(s) + " sync";
      big.textContent = Math.round(pct) + "%";
      small.textContent = "batched";
    } else {
      small.textContent = "no requests";
    }
    ring.append(big, small);
    if (f) {
      const flex = document.createElement("span");
      flex.className = "donut-small";
      flex.textContent = Math.round((100 * f) / total) + "% flex";
      ring.append(flex);
    }
    el.appendChild(ring);
  }

  function drawQueue(el, snap) {
    const pts = (snap && snap.queue) || [];
    if (pts.length < 2) return empty(el, "Collecting samples…");
    const data = withGaps(pts.map((p) => secs(p.time)), [pts.map((p) => p.queue_depth), pts.map((p) => p.batches_in_flight)]);
    const step = uPlot.paths.stepped({ align: 1 });
    const count = (u, min, max) => [0, Math.max(1, Math.ceil(max * 1.1))];
    xRange[el.id] = [data[0][0], data[0][data[0].length - 1]];
    plot(el, "queue", () => ({
      scales: { x: xScale(el.id), y: { range: count }, n: { range: count } },
      axes: [timeAxis(), axis(fmtInt, { incrs: COUNT_INCRS }),
        axis(fmtInt, { scale: "n", side: 1, grid: { show: false }, stroke: cssVar("--inflight"), incrs: COUNT_INCRS })],
      series: [
        {},
        { label: "requests waiting", stroke: cssVar("--queue"), fill: cssVar("--queue-fill"), width: 2, paths: step, spanGaps: false, points: { show: false } },
        { label: "batches in flight", stroke: cssVar("--inflight"), width: 2, paths: step, scale: "n", spanGaps: false, points: { show: false } },
      ],
    }), data);
  }

  function drawTurnaround(el, legend, snap) {
    const series = (snap && snap.turnaround) || {};
    const models = Object.keys(series).filter((k) => series[k].length > 0).sort();
    legend.replaceChildren();
    for (const k of models) {
      const span = document.createElement("span");
      span.append(swatch(modelColour(k)), k);
      legend.appendChild(span);
    }
    if (models.length === 0) return empty(el, "No batch has ended yet");
    // One x for all: the union of the models' times, null where a model
    // has no batch ending then; dots only.
    const byTime = new Map();
    models.forEach((k, j) => {
      for (const p of series[k]) {
        const t = secs(p.time);
        if (!byTime.has(t)) byTime.set(t, models.map(() => null));
        byTime.get(t)[j] = p.seconds;
      }
    });
    const xs = [...byTime.keys()].sort((a, b) => a - b);
    const data = [xs, ...models.map((k, j) => xs.map((t) => byTime.get(t)[j]))];
    const t0 = xs[0], t1 = xs[xs.length - 1];
    xRange[el.id] = t1 - t0 < 60 ? [t0 - 30, t1 + 30] : [t0, t1];
    plot(el, "turn:" + models.join(","), () => ({
      scales: {
        x: xScale(el.id),
        y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] },
      },
      axes: [timeAxis(), axis(fmtAxisDur, { incrs: DURATION_INCRS })],
      series: [{}, ...models.map((k) => ({
        label: k, stroke: modelColour(k), paths: () => null,
        points: { show: true, size: 7, fill: modelColour(k), stroke: modelColour(k) }, value: (u, v) => (v == null ? "" : fmtDur(v)),
      }))],
    }), data);
  }

  // ---- tables --------------------------------------------------------

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function emptyRow(tbody, cols, text) {
    const tr = document.createElement("tr");
    const td = cell(tr, text, "empty");
    td.colSpan = cols;
    tbody.appendChild(tr);
  }

  function tag(td, text, cls) {
    const s = document.createElement("span");
    s.className = "tag " + cls;
    s.textContent = text;
    td.appendChild(s);
  }

  function drawInFlight(tbody, snap) {
    const list = (snap && snap.batches_in_flight) || [];
    const count = (snap && snap.stats && snap.stats.batches_in_flight) || list.length;
    $("inflight-count").textContent = count ? plural(count, "batch", "batches") : "";
    tbody.replaceChildren();
    if (list.length === 0) {
      emptyRow(tbody, 4, count ? plural(count, "batch is", "batches are") + " in flight; listing them needs a store" : "No batch in flight");
      return;
    }
    const maxAge = Math.max(60, ...list.map((b) => b.age_seconds || 0));
    for (const b of list) {
      const tr = document.createElement("tr");
      const id = cell(tr, b.upstream_id || b.id, "mono id");
      id.title = b.id + (b.upstream_id ? " · " + b.upstream_id : "") + (b.state ? " · " + b.state : "");
      cell(tr, (b.models || []).join(", ") || "–", "models");
      cell(tr, fmtInt(b.size), "num");
      const td = cell(tr, "", "age");
      const bar = document.createElement("div");
      bar.className = "agebar";
      const track = document.createElement("div");
      track.className = "track";
      const fill = document.createElement("div");
      fill.className = "fill" + (b.age_seconds > 3600 ? " old" : "");
      fill.style.width = Math.max(2, (100 * (b.age_seconds || 0)) / maxAge).toFixed(1) + "%";
      track.appendChild(fill);
      const label = document.createElement("span");
      label.textContent = fmtDur(b.age_seconds);
      bar.append(track, label);
      td.appendChild(bar);
      tbody.appendChild(tr);
    }
  }

  // missLabel says what happened to a budget miss, as ledger.MissLabel
  // does: a request given up at its budget (504) timed out; one answered
  // after it was late. Errors are not misses.
  const TIMEOUTS = ["budget_exceeded", "timeout_error", "deadline_exceeded"];

  function missLabel(e) {
    if (TIMEOUTS.includes(e.outcome)) return "timed out at the budget";
    if (e.outcome === "ok") return "answered late";
    return "";
  }

  function drawMisses(tbody, stats) {
    const list = ((stats && stats.recent_budget_misses) || []).filter((e) => missLabel(e) !== "");
    $("misses-count").textContent = stats ? plural(stats.budget_misses || 0, "miss", "misses") + " in all" : "";
    tbody.replaceChildren();
    if (stats && !Array.isArray(stats.recent_budget_misses)) return emptyRow(tbody, 6, "Enter the admin key to see them");
    if (list.length === 0) return emptyRow(tbody, 6, "No budget missed");
    for (const e of list) {
      const tr = document.createElement("tr");
      const timedOut = TIMEOUTS.includes(e.outcome);
      tr.dataset.outcome = e.outcome;
      cell(tr, fmtWhen(e.time));
      const m = cell(tr, "");
      if (e.model) m.append(swatch(modelColour(e.model)), " ");
      m.append(e.model || "–");
      tag(cell(tr, ""), e.route, routeClass(e.route));
      cell(tr, fmtDur((e.budget_ns || 0) / 1e9), "num");
      // A request given up at its budget took the budget; its answer
      // never came, so how long it would have taken is unknown.
      cell(tr, timedOut ? "–" : fmtDur((e.latency_ns || 0) / 1e9), timedOut ? "num dim" : "num bad");
      cell(tr, missLabel(e), "bad miss-label");
      tbody.appendChild(tr);
    }
  }

  function drawProviders(tbody, stats) {
    const by = (stats && stats.by_provider) || {};
    const names = Object.keys(by).sort((a, b) => (by[b].sync_equivalent_usd - by[a].sync_equivalent_usd) || a.localeCompare(b));
    tbody.replaceChildren();
    if (names.length === 0) return emptyRow(tbody, 9, "No requests yet");
    for (const name of names) {
      const b = by[name];
      const tr = document.createElement("tr");
      tr.dataset.provider = name;
      cell(tr, name);
      cell(tr, fmtInt(b.calls), "num").dataset.value = b.calls;
      cell(tr, fmtInt(b.sync_calls), "num");
      cell(tr, fmtInt(b.flex_calls), "num").dataset.value = b.flex_calls || 0;
      cell(tr, fmtInt(b.batched_calls), "num");
      cell(tr, fmtUSD(b.cost_usd), "num").dataset.value = b.cost_usd;
      cell(tr, fmtUSD(b.sync_equivalent_usd), "num dim").dataset.value = b.sync_equivalent_usd;
      cell(tr, fmtUSD(b.saved_usd), "num saved").dataset.value = b.saved_usd;
      cell(tr, fmtInt(b.budget_misses), b.budget_misses > 0 ? "num bad" : "num");
      tbody.appendChild(tr);
    }
  }

  function drawClients(tbody, stats) {
    const by = (stats && stats.by_client) || {};
    const names = Object.keys(by).sort((a, b) => (by[b].sync_equivalent_usd - by[a].sync_equivalent_usd) || a.localeCompare(b));
    tbody.replaceChildren();
    if (names.length === 0) return emptyRow(tbody, 8, "No requests yet");
    for (const name of names) {
      const b = by[name];
      const tr = document.createElement("tr");
      tr.dataset.client = name;
      cell(tr, name, name.startsWith("cred_") ? "mono" : "");
      cell(tr, fmtInt(b.calls), "num").dataset.value = b.calls;
      cell(tr, fmtInt(b.sync_calls), "num");
      cell(tr, fmtInt(b.flex_calls), "num");
      cell(tr, fmtInt(b.batched_calls), "num");
      cell(tr, fmtUSD(b.cost_usd), "num").dataset.value = b.cost_usd;
      cell(tr, fmtUSD(b.sync_equivalent_usd), "num dim").dataset.value = b.sync_equivalent_usd;
      cell(tr, fmtUSD(b.saved_usd), "num saved").dataset.value = b.saved_usd;
      tbody.appendChild(tr);
    }
  }

  function drawModels(tbody, stats) {
    const by = (stats && stats.by_model) || {};
    const models = Object.keys(by).sort((a, b) => (by[b].sync_equivalent_usd - by[a].sync_equivalent_usd) || a.localeCompare(b));
    tbody.replaceChildren();
    if (models.length === 0) return emptyRow(tbody, 11, "No requests yet");
    const row = (name, b, total) => {
      const tr = document.createElement("tr");
      if (total) tr.className = "total";
      const td = cell(tr, "");
      if (!total) td.append(swatch(modelColour(name || "")), " ");
      td.append(name || "(unknown)");
      if (!total && b.unpriced_requests > 0) {
        td.append(" ");
        tag(td, "not in price table", "warn");
      }
      const t = b.tokens || {};
      cell(tr, fmtInt(b.sync_calls), "num");
      cell(tr, fmtInt(b.flex_calls), "num");
      cell(tr, fmtInt(b.batched_calls), "num");
      cell(tr, fmtInt(t.input), "num");
      cell(tr, fmtInt(t.output), "num");
      cell(tr, fmtInt((t.cache_write_5m || 0) + (t.cache_write_1h || 0)), "num");
      cell(tr, fmtInt(t.cache_read), "num");
      const unknown = !total && b.unpriced_requests === b.calls;
      cell(tr, unknown ? "?" : fmtUSD(b.cost_usd), "num");
      cell(tr, unknown ? "?" : fmtUSD(b.sync_equivalent_usd), "num dim");
      cell(tr, unknown ? "?" : fmtUSD(b.saved_usd), "num saved");
      tbody.appendChild(tr);
    };
    for (const m of models) row(m, by[m], false);
    if (models.length > 1) {
      row("Total", {
        sync_calls: stats.sync_calls, flex_calls: stats.flex_calls, batched_calls: stats.batched_calls, tokens: stats.tokens,
        cost_usd: stats.cost_usd, sync_equivalent_usd: stats.sync_equivalent_usd, saved_usd: stats.saved_usd,
      }, true);
    }
  }

  // ---- prompt cache ----------------------------------------------------

  const ROUTES = ["sync", "flex", "batch"];

  // routeClass is the colour class of a route's tag.
  function routeClass(r) {
    return r === "batch" || r === "flex" ? r : "sync";
  }

  // cacheable returns the tokens read from the cache or written to it.
  function cacheable(b) {
    const t = (b && b.tokens) || {};
    return (t.cache_read || 0) + (t.cache_write_5m || 0) + (t.cache_write_1h || 0);
  }

  // fmtHit formats a breakdown's cache hit rate; "–" when nothing was
  // cacheable (no hit rate to speak of).
  function fmtHit(b) {
    return b && cacheable(b) > 0 ? (100 * (b.cache_hit_rate || 0)).toFixed(1) + "%" : "–";
  }

  function drawCacheRoutes(tbody, stats) {
    const by = (stats && stats.by_route) || {};
    const routes = [...ROUTES.filter((r) => by[r]), ...Object.keys(by).filter((r) => !ROUTES.includes(r)).sort()];
    const notes = [];
    const rewrites = Object.entries((stats && stats.rewrites) || {});
    for (const [kind, n] of rewrites) notes.push(plural(n, "request", "requests") + " rewritten (" + kind + ")");
    if (stats && stats.estimated) notes.push(plural(stats.estimated, "usage", "usages") + " estimated");
    $("cache-count").textContent = notes.join(" · ");
    tbody.replaceChildren();
    if (routes.length === 0) return emptyRow(tbody, 5, "No requests yet");
    for (const r of routes) {
      const b = by[r], t = b.tokens || {};
      const tr = document.createElement("tr");
      tr.dataset.route = r;
      tag(cell(tr, ""), r, routeClass(r));
      const td = cell(tr, "", "hit");
      td.dataset.value = b.cache_hit_rate || 0;
      const bar = document.createElement("div");
      bar.className = "hitbar";
      const track = document.createElement("div");
      track.className = "track";
      const fill = document.createElement("div");
      fill.className = "fill";
      fill.style.width = (cacheable(b) > 0 ? 100 * (b.cache_hit_rate || 0) : 0).toFixed(1) + "%";
      track.appendChild(fill);
      const label = document.createElement("span");
      label.textContent = fmtHit(b);
      bar.append(track, label);
      td.appendChild(bar);
      cell(tr, fmtInt(t.cache_read), "num");
      cell(tr, fmtInt((t.cache_write_5m || 0) + (t.cache_write_1h || 0)), "num").title =
        fmtInt(t.cache_write_5m) + " for 5 minutes, " + fmtInt(t.cache_write_1h) + " for an hour";
      cell(tr, fmtUSD(b.routing_miss_usd), b.routing_miss_usd > 0 ? "num miss" : "num").dataset.value = b.routing_miss_usd || 0;
      tbody.appendChild(tr);
    }
  }

  function drawCacheModels(tbody, stats) {
    const by = (stats && stats.by_model) || {};
    const byRoute = (stats && stats.by_route_model) || {};
    const models = Object.keys(by).filter((m) => cacheable(by[m]) > 0 || by[m].routing_miss_usd > 0).sort();
    tbody.replaceChildren();
    if (models.length === 0) return emptyRow(tbody, 6, "No prompt has been cached yet");
    for (const m of models) {
      const tr = document.createElement("tr");
      tr.dataset.model = m;
      const td = cell(tr, "");
      td.append(swatch(modelColour(m)), " ", m || "(unknown)");
      for (const r of ROUTES) cell(tr, fmtHit((byRoute[r] || {})[m]), "num").dataset.route = r;
      cell(tr, fmtHit(by[m]), "num").dataset.value = by[m].cache_hit_rate || 0;
      const miss = by[m].routing_miss_usd || 0;
      cell(tr, fmtUSD(miss), miss > 0 ? "num miss" : "num").dataset.value = miss;
      tbody.appendChild(tr);
    }
  }

  // ---- KPIs ------------------------------------------------------------

  function drawKPIs(stats, snap) {
    if (stats) {
      $("kpi-paid").textContent = fmtUSD(stats.cost_usd);
      $("kpi-paid").dataset.value = stats.cost_usd;
      $("kpi-would").textContent = fmtUSD(stats.sync_equivalent_usd);
      $("kpi-would").dataset.value = stats.sync_equivalent_usd;
      $("kpi-saved").textContent = fmtUSD(stats.saved_usd);
      $("kpi-saved").dataset.value = stats.saved_usd;
      $("kpi-saved-note").textContent = (stats.saved_percent || 0).toFixed(1) + "% of the sync price";
      const net = stats.net_saved_usd == null ? stats.saved_usd : stats.net_saved_usd;
      $("kpi-net").textContent = fmtUSD(net);
      $("kpi-net").dataset.value = net;
      $("kpi-net").classList.toggle("bad", net < 0);
      $("kpi-net-note").textContent = stats.sync_equivalent_usd > 0
        ? ((100 * net) / stats.sync_equivalent_usd).toFixed(1) + "% of the sync price" : "\u00a0";
      $("kpi-routing").textContent = fmtUSD(stats.routing_miss_usd);
      $("kpi-routing").dataset.value = stats.routing_miss_usd || 0;
      $("kpi-routing-note").textContent = stats.cache_hit_rate != null && cacheable(stats) > 0
        ? (100 * stats.cache_hit_rate).toFixed(1) + "% cache hit rate" : "no prompt cached";
      $("kpi-paid-note").textContent = stats.unpriced_requests
        ? "+ " + plural(stats.unpriced_requests, "unpriced request", "unpriced requests")
        : "at list prices";
      $("kpi-paid-note").title = stats.unpriced_requests ? "requests of models missing from the price table: tokens counted, cost unknown" : "";
      const calls = (stats.sync_calls || 0) + (stats.flex_calls || 0) + (stats.batched_calls || 0);
      $("kpi-calls").textContent = fmtInt(calls);
      $("kpi-calls").dataset.value = calls;
      const bp = calls ? (100 * stats.batched_calls) / calls : 0, fp = calls ? (100 * (stats.flex_calls || 0)) / calls : 0;
      const bar = $("kpi-split");
      bar.children[0].style.width = bp + "%";
      bar.children[1].style.width = fp + "%";
      bar.children[2].style.width = (calls ? 100 - bp - fp : 0) + "%";
      $("kpi-calls-note").textContent = fmtInt(stats.batched_calls) + " batched · " +
        (stats.flex_calls ? fmtInt(stats.flex_calls) + " flex · " : "") + fmtInt(stats.sync_calls) + " sync";
      $("kpi-calls-note").title = stats.batches_submitted ? plural(stats.batches_submitted, "batch", "batches") + " submitted" : "";
      $("kpi-misses").textContent = fmtInt(stats.budget_misses);
      $("kpi-misses").classList.toggle("bad", stats.budget_misses > 0);
      $("kpi-misses-note").textContent = calls ? ((100 * (stats.budget_misses || 0)) / calls).toFixed(1) + "% of requests" : "\u00a0";
    }
    if (snap && snap.stats) {
      $("kpi-queue").textContent = fmtInt(snap.stats.queue_depth);
      $("kpi-inflight").textContent = plural(snap.stats.batches_in_flight || 0, "batch", "batches") + " in flight";
    }
  }

  // ---- loop ----------------------------------------------------------

  // connecting fills every chart and table with "Connecting…" until the
  // first figures come: nothing claims there is no traffic before then.
  function connecting() {
    for (const el of document.querySelectorAll(".chart, .donut")) empty(el, "Connecting…");
    for (const tbody of document.querySelectorAll("table tbody")) {
      tbody.replaceChildren();
      emptyRow(tbody, tbody.closest("table").querySelectorAll("thead th").length, "Connecting…");
    }
  }

  function render() {
    const { stats, snap } = last;
    if (!stats && !snap) return connecting();
    assignColours([...Object.keys((stats && stats.by_model) || {}), ...Object.keys((snap && snap.turnaround) || {})]);
    drawKPIs(stats, snap);
    drawSavings($("chart-savings"), snap);
    drawCacheRoutes($("cache-routes"), stats);
    drawCacheModels($("cache-models"), stats);
    drawDonut($("chart-donut"), stats);
    drawTraffic($("chart-traffic"), snap);
    drawQueue($("chart-queue"), snap);
    drawTurnaround($("chart-turnaround"), $("legend-turnaround"), snap);
    drawInFlight($("inflight"), snap);
    drawMisses($("misses"), stats);
    drawProviders($("providers"), stats);
    drawClients($("clients"), stats);
    drawModels($("models"), stats);
  }

  function setStatus(ok, text) {
    const el = $("status");
    el.classList.toggle("live", ok);
    el.classList.toggle("down", !ok);
    $("status-text").textContent = text;
  }

  // ---- admin key -------------------------------------------------------

  // The admin key, if the user entered one, is kept for this tab only
  // (sessionStorage) and sent with every fetch as a bearer token.
  function adminKey() {
    try {
      return sessionStorage.getItem(KEY_STORE) || "";
    } catch (e) {
      return "";
    }
  }

  function setAdminKey(k) {
    try {
      if (k) sessionStorage.setItem(KEY_STORE, k);
      else sessionStorage.removeItem(KEY_STORE);
    } catch (e) {}
  }

  // showKeyField shows the key field when the server says per-request
  // details need a key (it answered 401/403, or left them out), or when a
  // key is in use (to forget it).
  function showKeyField(needed) {
    const has = adminKey() !== "";
    $("adminkey").hidden = !needed && !has;
    $("adminkey-forget").hidden = !has;
    $("adminkey-why").textContent = has && needed ? "The admin key was refused" : has ? "Admin key in use" : "Per-request details need the admin key";
  }

  $("adminkey-use").addEventListener("click", () => {
    const v = $("adminkey-input").value.trim();
    $("adminkey-input").value = "";
    if (!v) return;
    setAdminKey(v);
    refresh();
  });
  $("adminkey-input").addEventListener("keydown", (ev) => {
    if (ev.key === "Enter") $("adminkey-use").click();
  });
  $("adminkey-forget").addEventListener("click", () => {
    setAdminKey("");
    refresh();
  });

  class HTTPError extends Error {
    constructor(url, status) {
      super(url + ": HTTP " + status);
      this.status = status;
    }
  }

  async function getJSON(url) {
    const headers = { accept: "application/json" };
    const k = adminKey();
    if (k) headers.authorization = "Bearer " + k;
    const r = await fetch(url, { cache: "no-store", headers });
    if (!r.ok) throw new HTTPError(url, r.status);
    return r.json();
  }

  let pollTimer = 0;

  async function poll() {
    clearTimeout(pollTimer);
    try {
      const asked = period;
      const [stats, snap] = await Promise.all([getJSON(period === "all" ? "v1/stats" : "v1/stats?period=" + period), getJSON("v1/dashboard")]);
      if (asked !== period) return; // another period was picked meanwhile
      showPeriod(stats.period);
      last = { stats, snap };
      lastOK = Date.now();
      showKeyField(!Array.isArray(stats.recent_budget_misses) || stats.admin_key_required === true);
      render();
      setStatus(true, "live · updated " + fmtClock(Date.now(), true));
      document.body.dataset.polled = String((Number(document.body.dataset.polled) || 0) + 1);
    } catch (err) {
      if (err instanceof HTTPError && (err.status === 401 || err.status === 403)) {
        showKeyField(true);
        setStatus(false, "the proxy asks for the admin key");
      } else {
        setStatus(false, "cannot reach the proxy · retrying" + (lastOK ? " · figures of " + fmtClock(lastOK, true) : ""));
      }
    } finally {
      pollTimer = setTimeout(poll, REFRESH_MS);
    }
  }

  function refresh() {
    showKeyField(false);
    poll();
  }

  // ---- period --------------------------------------------------------

  // showPeriod marks the period picked; served is the period the stats
  // name: "since_start" when the proxy keeps no ledger (no other period).
  function showPeriod(served) {
    const fixed = served === "since_start";
    $("period").classList.toggle("fixed", fixed);
    for (const b of $("period").querySelectorAll("button")) {
      b.setAttribute("aria-pressed", String(!fixed && b.dataset.period === period));
      b.disabled = fixed;
    }
    if (fixed) $("period").title = "This proxy keeps no ledger: the figures count since it started";
  }

  $("period").addEventListener("click", (ev) => {
    const p = ev.target.closest("button") && ev.target.closest("button").dataset.period;
    if (!p || p === period) return;
    period = p;
    const q = new URLSearchParams(location.search);
    if (p === "all") q.delete("period");
    else q.set("period", p);
    history.replaceState(null, "", location.pathname + (q.toString() ? "?" + q : ""));
    showPeriod(p);
    poll();
  });

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 150);
  });

  // For the browser check (e2e/dashboard.mjs): the pure helpers.
  window.llmfleetDashboard = { withGaps, missLabel, modelColour, fmtHit, netPaid, axisSize };

  showPeriod(period);
  render();
  poll();
})();
