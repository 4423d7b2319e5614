// llmfleet dashboard: polls v1/stats (the ledger summary) and v1/dashboard
// (the time series) next to this page and draws them with inline SVG.
// No libraries, nothing loaded from anywhere but the proxy.
"use strict";

(function () {
  const params = new URLSearchParams(location.search);
  const REFRESH_MS = Math.max(1, Number(params.get("refresh")) || 5) * 1000;
  const MODEL_CLASSES = 6;

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

  // ---- scales --------------------------------------------------------

  // niceMax returns a round upper bound for an axis and its ticks.
  function niceScale(max, count) {
    if (!(max > 0)) max = 1;
    const raw = max / count;
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const step = [1, 2, 2.5, 5, 10].map((f) => f * mag).find((s) => s >= raw);
    const top = Math.ceil(max / step - 1e-9) * step;
    const ticks = [];
    for (let v = 0; v <= top + step / 2; v += step) ticks.push(Number(v.toPrecision(12)));
    return { max: top, ticks };
  }

  // integerScale is niceScale for counts: whole-number ticks.
  function integerScale(max, count) {
    const s = niceScale(Math.max(max, 1), count);
    if (s.ticks.length > 1 && s.ticks[1] < 1) return { max: Math.max(1, Math.ceil(max)), ticks: [0, Math.max(1, Math.ceil(max))] };
    return s;
  }

  const TIME_STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400].map((s) => s * 1000);

  function timeTicks(t0, t1, count) {
    const span = Math.max(1, t1 - t0);
    const step = TIME_STEPS.find((s) => span / s <= count) || TIME_STEPS[TIME_STEPS.length - 1];
    const offset = new Date(t0).getTimezoneOffset() * 60000;
    const ticks = [];
    for (let t = Math.ceil((t0 - offset) / step) * step + offset; t <= t1; t += step) ticks.push(t);
    return { ticks, seconds: step < 60000 };
  }

  // ---- charts --------------------------------------------------------

  function empty(el, text) {
    el.innerHTML = '<div class="empty">' + esc(text) + "</div>";
  }

  // frame sets up a time chart's geometry and draws its grid and axes.
  function frame(el, t0, t1, yscale, yfmt, opts) {
    opts = opts || {};
    const w = Math.max(200, el.clientWidth), h = Math.max(120, el.clientHeight);
    const m = { l: 54, r: opts.right || 14, t: 10, b: 24 };
    const iw = w - m.l - m.r, ih = h - m.t - m.b;
    const x = (t) => m.l + (t1 === t0 ? iw / 2 : ((t - t0) / (t1 - t0)) * iw);
    const y = (v) => m.t + ih - (v / yscale.max) * ih;
    let g = "";
    for (const v of yscale.ticks) {
      const yy = y(v).toFixed(1);
      g += '<line class="gridline" x1="' + m.l + '" x2="' + (m.l + iw) + '" y1="' + yy + '" y2="' + yy + '"/>';
      g += '<text x="' + (m.l - 8) + '" y="' + yy + '" dy="0.32em" text-anchor="end">' + esc(yfmt(v)) + "</text>";
    }
    if (opts.y2) {
      for (const v of opts.y2.scale.ticks) {
        const yy = (m.t + ih - (v / opts.y2.scale.max) * ih).toFixed(1);
        g += '<text x="' + (m.l + iw + 8) + '" y="' + yy + '" dy="0.32em" class="' + opts.y2.cls + '">' + esc(opts.y2.fmt(v)) + "</text>";
      }
    }
    const tt = timeTicks(t0, t1, Math.max(2, Math.floor(iw / 90)));
    for (const t of tt.ticks) {
      g += '<text x="' + x(t).toFixed(1) + '" y="' + (h - 6) + '" text-anchor="middle">' + esc(fmtClock(t, tt.seconds)) + "</text>";
    }
    g += '<line class="axis" x1="' + m.l + '" x2="' + (m.l + iw) + '" y1="' + (m.t + ih) + '" y2="' + (m.t + ih) + '"/>';
    return { w, h, m, iw, ih, x, y, grid: g };
  }

  function svg(f, body) {
    return '<svg viewBox="0 0 ' + f.w + " " + f.h + '" preserveAspectRatio="none" role="img">' + f.grid + body + "</svg>";
  }

  function pathOf(points, x, y) {
    return points.map((p, i) => (i ? "L" : "M") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1)).join("");
  }

  function drawSavings(el, snap) {
    const pts = (snap && snap.savings) || [];
    if (pts.length < 2 || pts[pts.length - 1].sync_equivalent_usd <= 0) {
      return empty(el, "No priced traffic yet");
    }
    const t = pts.map((p) => Date.parse(p.time));
    const would = pts.map((p, i) => [t[i], p.sync_equivalent_usd]);
    const paid = pts.map((p, i) => [t[i], p.cost_usd]);
    const ys = niceScale(Math.max(...would.map((p) => p[1]), ...paid.map((p) => p[1])), 4);
    const f = frame(el, t[0], t[t.length - 1], ys, fmtAxisUSD, { right: 150 });
    const band = pathOf(would, f.x, f.y) + pathOf(paid.slice().reverse(), f.x, f.y).replace(/^M/, "L") + "Z";
    let body = '<path class="a-saved" d="' + band + '"/>';
    body += '<path class="l-would" d="' + pathOf(would, f.x, f.y) + '"/>';
    body += '<path class="l-paid" d="' + pathOf(paid, f.x, f.y) + '"/>';
    // End labels, kept apart vertically.
    const lp = pts[pts.length - 1];
    const ex = f.m.l + f.iw + 10;
    let yw = f.y(lp.sync_equivalent_usd), yp = f.y(lp.cost_usd);
    if (yp - yw < 30) {
      const mid = (yp + yw) / 2;
      yw = mid - 15;
      yp = mid + 15;
    }
    const ysaved = (yw + yp) / 2;
    body += '<text class="end-label would" x="' + ex + '" y="' + yw.toFixed(1) + '" dy="0.32em">' + esc(fmtUSD(lp.sync_equivalent_usd)) + " at sync</text>";
    body += '<text class="end-label paid" x="' + ex + '" y="' + yp.toFixed(1) + '" dy="0.32em">' + esc(fmtUSD(lp.cost_usd)) + " paid</text>";
    if (yp - yw >= 44) {
      body += '<text class="end-label saved" x="' + ex + '" y="' + ysaved.toFixed(1) + '" dy="0.32em">' + esc(fmtUSD(lp.saved_usd)) + " saved</text>";
    }
    el.innerHTML = svg(f, body);
  }

  function drawTraffic(el, snap) {
    const pts = (snap && snap.traffic) || [];
    if (!pts.some((p) => p.sync_calls + p.batched_calls > 0)) return empty(el, "No requests yet");
    const bucket = (snap.bucket_seconds || 60) * 1000;
    const t = pts.map((p) => Date.parse(p.time));
    const ys = integerScale(Math.max(...pts.map((p) => p.sync_calls + p.batched_calls)), 4);
    const f = frame(el, t[0], t[t.length - 1] + bucket, ys, fmtInt);
    const bw = Math.max(1, (f.iw / pts.length) * 0.72);
    let body = "";
    pts.forEach((p, i) => {
      const x = f.x(t[i] + bucket / 2) - bw / 2;
      const yb = f.y(p.batched_calls), ys2 = f.y(p.batched_calls + p.sync_calls), y0 = f.y(0);
      const title = "<title>" + esc(fmtClock(t[i]) + ": " + p.batched_calls + " batched, " + p.sync_calls + " sync") + "</title>";
      if (p.batched_calls) body += '<rect class="f-batch" x="' + x.toFixed(1) + '" y="' + yb.toFixed(1) + '" width="' + bw.toFixed(1) + '" height="' + (y0 - yb).toFixed(1) + '">' + title + "</rect>";
      if (p.sync_calls) body += '<rect class="f-sync" x="' + x.toFixed(1) + '" y="' + ys2.toFixed(1) + '" width="' + bw.toFixed(1) + '" height="' + (yb - ys2).toFixed(1) + '">' + title + "</rect>";
    });
    el.innerHTML = svg(f, body);
  }

  function arc(cx, cy, r, a0, a1) {
    const p = (a) => [cx + r * Math.sin(a), cy - r * Math.cos(a)];
    const [x0, y0] = p(a0), [x1, y1] = p(a1);
    return "M" + x0.toFixed(2) + "," + y0.toFixed(2) + "A" + r + "," + r + " 0 " + (a1 - a0 > Math.PI ? 1 : 0) + " 1 " + x1.toFixed(2) + "," + y1.toFixed(2);
  }

  function drawDonut(el, stats) {
    const b = (stats && stats.batched_calls) || 0, s = (stats && stats.sync_calls) || 0;
    const total = b + s;
    const size = 118, cx = 59, cy = 59, r = 48, sw = 14;
    const ring = (c) => '<circle class="' + c + '" cx="' + cx + '" cy="' + cy + '" r="' + r + '" fill="none" stroke-width="' + sw + '"/>';
    let body = ring("s-track");
    if (total > 0) {
      const fb = b / total;
      const a = fb * 2 * Math.PI;
      if (b > 0 && s > 0) {
        body += '<path class="s-batch" d="' + arc(cx, cy, r, 0, a) + '" fill="none" stroke-width="' + sw + '"/>';
        body += '<path class="s-sync" d="' + arc(cx, cy, r, a, 2 * Math.PI) + '" fill="none" stroke-width="' + sw + '"/>';
      } else {
        body += ring(b ? "s-batch" : "s-sync");
      }
      body += '<text class="donut-big" x="' + cx + '" y="' + (cy + 2) + '" text-anchor="middle">' + esc(Math.round(fb * 100) + "%") + "</text>";
      body += '<text class="donut-small" x="' + cx + '" y="' + (cy + 18) + '" text-anchor="middle">batched</text>';
    } else {
      body += '<text class="donut-small" x="' + cx + '" y="' + (cy + 4) + '" text-anchor="middle">no requests</text>';
    }
    el.innerHTML = '<svg viewBox="0 0 ' + size + " " + size + '" role="img">' + body + "</svg>";
  }

  function drawQueue(el, snap) {
    const pts = (snap && snap.queue) || [];
    if (pts.length < 2) return empty(el, "Collecting samples…");
    const t = pts.map((p) => Date.parse(p.time));
    const q = pts.map((p, i) => [t[i], p.queue_depth]);
    const b = pts.map((p, i) => [t[i], p.batches_in_flight]);
    const qs = integerScale(Math.max(...q.map((p) => p[1])), 4);
    const bs = integerScale(Math.max(...b.map((p) => p[1])), 4);
    const f = frame(el, t[0], t[t.length - 1], qs, fmtInt, { right: 36, y2: { scale: bs, fmt: fmtInt, cls: "y2" } });
    const yb = (v) => f.m.t + f.ih - (v / bs.max) * f.ih;
    // Step lines: a sample holds until the next one.
    const step = (points, y) => points.map((p, i) => (i ? "H" + f.x(p[0]).toFixed(1) + "V" : "M" + f.x(p[0]).toFixed(1) + ",") + y(p[1]).toFixed(1)).join("");
    const qline = step(q, f.y);
    const area = qline + "V" + f.y(0).toFixed(1) + "H" + f.x(t[0]).toFixed(1) + "Z";
    let body = '<path class="a-queue" d="' + area + '"/><path class="l-queue" d="' + qline + '"/>';
    body += '<path class="l-inflight" d="' + step(b, yb) + '"/>';
    el.innerHTML = svg(f, body);
  }

  function modelClasses(models) {
    const m = {};
    models.slice().sort().forEach((name, i) => (m[name] = "m" + (i % MODEL_CLASSES)));
    return m;
  }

  function drawTurnaround(el, legend, snap) {
    const series = (snap && snap.turnaround) || {};
    const models = Object.keys(series).filter((k) => series[k].length > 0).sort();
    const cls = modelClasses(models);
    legend.innerHTML = models.map((k) => '<span><i class="sw ' + cls[k] + '"></i>' + esc(k) + "</span>").join("");
    if (models.length === 0) return empty(el, "No batch has ended yet");
    let t0 = Infinity, t1 = -Infinity, max = 0;
    for (const k of models) {
      for (const p of series[k]) {
        const t = Date.parse(p.time);
        t0 = Math.min(t0, t);
        t1 = Math.max(t1, t);
        max = Math.max(max, p.seconds);
      }
    }
    if (t1 - t0 < 60000) {
      t0 -= 30000;
      t1 += 30000;
    }
    const unit = max >= 7200 ? 3600 : max >= 120 ? 60 : 1;
    const ys = niceScale(max / unit, 4);
    ys.max *= unit;
    ys.ticks = ys.ticks.map((v) => v * unit);
    const f = frame(el, t0, t1, ys, fmtAxisDur);
    let body = "";
    for (const k of models) {
      const pts = series[k].map((p) => [Date.parse(p.time), p.seconds]);
      if (pts.length > 1) body += '<path class="series ' + cls[k] + '" d="' + pathOf(pts, f.x, f.y) + '"/>';
      for (const p of pts) {
        body += '<circle class="pt ' + cls[k] + '" cx="' + f.x(p[0]).toFixed(1) + '" cy="' + f.y(p[1]).toFixed(1) + '" r="3.5"><title>' +
          esc(k + ": " + fmtDur(p[1]) + " (ended " + fmtClock(p[0], true) + ")") + "</title></circle>";
      }
    }
    el.innerHTML = svg(f, body);
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

  function drawMisses(tbody, stats) {
    const list = (stats && stats.recent_budget_misses) || [];
    $("misses-count").textContent = stats ? plural(stats.budget_misses || 0, "miss", "misses") + " in all" : "";
    tbody.replaceChildren();
    if (list.length === 0) return emptyRow(tbody, 6, "No budget missed");
    for (const e of list) {
      const tr = document.createElement("tr");
      cell(tr, fmtWhen(e.time));
      cell(tr, e.model || "–");
      tag(cell(tr, ""), e.route, e.route === "batch" ? "batch" : "sync");
      cell(tr, fmtDur((e.budget_ns || 0) / 1e9), "num");
      cell(tr, fmtDur((e.latency_ns || 0) / 1e9), "num bad");
      cell(tr, e.outcome === "ok" ? "answered late" : e.outcome, e.outcome === "ok" ? "dim" : "bad");
      tbody.appendChild(tr);
    }
  }

  function drawModels(tbody, stats) {
    const by = (stats && stats.by_model) || {};
    const models = Object.keys(by).sort((a, b) => (by[b].sync_equivalent_usd - by[a].sync_equivalent_usd) || a.localeCompare(b));
    tbody.replaceChildren();
    if (models.length === 0) return emptyRow(tbody, 10, "No requests yet");
    const row = (name, b, total) => {
      const tr = document.createElement("tr");
      if (total) tr.className = "total";
      const td = cell(tr, name || "(unknown)");
      if (!total && b.unpriced_requests > 0) {
        td.append(" ");
        tag(td, "not in price table", "warn");
      }
      const t = b.tokens || {};
      cell(tr, fmtInt(b.sync_calls), "num");
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
        sync_calls: stats.sync_calls, batched_calls: stats.batched_calls, tokens: stats.tokens,
        cost_usd: stats.cost_usd, sync_equivalent_usd: stats.sync_equivalent_usd, saved_usd: stats.saved_usd,
      }, true);
    }
  }

  // ---- KPIs ------------------------------------------------------------

  function drawKPIs(stats, snap) {
    if (stats) {
      $("kpi-paid").textContent = fmtUSD(stats.cost_usd);
      $("kpi-would").textContent = fmtUSD(stats.sync_equivalent_usd);
      $("kpi-saved").textContent = fmtUSD(stats.saved_usd);
      $("kpi-saved-note").textContent = (stats.saved_percent || 0).toFixed(1) + "% of the sync price";
      $("kpi-paid-note").textContent = stats.unpriced_requests
        ? "+ " + plural(stats.unpriced_requests, "unpriced request", "unpriced requests")
        : "at list prices";
      $("kpi-paid-note").title = stats.unpriced_requests ? "requests of models missing from the price table: tokens counted, cost unknown" : "";
      const calls = (stats.sync_calls || 0) + (stats.batched_calls || 0);
      $("kpi-calls").textContent = fmtInt(calls);
      const bp = calls ? (100 * stats.batched_calls) / calls : 0;
      const bar = $("kpi-split");
      bar.children[0].style.width = bp + "%";
      bar.children[1].style.width = (calls ? 100 - bp : 0) + "%";
      $("kpi-calls-note").textContent = fmtInt(stats.batched_calls) + " batched · " + fmtInt(stats.sync_calls) + " sync";
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

  function render() {
    const { stats, snap } = last;
    drawKPIs(stats, snap);
    drawSavings($("chart-savings"), snap);
    drawDonut($("chart-donut"), stats);
    drawTraffic($("chart-traffic"), snap);
    drawQueue($("chart-queue"), snap);
    drawTurnaround($("chart-turnaround"), $("legend-turnaround"), snap);
    drawInFlight($("inflight"), snap);
    drawMisses($("misses"), stats);
    drawModels($("models"), stats);
  }

  function setStatus(ok, text) {
    const el = $("status");
    el.classList.toggle("live", ok);
    el.classList.toggle("down", !ok);
    $("status-text").textContent = text;
  }

  async function getJSON(url) {
    const r = await fetch(url, { cache: "no-store", headers: { accept: "application/json" } });
    if (!r.ok) throw new Error(url + ": HTTP " + r.status);
    return r.json();
  }

  async function poll() {
    try {
      const [stats, snap] = await Promise.all([getJSON("v1/stats"), getJSON("v1/dashboard")]);
      last = { stats, snap };
      lastOK = Date.now();
      render();
      setStatus(true, "live · updated " + fmtClock(Date.now(), true));
    } catch (err) {
      setStatus(false, "cannot reach the proxy · retrying" + (lastOK ? " · figures of " + fmtClock(lastOK, true) : ""));
    } finally {
      setTimeout(poll, REFRESH_MS);
    }
  }

  let resizeTimer = 0;
  window.addEventListener("resize", () => {
    clearTimeout(resizeTimer);
    resizeTimer = setTimeout(render, 150);
  });

  render();
  poll();
})();
