// stompd web console: a destination's chart, from the broker's history, then live.
// The broker keeps each destination's last hour, a sample every 10 s
// (GET /api/v1/destinations/{name}/history); the page draws that first, then appends
// what each poll reads. Depth has the left axis, in/s and out/s the right one; the
// time axis is the broker's clock. Uses app.js's helpers ($, el, svg, num, api, destPath).
"use strict";

const CHART = {
  height: 220,
  left: 58, // room for the depth axis labels
  right: 64, // and the rate axis labels
  top: 12,
  bottom: 28, // the time labels
  minSpanMs: 5 * 60 * 1000, // the time axis shows at least 5 minutes
  maxSpanMs: 60 * 60 * 1000, // and at most the hour the broker keeps
  minLiveGapMs: 1000, // two polls closer than this make no rate (a page change polls at once)
  reloadAfterMs: 15000, // not drawn for this long: the page was elsewhere, load the history again
};
const TIME_STEPS_MIN = [1, 2, 5, 10, 15, 30, 60];

const chart = {
  name: null, // the destination the samples are of
  past: [], // from the broker: {t, depth, inRate, outRate}, t on the broker's clock
  live: [], // from the page's polls: {t, depth, inRate, outRate}, t on the page's clock
  base: null, // the last poll rates were taken from: {t, enqueued, out}
  offset: 0, // the broker's clock less the page's (ms)
  loaded: false,
  error: null,
  drawnAt: 0, // when the chart was last drawn from a poll (page clock)
};

// A topic's out is what it dispatched to subscribers (it dequeues nothing of its own).
const outCounter = (d) => (d.kind.endsWith("topic") ? d.dispatched : d.dequeued);

async function loadHistory(name) {
  try {
    const body = await api("GET", `${destPath(name)}/history`);
    if (chart.name !== name) return; // the page moved on meanwhile
    chart.offset = body.now - Date.now();
    chart.past = body.samples.map((s) => ({ t: s.time, depth: s.depth, inRate: s.in_rate, outRate: s.out_rate }));
    chart.loaded = true;
    chart.error = null;
  } catch (error) {
    if (chart.name === name) chart.error = error;
  }
  const d = state.destinations.find((x) => x.name === name);
  if (d && chart.name === name && state.page === "destination") drawHistory(d);
}

// One poll's reading of ``d``: a live sample (its rates from the poll before, if that
// was long enough ago to make a rate of).
function liveSample(d) {
  const now = Date.now();
  const out = outCounter(d);
  const base = chart.base;
  if (base && now - base.t < CHART.minLiveGapMs) return;
  let inRate = null;
  let outRate = null;
  if (base) {
    const dt = (now - base.t) / 1000;
    inRate = Math.max(d.enqueued - base.enqueued, 0) / dt;
    outRate = out === null || base.out === null ? null : Math.max(out - base.out, 0) / dt;
  }
  chart.base = { t: now, enqueued: d.enqueued, out };
  chart.live.push({ t: now, depth: d.depth, inRate, outRate });
  const oldest = now - CHART.maxSpanMs;
  while (chart.live.length && chart.live[0].t < oldest) chart.live.shift();
}

function historyChart(d) {
  const now = Date.now();
  // Another destination, or this one again after the page was elsewhere: what the
  // broker kept meanwhile comes first again.
  if (chart.name !== d.name || now - chart.drawnAt > CHART.reloadAfterMs) {
    Object.assign(chart, { name: d.name, past: [], live: [], base: null, offset: 0, loaded: false, error: null });
    loadHistory(d.name);
  }
  chart.drawnAt = now;
  liveSample(d);
  drawHistory(d);
}

// 1, 2 or 5 times a power of ten: at least ``value`` / 4, so four steps reach ``value``.
function niceStep(value) {
  const rough = Math.max(value, 1e-9) / 4;
  const power = 10 ** Math.floor(Math.log10(rough));
  for (const m of [1, 2, 5, 10]) if (m * power >= rough) return m * power;
  return 10 * power;
}

function clock(t) {
  const at = new Date(t);
  return `${String(at.getHours()).padStart(2, "0")}:${String(at.getMinutes()).padStart(2, "0")}`;
}

function rateLabel(r) {
  return `${r >= 100 || Number.isInteger(r) ? num(Math.round(r)) : r.toFixed(r >= 1 ? 1 : 2)}/s`;
}

// The samples as the broker's clock has them: the broker's, then the page's newer ones.
function merged() {
  const past = chart.past;
  const newest = past.length ? past[past.length - 1].t : -Infinity;
  const live = chart.live.map((s) => ({ ...s, t: s.t + chart.offset })).filter((s) => s.t > newest);
  return past.concat(live);
}

