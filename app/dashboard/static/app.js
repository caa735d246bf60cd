// The dashboard page: a copy of the server's window (a snapshot on each
// (re)connect of the event stream, then the changed points), charted with
// uPlot. Chart units: latencies in µs, FET in Gbit/s, FNR in %, gap in ms,
// time in unix seconds of the interval's start.
/* global uPlot */
"use strict";

const state = {
  intervals: [], // interval starts (unix ns, strings), ascending
  pairs: new Map(), // "host|target|op" -> Map(start -> point)
  flows: new Map(), // "src|dst|qp" -> Map(start -> point)
  switches: new Map(), // switch id -> Map(start -> point)
  alerts: [],
  status: null,
  dropped: null,
  bounds: null,
  connected: false,
  updates: 0,
};
const view = { pair: "", flow: "", start: "", window: 30 };

const $ = (id) => document.getElementById(id);
const secs = (start) => Number(BigInt(start) / 1000000n) / 1000;
const cmpStart = (a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);
const us = (ns) => (ns == null ? null : ns / 1e3);
const fmtNs = (ns) => (ns == null ? "–" : ns >= 1e6 ? `${(ns / 1e6).toFixed(2)} ms` : `${(ns / 1e3).toFixed(1)} µs`);
const fmtTime = (start) => new Date(Number(BigInt(start) / 1000000n)).toISOString().replace("T", " ").replace("Z", "");
const pairLabel = (k) => {
  const [h, t, op] = k.split("|");
  return `${h} → ${t} ${op}`;
};
const flowLabel = (k) => {
  const [s, d, qp] = k.split("|");
  return `${s} → ${d} qp ${qp}`;
};

// ---- state updates ----------------------------------------------------------

function upsert(all, key, point) {
  let m = all.get(key);
  if (!m) all.set(key, (m = new Map()));
  m.set(point.start, point);
  if (!state.intervals.includes(point.start)) {
    state.intervals.push(point.start);
    state.intervals.sort(cmpStart);
  }
}

function trim(oldest) {
  if (oldest == null) return;
  state.intervals = state.intervals.filter((s) => cmpStart(s, oldest) >= 0);
  for (const all of [state.pairs, state.flows, state.switches]) {
    for (const [k, m] of all) {
      for (const s of m.keys()) if (cmpStart(s, oldest) < 0) m.delete(s);
      if (m.size === 0) all.delete(k);
    }
  }
}

function applySnapshot(s) {
  state.intervals = s.intervals.slice();
  for (const [name, all] of [["pairs", state.pairs], ["flows", state.flows], ["switches", state.switches]]) {
    all.clear();
    for (const [k, points] of Object.entries(s[name])) all.set(k, new Map(points.map((p) => [p.start, p])));
  }
  state.alerts = s.alerts.slice();
  state.status = s.status;
  state.dropped = s.dropped;
  state.bounds = s.bounds;
  scheduleRender();
}

function applyUpdate(u) {
  for (const [k, p] of u.pairs) upsert(state.pairs, k, p);
  for (const [k, p] of u.flows) upsert(state.flows, k, p);
  for (const [k, p] of u.switches) upsert(state.switches, k, p);
  state.alerts.push(...u.alerts);
  if (state.bounds && state.alerts.length > state.bounds.alerts) state.alerts.splice(0, state.alerts.length - state.bounds.alerts);
  trim(u.oldest);
  state.updates++;
  scheduleRender();
}

function connect() {
  const es = new EventSource("/api/events");
  es.addEventListener("snapshot", (e) => applySnapshot(JSON.parse(e.data)));
  es.addEventListener("update", (e) => applyUpdate(JSON.parse(e.data)));
  es.addEventListener("status", (e) => {
    state.status = JSON.parse(e.data);
    renderStatus();
  });
  es.onopen = () => {
    state.connected = true;
    renderStatus();
  };
  // EventSource reconnects by itself (the server asks for 2 s); a closed one is made anew.
  es.onerror = () => {
    state.connected = false;
    renderStatus();
    if (es.readyState === EventSource.CLOSED) setTimeout(connect, 2000);
  };
}