// Polylines of ``key``, broken where there is no value or where samples are missing.
function lines(samples, key, x, y, cls) {
  const out = [];
  let points = [];
  let last = null;
  const flush = () => {
    if (points.length) out.push(svg("polyline", { points: points.join(" "), class: cls, fill: "none" }));
    points = [];
  };
  for (const s of samples) {
    const value = s[key];
    const gap = last !== null && s.t - last > 25000; // more than two 10 s samples missing
    if (value === null || value === undefined || gap) flush();
    if (value !== null && value !== undefined) points.push(`${x(s.t).toFixed(1)},${y(value).toFixed(1)}`);
    last = s.t;
  }
  flush();
  return out;
}

function drawHistory(d) {
  const node = $("dest-chart");
  const width = Math.max(Math.round(node.getBoundingClientRect().width) || 720, 360);
  const height = CHART.height;
  node.setAttribute("viewBox", `0 0 ${width} ${height}`);
  node.setAttribute("preserveAspectRatio", "xMidYMid meet");
  node.classList.add("history");
  const samples = merged();
  const end = Date.now() + chart.offset;
  const first = samples.length ? samples[0].t - 10000 : end;
  const span = Math.min(Math.max(end - first, CHART.minSpanMs), CHART.maxSpanMs);
  const start = end - span;
  const shown = samples.filter((s) => s.t >= start);
  const plotW = width - CHART.left - CHART.right;
  const plotH = height - CHART.top - CHART.bottom;
  const x = (t) => CHART.left + ((t - start) / span) * plotW;
  const depthStep = Math.max(1, niceStep(Math.max(...shown.map((s) => s.depth), 0))); // whole messages
  const rateStep = niceStep(Math.max(1, ...shown.map((s) => Math.max(s.inRate || 0, s.outRate || 0))));
  const yDepth = (v) => CHART.top + plotH - (v / (4 * depthStep)) * plotH;
  const yRate = (v) => CHART.top + plotH - (v / (4 * rateStep)) * plotH;
  const parts = [];
  // Gridlines and labels: four steps up each axis, the same lines for both.
  for (let i = 0; i <= 4; i += 1) {
    const y = CHART.top + plotH - (i / 4) * plotH;
    parts.push(svg("line", { x1: CHART.left, x2: CHART.left + plotW, y1: y, y2: y, class: i ? "grid" : "axis" }));
    const depthText = svg("text", { x: CHART.left - 6, y: y + 4, class: "tick depth-tick", "text-anchor": "end" });
    depthText.textContent = num(i * depthStep);
    const rateText = svg("text", { x: CHART.left + plotW + 6, y: y + 4, class: "tick rate-tick", "text-anchor": "start" });
    rateText.textContent = rateLabel(i * rateStep);
    parts.push(depthText, rateText);
  }
  // The time axis: a gridline and a label each whole step of minutes.
  const stepMin = TIME_STEPS_MIN.find((m) => span / (m * 60000) <= 6) || 60;
  const stepMs = stepMin * 60000;
  const zone = new Date(start).getTimezoneOffset() * 60000;
  for (let t = Math.ceil((start - zone) / stepMs) * stepMs + zone; t <= end; t += stepMs) {
    const xt = x(t);
    parts.push(svg("line", { x1: xt, x2: xt, y1: CHART.top, y2: CHART.top + plotH, class: "grid" }));
    const label = svg("text", { x: xt, y: height - 8, class: "tick time-tick", "text-anchor": "middle" });
    label.textContent = clock(t);
    parts.push(label);
  }
  const depthTitle = svg("text", { x: 12, y: CHART.top + plotH / 2, class: "axis-title l-depth", transform: `rotate(-90 12 ${CHART.top + plotH / 2})`, "text-anchor": "middle" });
  depthTitle.textContent = "depth";
  const rateTitle = svg("text", { x: width - 10, y: CHART.top + plotH / 2, class: "axis-title", transform: `rotate(90 ${width - 10} ${CHART.top + plotH / 2})`, "text-anchor": "middle" });
  rateTitle.textContent = "messages/s";
  parts.push(depthTitle, rateTitle);
  parts.push(...lines(shown, "depth", x, yDepth, "depth"));
  parts.push(...lines(shown, "inRate", x, yRate, "in"));
  parts.push(...lines(shown, "outRate", x, yRate, "out"));
  node.replaceChildren(...parts);
  node.dataset.historySamples = String(chart.past.filter((s) => s.t >= start).length);
  node.dataset.liveSamples = String(shown.length - Number(node.dataset.historySamples));
  const kept = chart.error
    ? `history unavailable: ${chart.error.message}`
    : chart.loaded
      ? `${chart.past.length ? `broker history from ${clock(chart.past[0].t)} (a sample every 10 s)` : "no broker history yet (sampled every 10 s once the destination is used)"}, then live every 2 s`
      : "loading history…";
  $("dest-chart-scale").textContent = `depth: left axis; ${d.kind.endsWith("topic") ? "in/s and dispatched/s" : "in/s and out/s"}: right axis; ${kept}`;
}