// ---- selection (the URL's hash: #pair=…&flow=…&t=…) --------------------------

function readHash() {
  const h = new URLSearchParams(location.hash.slice(1));
  view.pair = h.get("pair") ?? view.pair;
  view.flow = h.get("flow") ?? view.flow;
  view.start = h.get("t") ?? "";
}

function writeHash() {
  const h = new URLSearchParams();
  if (view.pair) h.set("pair", view.pair);
  if (view.flow) h.set("flow", view.flow);
  if (view.start) h.set("t", view.start);
  history.replaceState(null, "", `#${h.toString()}`);
}

/** The pair series an alert is about: its pair, or the first pair of its host or target. */
function alertTarget(a) {
  if (a.scope === "flow") return { flow: a.scope_key };
  const keys = [...state.pairs.keys()].sort();
  const match = (k) => {
    const [h, t] = k.split("|");
    return a.scope === "pair" ? `${h}|${t}` === a.scope_key : a.scope === "host" ? h === a.scope_key : t === a.scope_key;
  };
  const hit = keys.filter(match);
  const same = view.pair && match(view.pair) ? view.pair : undefined;
  if (same) return { pair: same };
  // The series that has the alert's interval, reads first.
  const has = hit.filter((k) => state.pairs.get(k)?.has(a.interval_start_unix_ns));
  if (has.length) return { pair: has.find((k) => k.endsWith("|read")) ?? has[0] };
  if (hit.length) return { pair: hit.find((k) => k.endsWith("|read")) ?? hit[0] };
  if (a.scope === "pair") return { pair: `${a.scope_key}|read` };
  return null;
}

function alertHref(a) {
  const t = alertTarget(a);
  if (!t) return null;
  const h = new URLSearchParams();
  if (t.pair) h.set("pair", t.pair);
  else if (view.pair) h.set("pair", view.pair);
  if (t.flow) h.set("flow", t.flow);
  else if (view.flow) h.set("flow", view.flow);
  h.set("t", a.interval_start_unix_ns);
  return `#${h.toString()}`;
}

/** Alerts about the selected pair (by pair, host or target) or flow. */
function alertsFor(kind) {
  if (kind === "pair") {
    if (!view.pair) return [];
    const [h, t] = view.pair.split("|");
    return state.alerts.filter((a) => (a.scope === "pair" && a.scope_key === `${h}|${t}`) || (a.scope === "host" && a.scope_key === h) || (a.scope === "target" && a.scope_key === t));
  }
  return view.flow ? state.alerts.filter((a) => a.scope === "flow" && a.scope_key === view.flow) : [];
}

// ---- charts -------------------------------------------------------------------

/** Draws each alert of the chart's figure (alert-charts.js) as a vertical line at its interval, with its metric. */
function alertMarkers(kind, id) {
  return {
    hooks: {
      draw: (u) => {
        const { ctx } = u;
        const [lo, hi] = [u.scales.x.min, u.scales.x.max];
        ctx.save();
        ctx.font = `${10 * devicePixelRatio}px sans-serif`;
        let n = 0;
        // The metrics marked on this chart at its last draw (the page's checks read them).
        u.alertsDrawn = [];
        for (const a of alertsFor(kind).filter((x) => alertChart(x) === id)) {
          const x = secs(a.interval_start_unix_ns);
          if (x < lo || x > hi) continue;
          u.alertsDrawn.push(a.metric);
          const px = Math.round(u.valToPos(x, "x", true));
          ctx.strokeStyle = a.state === "raised" ? "#e74c3c" : "#27ae60";
          ctx.fillStyle = ctx.strokeStyle;
          ctx.lineWidth = 2 * devicePixelRatio;
          ctx.setLineDash(a.state === "raised" ? [] : [4, 3]);
          ctx.beginPath();
          ctx.moveTo(px, u.bbox.top);
          ctx.lineTo(px, u.bbox.top + u.bbox.height);
          ctx.stroke();
          ctx.fillText(`${a.state === "raised" ? "▲" : "▼"} ${a.metric}`, px + 3, u.bbox.top + 12 * devicePixelRatio * (1 + (n++ % 4)));
        }
        ctx.restore();
      },
    },
  };
}

function selectedMarker() {
  return {
    hooks: {
      draw: (u) => {
        if (!view.start) return;
        const x = secs(view.start);
        if (x < u.scales.x.min || x > u.scales.x.max) return;
        const px = Math.round(u.valToPos(x, "x", true));
        u.ctx.save();
        u.ctx.fillStyle = "rgba(52, 73, 94, 0.08)";
        u.ctx.fillRect(px - 6 * devicePixelRatio, u.bbox.top, 12 * devicePixelRatio, u.bbox.height);
        u.ctx.restore();
      },
    },
  };
}

const charts = {};

function makeChart(id, title, unit, series, kind) {
  const el = $(`chart-${id}`);
  const opts = {
    title,
    width: Math.max(400, el.clientWidth || 440),
    height: 200,
    scales: { x: { time: true } },
    axes: [{}, { label: unit, size: 60 }],
    series: [{}, ...series.map(([label, stroke, dash]) => ({ label, stroke, width: 1.5, dash, points: { show: true, size: 5 }, spanGaps: false }))],
    plugins: kind ? [alertMarkers(kind, id), selectedMarker()] : [selectedMarker()],
  };
  const u = new uPlot(opts, [[], ...series.map(() => [])], el);
  u.over.addEventListener("click", () => {
    const i = u.cursor.idx;
    if (i == null) return;
    const x = u.data[0][i];
    const start = windowStarts().find((s) => secs(s) === x);
    if (start) {
      view.start = start;
      writeHash();
      scheduleRender();
    }
  });
  charts[id] = u;
}

function initCharts() {
  const p50 = "#2980b9";
  const p99 = "#c0392b";
  // Dashed: the switch's data-plane histograms, every I/O it measured (also in summary mode, without records).
  makeChart("e2e", "e2e (compute side, else storage side)", "µs", [["p50", p50], ["p99", p99], ["p50 all I/Os", p50, [4, 4]], ["p99 all I/Os", p99, [4, 4]]], "pair");
  makeChart("rtt", "RTT — network", "µs", [["p50", p50], ["p99", p99]], "pair");
  makeChart("dal", "DAL — storage", "µs", [["p50", p50], ["p99", p99], ["p50 all I/Os", p50, [4, 4]], ["p99 all I/Os", p99, [4, 4]]], "pair");
  makeChart("dpl", "DPL — compute host (writes)", "µs", [["p50", p50], ["p99", p99], ["p50 all I/Os", p50, [4, 4]], ["p99 all I/Os", p99, [4, 4]]], "pair");
  makeChart("fct", "FCT", "µs", [["p50", p50], ["p99", p99]], "flow");
  makeChart("fet", "FET", "Gbit/s", [["p50", p50], ["p99", p99]], "flow");
  makeChart("fnr", "FNR (retransmitted / packets)", "%", [["FNR", "#8e44ad"]], "flow");
  makeChart("ecn", "ECN CE, and CNPs of the host pair", "packets", [["ECN CE", "#d35400"], ["pair CNP", "#16a085"]], "flow");
  makeChart("gap", "gap between messages", "ms", [["p50", p50], ["p99", p99]], "flow");
  makeChart("health", "switch health: added per interval, all switches", "count", [["digests lost", "#c0392b"], ["untracked I/Os", "#d35400"], ["untracked flows", "#f39c12"], ["parser errors", "#8e44ad"], ["bad digests", "#7f8c8d"]], null);
  window.addEventListener("resize", () => {
    for (const u of Object.values(charts)) u.setSize({ width: Math.max(400, u.root.parentElement.clientWidth || 440), height: 200 });
  });
}

/** The interval starts of the chosen window: the last N the page holds. */
function windowStarts() {
  return view.window > 0 ? state.intervals.slice(-view.window) : state.intervals;
}

function seriesData(points, fields) {
  const starts = windowStarts();
  return [starts.map(secs), ...fields.map((f) => starts.map((s) => {
    const p = points?.get(s);
    return p ? f(p) : null;
  }))];
}

// ---- rendering -----------------------------------------------------------------

let renderTimer = null;
function scheduleRender() {
  if (renderTimer == null) renderTimer = setTimeout(render, 100);
}

function fillSelect(sel, keys, label, current) {
  const want = keys.join("\n");
  if (sel.dataset.keys !== want) {
    sel.dataset.keys = want;
    sel.innerHTML = keys.map((k) => `<option value="${esc(k)}">${esc(label(k))}</option>`).join("");
  }
  if (current && keys.includes(current)) sel.value = current;
}

function render() {
  renderTimer = null;
  const pairKeys = [...state.pairs.keys()].sort();
  const flowKeys = [...state.flows.keys()].sort();
  if (!view.pair && pairKeys.length) view.pair = pairKeys[0];
  if (!view.flow && flowKeys.length) view.flow = flowKeys[0];
  fillSelect($("pair"), pairKeys, pairLabel, view.pair);
  fillSelect($("flow"), flowKeys, flowLabel, view.flow);

  const pair = state.pairs.get(view.pair);
  charts.e2e.setData(seriesData(pair, [(p) => us(p.e2e_p50), (p) => us(p.e2e_p99), (p) => us(p.dp_e2e_p50), (p) => us(p.dp_e2e_p99)]));
  charts.rtt.setData(seriesData(pair, [(p) => us(p.rtt_p50), (p) => us(p.rtt_p99)]));
  charts.dal.setData(seriesData(pair, [(p) => us(p.dal_p50), (p) => us(p.dal_p99), (p) => us(p.dp_dal_p50), (p) => us(p.dp_dal_p99)]));
  charts.dpl.setData(seriesData(pair, [(p) => us(p.dpl_p50), (p) => us(p.dpl_p99), (p) => us(p.dp_dpl_p50), (p) => us(p.dp_dpl_p99)]));
  const flow = state.flows.get(view.flow);
  charts.fct.setData(seriesData(flow, [(p) => us(p.fct_p50), (p) => us(p.fct_p99)]));
  charts.fet.setData(seriesData(flow, [(p) => (p.fet_p50 == null ? null : p.fet_p50 / 1e9), (p) => (p.fet_p99 == null ? null : p.fet_p99 / 1e9)]));
  charts.fnr.setData(seriesData(flow, [(p) => p.fnr * 100]));
  charts.ecn.setData(seriesData(flow, [(p) => p.ecn_ce_packets, (p) => p.cnp_packets]));
  charts.gap.setData(seriesData(flow, [(p) => (p.gap_p50 == null ? null : p.gap_p50 / 1e6), (p) => (p.gap_p99 == null ? null : p.gap_p99 / 1e6)]));
  const latestFlow = flow ? [...flow.values()].sort((a, b) => cmpStart(a.start, b.start)).pop() : undefined;
  $("flow-switch").textContent = latestFlow ? `as counted by ${latestFlow.switch_id} (the switch that saw the most of its messages)` : "";

  // The switches' figures are totals since their pipeline was loaded: charted as what each interval added.
  const summed = new Map();
  for (const [, d] of switchDeltas()) {
    for (const [start, x] of d) {
      const s = summed.get(start) ?? { lost: 0, uio: 0, uflow: 0, parser: 0, bad: 0 };
      for (const k of Object.keys(s)) s[k] += x[k];
      summed.set(start, s);
    }
  }
  charts.health.setData(seriesData(summed, [(s) => s.lost, (s) => s.uio, (s) => s.uflow, (s) => s.parser, (s) => s.bad]));

  renderBreakdown(pair);
  renderAlerts();
  renderHealth();
  renderStatus();
}

function renderBreakdown(pair) {
  const el = $("breakdown");
  if (!pair || pair.size === 0) {
    el.innerHTML = `<p class="hint">no storage I/O records yet</p>`;
    return;
  }
  const starts = [...pair.keys()].sort(cmpStart);
  const start = view.start && pair.has(view.start) ? view.start : starts[starts.length - 1];
  const p = pair.get(start);
  const storage = p.dal_mean ?? 0;
  const network = p.rtt_mean ?? 0;
  const compute = p.dpl_mean ?? 0;
  const e2e = p.e2e_mean ?? storage + network + compute;
  const other = Math.max(0, e2e - storage - network - compute);
  const total = Math.max(e2e, storage + network + compute) || 1;
  const seg = (cls, name, v) => (v > 0 ? `<div class="${cls}" style="width:${((100 * v) / total).toFixed(2)}%" title="${name}: ${fmtNs(v)}">${name} ${fmtNs(v)}</div>` : "");
  const row = (name, a, b) => `<tr><td>${name}</td><td class="num">${fmtNs(a)}</td><td class="num">${fmtNs(b)}</td></tr>`;
  el.innerHTML = `
    <h3 class="hint">Where did the time go — ${esc(pairLabel(view.pair))}, interval ${esc(fmtTime(start))} (${p.count} I/Os, ${p.incomplete} incomplete, ${p.errors} errors; switches ${esc(p.switches.join(", "))})</h3>
    <div class="bar" id="breakdown-bar">${seg("seg-storage", "storage (DAL)", storage)}${seg("seg-network", "network (RTT)", network)}${seg("seg-compute", "compute (DPL)", compute)}${seg("seg-other", "data transfer & rest", other)}</div>
    <p class="hint">means over the I/Os that have each figure (they add up; percentiles do not): e2e ${fmtNs(p.e2e_mean)}. DAL up → storage, RTT up → network, DPL up → compute host.</p>
    <table id="breakdown-table" data-start="${esc(start)}" style="max-width:420px"><thead><tr><th></th><th class="num">p50</th><th class="num">p99</th></tr></thead><tbody>
      ${row("e2e", p.e2e_p50, p.e2e_p99)}${row("RTT", p.rtt_p50, p.rtt_p99)}${row("DAL", p.dal_p50, p.dal_p99)}${row("DPL", p.dpl_p50, p.dpl_p99)}
    </tbody></table>`;
}

function renderAlerts() {
  const list = state.alerts.slice().reverse();
  $("alert-count").textContent = `${list.length} (${state.alerts.filter((a) => a.state === "raised").length} raised, newest first)`;
  const val = (a, v) => (a.metric.includes("_ns") ? fmtNs(v) : Number(v.toPrecision(4)));
  $("alert-list").innerHTML = list.map((a) => {
    const href = alertHref(a);
    const key = href ? `<a href="${esc(href)}" class="alert-link" data-section="${a.scope === "flow" ? "flows" : "storage"}">${esc(a.scope_key)}</a>` : esc(a.scope_key);
    return `<tr class="${a.state}" data-metric="${esc(a.metric)}" data-key="${esc(a.scope_key)}" data-state="${a.state}"><td>${esc(fmtTime(a.interval_start_unix_ns))}</td><td class="state">${a.state}</td><td>${esc(a.metric)}</td><td>${a.scope}</td><td>${key}</td><td class="num">${val(a, a.value)}</td><td class="num">${val(a, a.raise_threshold)} / ${val(a, a.clear_threshold)}</td><td>${esc(a.switch_id)}</td></tr>`;
  }).join("") || `<tr><td class="hint">no alert in the window</td></tr>`;
}

const HEALTH = { lost: "digests_lost", dup: "digests_duplicated", bad: "bad_digests", uio: "untracked_ios", uflow: "untracked_flows", parser: "parser_errors", late: "late_records", restarts: "switch_restarts" };

/** Per switch, per interval start: how much each total grew since the switch's previous interval (its first interval in the window: none). */
function switchDeltas() {
  const out = new Map();
  for (const [id, m] of state.switches) {
    const points = [...m.values()].sort((a, b) => cmpStart(a.start, b.start));
    const d = new Map();
    for (let i = 1; i < points.length; i++) {
      const x = {};
      // A total that went down: the switch restarted, and counts anew.
      for (const [k, f] of Object.entries(HEALTH)) x[k] = points[i][f] >= points[i - 1][f] ? points[i][f] - points[i - 1][f] : points[i][f];
      d.set(points[i].start, x);
    }
    out.set(id, d);
  }
  return out;
}

function renderHealth() {
  const deltas = switchDeltas();
  const rows = [...state.switches.entries()].sort(([a], [b]) => a.localeCompare(b)).map(([id, m]) => {
    const last = [...m.values()].sort((a, b) => cmpStart(a.start, b.start)).pop();
    const grew = {};
    for (const k of Object.keys(HEALTH)) grew[k] = 0;
    for (const x of deltas.get(id)?.values() ?? []) for (const k of Object.keys(HEALTH)) grew[k] += x[k];
    const c = (k) => `<td class="num${grew[k] ? " bad" : ""}" data-field="${HEALTH[k]}">${last[HEALTH[k]]}${grew[k] ? ` (+${grew[k]})` : ""}</td>`;
    return `<tr data-switch="${esc(id)}"><td>${esc(id)}</td><td class="num">${m.size}</td><td class="num">${last.digests_received}</td>${c("lost")}${c("dup")}${c("bad")}${c("uio")}${c("uflow")}${c("parser")}${c("late")}${c("restarts")}</tr>`;
  });
  $("health-list").innerHTML = rows.join("") || `<tr><td class="hint">no switch statistics yet</td></tr>`;
  const d = state.dropped;
  $("dropped").textContent = state.bounds
    ? `kept: the last ${state.bounds.intervals} intervals, ${state.bounds.pairSeries} pair and ${state.bounds.flowSeries} flow series, ${state.bounds.alerts} alerts` +
      (d && (d.tooOld || d.seriesEvicted || d.switchesRefused) ? `; left out: ${d.tooOld} records older than the window, ${d.seriesEvicted} series evicted, ${d.switchesRefused} switch records over the bound` : "")
    : "";
}

function renderStatus() {
  const s = state.status;
  $("live").className = `dot ${state.connected ? "live" : "down"}`;
  const page = state.connected ? "live" : "page reconnecting to the dashboard…";
  const src = s ? `${s.source}: ${s.state}${s.detail ? ` (${s.detail})` : ""}; ${s.records} records` + (s.undecodable ? `, ${s.undecodable} undecodable` : "") + (s.lastError && s.state !== "consuming" ? `; last error: ${s.lastError}` : "") : "";
  $("status-text").textContent = `${page} — ${src}`;
  $("status").dataset.state = s ? s.state : "";
}

// ---- start ------------------------------------------------------------------------

readHash();
$("window").addEventListener("change", (e) => {
  view.window = Number(e.target.value);
  scheduleRender();
});
view.window = Number($("window").value);
$("pair").addEventListener("change", (e) => {
  view.pair = e.target.value;
  writeHash();
  scheduleRender();
});
$("flow").addEventListener("change", (e) => {
  view.flow = e.target.value;
  writeHash();
  scheduleRender();
});
window.addEventListener("hashchange", () => {
  readHash();
  scheduleRender();
});
// An alert's link selects its pair or flow (the hash) and brings its charts into view.
$("alert-list").addEventListener("click", (e) => {
  const a = e.target.closest("a.alert-link");
  if (a) setTimeout(() => $(a.dataset.section).scrollIntoView({ block: "start" }), 0);
});
initCharts();
connect();
// For tests and the curious: the page's state and its charts.
window.dashboard = { state, view, charts };
