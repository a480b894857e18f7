// stompd web console: plain JavaScript over the JSON API (/api/v1), no build step.
// The page polls every POLL_MS; depth and rates per destination are kept here, in a
// ring buffer of HISTORY samples, for the charts.
"use strict";

const API = "/api/v1";
const POLL_MS = 2000;
const HISTORY = 300; // 10 minutes at one sample every 2 s

const state = {
  history: new Map(), // name -> [{t, depth, enqueued, out, inRate, outRate}]
  destinations: [],
  page: "overview",
  current: null, // destination shown on its page
  browseCursor: null,
  browseNext: null,
  browseBase: null, // API path whose messages the browse form reads (null: the queue shown)
  timer: null,
};

// -- helpers --------------------------------------------------------------------------

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined) continue;
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function svg(tag, attrs) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
  return node;
}

function size(n) {
  if (n === null || n === undefined) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

function num(n) {
  return n === null || n === undefined ? "–" : Number(n).toLocaleString("en-US");
}

// "1 message", "5 messages": a count and its noun.
function plural(n, noun) {
  return `${num(n)} ${noun}${Number(n) === 1 ? "" : "s"}`;
}

function rate(r) {
  return r === null || r === undefined ? "–" : r.toFixed(1);
}

function when(seconds) {
  return seconds ? new Date(seconds * 1000).toLocaleString() : "–";
}

class ApiError extends Error {
  constructor(status, body) {
    super((body && body.error && body.error.message) || `HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

async function api(method, path, body) {
  const init = { method, headers: { Accept: "application/json" }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  // From location.origin: a page opened as http://user:pass@host/ has the credentials in
  // its own address, and fetch refuses any URL that carries them (relative ones too).
  let response;
  try {
    response = await fetch(location.origin + API + path, init);
  } catch (error) {
    throw new Error(`no answer from the broker at ${location.origin} (${error.message})`);
  }
  let payload = null;
  try {
    payload = await response.json();
  } catch (e) {
    payload = null;
  }
  if (!response.ok) throw new ApiError(response.status, payload);
  return payload;
}

const destPath = (name) => `/destinations/${encodeURIComponent(name)}`;

function setStatus(text, bad) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("bad", Boolean(bad));
}

// -- history and charts ---------------------------------------------------------------

function record(destinations, t) {
  const seen = new Set();
  for (const d of destinations) {
    seen.add(d.name);
    let samples = state.history.get(d.name);
    if (!samples) state.history.set(d.name, (samples = []));
    const last = samples[samples.length - 1];
    // A poll right after another (a page change polls at once) makes no rate of its own.
    if (last && t - last.t < 1000) continue;
    let inRate = null;
    let outRate = null;
    if (last) {
      const dt = (t - last.t) / 1000;
      if (dt > 0) {
        inRate = Math.max(d.enqueued - last.enqueued, 0) / dt;
        outRate = Math.max(outCount(d) - last.out, 0) / dt;
      }
    }
    samples.push({ t, depth: d.depth, enqueued: d.enqueued, out: outCount(d), inRate, outRate });
    if (samples.length > HISTORY) samples.shift();
  }
  for (const name of state.history.keys()) if (!seen.has(name)) state.history.delete(name);
}

// The overview's sparkline: the broker's last hour of depth (clients.js loads it for the
// rows shown), then what this page polled since, on one time axis ending now.
const SPARK_MIN_SPAN_MS = 10 * 60 * 1000;
const SPARK_MAX_SPAN_MS = 60 * 60 * 1000;

function sparkline(name) {
  const live = state.history.get(name) || [];
  const past = pastDepths(name, live.length ? live[0].t : Infinity);
  const samples = past.concat(live.map((s) => ({ t: s.t, depth: s.depth })));
  const now = Date.now();
  const first = samples.length ? samples[0].t : now;
  const span = Math.min(Math.max(now - first, SPARK_MIN_SPAN_MS), SPARK_MAX_SPAN_MS);
  const chart = svg("svg", { viewBox: "0 0 120 24", class: "spark", preserveAspectRatio: "none" });
  const shown = samples.filter((s) => s.t >= now - span);
  const max = Math.max(1, ...shown.map((s) => s.depth));
  const points = shown
    .map((s) => `${(120 - ((now - s.t) / span) * 120).toFixed(1)},${(24 - (s.depth / max) * 22 - 1).toFixed(1)}`)
    .join(" ");
  chart.append(svg("polyline", { points, class: "depth", fill: "none" }));
  const kept = shown.length - Math.min(live.length, shown.length);
  chart.dataset.historySamples = String(kept);
  const minutes = Math.round(span / 60000);
  chart.append(el("title", { text: `depth, max ${num(max)} over the last ${minutes} minutes (${plural(kept, "broker sample")}, then this page's)` }));
  return chart;
}

function drawChart(name) {
  // history.js: the broker's last hour, then what this page polls.
  const d = state.destinations.find((x) => x.name === name);
  if (d) historyChart(d);
}

// -- overview ---------------------------------------------------------------------------

function gauge(label, meter) {
  const pct = Math.min(meter.percent, 100);
  const bar = el("div", { class: "bar" });
  bar.style.width = `${pct}%`;
  bar.classList.toggle("warn", pct >= 70);
  bar.classList.toggle("full", pct >= 95);
  return el(
    "div",
    { class: "gauge", "data-gauge": label },
    el("div", { class: "gauge-label" }, `${label}: ${size(meter.used)} of ${size(meter.limit)} (${meter.percent.toFixed(1)}%)`),
    el("div", { class: "track" }, bar),
  );
}

function renderUsage(usage) {
  $("gauges").replaceChildren(
    gauge("memory", usage.memory),
    gauge("store", usage.store),
    gauge("temp", usage.temp),
    el(
      "div",
      { class: "counts" },
      `${usage.connections} connections · ${usage.destinations} destinations · ${usage.blocked_producers} blocked producers`,
    ),
  );
}

function latest(name) {
  const samples = state.history.get(name) || [];
  return samples[samples.length - 1] || {};
}

function renderDestinations() {
  const kind = $("kind-filter").value;
  const filter = $("name-filter").value.trim().toLowerCase();
  const rows = [];
  for (const d of state.destinations) {
    if (kind && d.kind !== kind) continue;
    if (filter && !d.name.toLowerCase().includes(filter)) continue;
    const sample = latest(d.name);
    const link = el("a", { href: `#/destination/${encodeURIComponent(d.name)}` }, d.name);
    rows.push(
      el(
        "tr",
        { "data-dest": d.name },
        el(
          "td",
          { class: "name" },
          link,
          d.temporary ? el("span", { class: "tag" }, "temp") : null,
          d.paused ? el("span", { class: "tag paused", title: "dispatch paused: messages are kept, none is dispatched" }, "paused") : null,
        ),
        el("td", { class: "num depth" }, num(d.depth)),
        el("td", { class: "num enqueued" }, num(d.enqueued)),
        el("td", { class: "num dequeued" }, num(d.dequeued)),
        el("td", { class: "num" }, num(d.in_flight)),
        el("td", { class: "num consumers" }, num(d.consumers)),
        el("td", { class: "num producers" }, num(d.producers)),
        el("td", { class: "num", title: `${d.memory_percent}% of ${size(d.memory_limit)}` }, size(d.memory_bytes)),
        el("td", { class: "num" }, num(d.disk_messages)),
        el("td", { class: "num" }, rate(sample.inRate)),
        el("td", { class: "num" }, rate(sample.outRate)),
        el("td", {}, sparkline(d.name)),
      ),
    );
  }
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 12, class: "empty" }, "no destinations")));
  $("destinations").tBodies[0].replaceChildren(...rows);
  loadSparkHistory(rows.map((row) => row.dataset.dest).filter(Boolean));
}

// -- one destination -------------------------------------------------------------------

function renderDestination(d) {
  $("dest-title").textContent = `${d.name} (${d.kind})`;
  showKind(d);
  const items = [
    ["depth", num(d.depth)],
    ["in memory", num(d.memory_messages)],
    ["on disk", num(d.disk_messages)],
    ["enqueued", num(d.enqueued)],
    ["dequeued", num(d.dequeued)],
    ["dispatched", num(d.dispatched)],
    ["in flight", num(d.in_flight)],
    ["expired", num(d.expired)],
    ["consumers", num(d.consumers)],
    ["producers", num(d.producers)],
    ["memory", `${size(d.memory_bytes)} (${d.memory_percent}%)`],
  ];
  $("dest-stats").replaceChildren(
    ...items.map(([k, v]) => el("div", { class: "stat", "data-stat": k }, el("span", { class: "k" }, k), el("span", { class: "v" }, v))),
  );
  drawChart(d.name);
}

function showError(target, error) {
  target.replaceChildren(el("div", { class: "error" }, error.message));
}

// A success says so where it happened, and takes away the errors earlier actions left.
function showDone(target, text) {
  clearErrors();
  target.replaceChildren(el("div", { class: "done" }, text));
}

function clearErrors() {
  for (const box of document.querySelectorAll("[data-result]")) if (box.querySelector(".error")) box.replaceChildren();
}

async function browse(cursor) {
  const name = state.current;
  const params = new URLSearchParams({ limit: $("browse-limit").value || "25" });
  // A topic's page browses the durable subscription picked in its subscribers' table.
  const base = state.browseBase || destPath(name);
  const selector = $("browse-selector").value.trim();
  if (selector) params.set("selector", selector);
  if (cursor) params.set("cursor", cursor);
  const out = $("browse-result");
  try {
    const page = await api("GET", `${base}/messages?${params}`);
    state.browseNext = page.next;
    $("browse-next").disabled = !page.next;
    clearErrors();
    if (!page.messages.length) {
      out.replaceChildren(el("p", { class: "empty" }, "no messages"));
      return;
    }
    const rows = page.messages.map((m) =>
      el(
        "tr",
        {},
        el("td", { class: "mono" }, el("a", { href: "#", "data-message": m.id, title: "show it whole" }, m.id)),
        el("td", { class: "num" }, m.priority),
        el("td", {}, m.persistent ? "yes" : "no"),
        el("td", {}, m.redelivered ? "yes" : "no"),
        el("td", {}, m.timestamp ? new Date(m.timestamp).toLocaleString() : "–"),
        el("td", { class: "mono headers" }, Object.entries(m.headers).map(([k, v]) => `${k}:${v}`).join("\n")),
        el("td", { class: "mono body" }, (m.body_encoding === "base64" ? "(base64) " : "") + m.body + (m.truncated ? "…" : ""), el("span", { class: "size" }, ` ${size(m.body_size)}`)),
      ),
    );
    const head = ["Message ID", "Priority", "Persistent", "Redelivered", "Timestamp", "Headers", "Body"];
    out.replaceChildren(
      el("table", { class: "messages" }, el("thead", {}, el("tr", {}, ...head.map((h) => el("th", {}, h)))), el("tbody", {}, ...rows)),
    );
  } catch (error) {
    $("browse-next").disabled = true;
    showError(out, error);
  }
}

function confirmDialog(text) {
  const dialog = $("confirm");
  $("confirm-text").textContent = text;
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => resolve(dialog.returnValue === "ok"), { once: true });
    dialog.showModal();
  });
}

const APPLIED = { move: "moved", copy: "copied", remove: "removed", purge: "removed" };

function describe(op) {
  const applied = APPLIED[op.kind];
  const parts = [`${op.kind} ${op.destination}${op.target ? " → " + op.target : ""}: ${op.state}`];
  parts.push(`scanned ${num(op.scanned)}${op.total ? " of " + num(op.total) : ""}`);
  parts.push(`matched ${num(op.matched)}`);
  if (applied) parts.push(`${applied} ${num(op[applied])}`);
  parts.push(`${(op.elapsed_ms / 1000).toFixed(1)} s`);
  return parts.join(", ");
}

async function runOperation(path, body) {
  const out = $("op-result");
  out.replaceChildren(el("div", { class: "progress" }, "starting…"));
  try {
    let op = await api("POST", path, { ...body, wait: 1 });
    while (op.state === "running") {
      out.replaceChildren(el("div", { class: "progress" }, describe(op)));
      op = await api("GET", `/operations/${op.id}?wait=1`);
    }
    if (op.state === "done") showDone(out, describe(op));
    else out.replaceChildren(el("div", { class: "error" }, op.error ? `${describe(op)}: ${op.error.message}` : describe(op)));
  } catch (error) {
    showError(out, error);
  }
  refresh();
}

async function submitOperation(event) {
  event.preventDefault();
  const name = state.current;
  const kind = $("op-kind").value;
  const selector = $("op-selector").value.trim() || null;
  const maxText = $("op-max").value.trim();
  const body = { selector };
  if (kind !== "count" && maxText) body.max = Number(maxText);
  let question = null;
  // "up to 1 message", "up to 5 messages", "every message".
  const which = maxText ? `up to ${plural(Number(maxText), "message")}` : "every message";
  if (kind === "move" || kind === "copy") {
    const target = $("op-target").value.trim();
    if (!target) {
      showError($("op-result"), new Error("name the target destination"));
      return;
    }
    body.to = target;
    question = `${kind} ${which}${selector ? " matching " + selector : ""} from ${name} to ${target}?`;
  } else if (kind === "remove") {
    question = `Remove ${which}${selector ? " matching " + selector : ""} from ${name}? This cannot be undone.`;
  }
  if (question && !(await confirmDialog(question))) return;
  runOperation(`${destPath(name)}/${kind}`, body);
}

async function purge() {
  const name = state.current;
  if (!(await confirmDialog(`Purge ${name}: remove every message not in flight? This cannot be undone.`))) return;
  runOperation(`${destPath(name)}/purge`, {});
}

async function deleteDestination() {
  const name = state.current;
  if (!(await confirmDialog(`Delete ${name} and every message it holds? This cannot be undone.`))) return;
  const out = $("op-result");
  try {
    const result = await api("DELETE", destPath(name));
    // The page of a destination that is gone has nothing left to show: back to the list.
    showDone($("overview-result"), `deleted ${result.deleted} (${plural(result.removed, "message")} dropped)`);
    location.hash = "#/";
  } catch (error) {
    showError(out, error);
  }
}

// -- connections -----------------------------------------------------------------------

async function closeConnection(id) {
  if (!(await confirmDialog(`Close connection ${id}? The client gets an ERROR frame.`))) return;
  try {
    await api("DELETE", `/connections/${encodeURIComponent(id)}`);
    showDone($("connections-result"), `closed ${id}`);
  } catch (error) {
    showError($("connections-result"), error);
  }
  refresh();
}

function renderConnections(connections, subscriptions) {
  const row = (c) =>
    el(
      "tr",
      { "data-connection": c.id },
      el("td", { class: "mono" }, el("a", { href: "#/connections", "data-show-connection": c.id }, c.id)),
      el("td", { class: "transport" }, c.transport),
      el("td", {}, c.peer),
      el("td", {}, c.login || "–"),
      el("td", {}, c.client_id || "–"),
      el("td", {}, c.version || "–"),
      el("td", { class: "num" }, num(c.subscriptions)),
      el("td", { class: "num" }, num(c.in_flight)),
      el("td", {}, when(c.connected_since)),
      el("td", {}, el("button", { type: "button", class: "close", onclick: () => closeConnection(c.id) }, "Close")),
    );
  // By connector, as ActiveMQ's console lists them: a <tbody> each (clients.js).
  renderGroups($("connections"), connections, row, 10);
  const subRows = subscriptions.map((s) =>
    el(
      "tr",
      {},
      el("td", { class: "mono" }, s.connection || "(offline)"),
      el("td", {}, s.id),
      el("td", {}, s.destination),
      el("td", {}, s.ack || "–"),
      el("td", { class: "mono" }, s.selector || "–"),
      el("td", {}, s.durable || "–"),
      el("td", { class: "num" }, num(s.in_flight)),
      el("td", { class: "num" }, num(s.pending)),
      el("td", { class: "num" }, num(s.delivered)),
    ),
  );
  if (!subRows.length) subRows.push(el("tr", {}, el("td", { colspan: 9, class: "empty" }, "no subscriptions")));
  $("subscriptions").tBodies[0].replaceChildren(...subRows);
}

// -- network bridges --------------------------------------------------------------------

function renderBridges(bridges) {
  const rows = bridges.map((b) =>
    el(
      "tr",
      { "data-bridge": `${b.connector} ${b.remote}`, class: b.state === "connected" ? "" : "down" },
      el("td", {}, b.connector),
      el("td", { class: "direction" }, `${b.direction}${b.duplex ? " (duplex)" : ""}`),
      el("td", { class: "mono" }, b.remote),
      el("td", {}, b.remote_broker || "–"),
      el("td", { class: "state" }, b.state),
      el("td", {}, b.connected_since ? when(b.connected_since) : "–"),
      el("td", { class: "num" }, num(b.forwarded)),
      el("td", { class: "num" }, num(b.received)),
      el("td", { class: "num" }, num(b.in_flight)),
      el("td", { class: "num" }, num(b.pending)),
      el("td", { class: "mono" }, b.forwarding.join(", ") || "–"),
      el("td", { class: "mono" }, b.pulling.join(", ") || "–"),
      el("td", {}, b.last_error || "–"),
    ),
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 13, class: "empty" }, "no network bridges (no <networkConnector>, and no other broker's duplex bridge to this one)")));
  $("bridges").tBodies[0].replaceChildren(...rows);
}

// -- scheduled messages ------------------------------------------------------------------

const SCHEDULED_SHOWN = 500;

async function removeJob(id) {
  if (!(await confirmDialog(`Remove scheduled job ${id}? A cron job never fires again. This cannot be undone.`))) return;
  const out = $("scheduled-result");
  try {
    await api("DELETE", `/scheduled/${encodeURIComponent(id)}`);
    showDone(out, `removed ${id}`);
  } catch (error) {
    showError(out, error);
  }
  refresh();
}

async function removeAllJobs() {
  if (!(await confirmDialog("Remove every scheduled job? This cannot be undone."))) return;
  const out = $("scheduled-result");
  try {
    const result = await api("DELETE", "/scheduled");
    showDone(out, `removed ${plural(result.removed, "scheduled job")}`);
  } catch (error) {
    showError(out, error);
  }
  refresh();
}

function renderScheduled(page) {
  const rows = page.jobs.map((j) =>
    el(
      "tr",
      { "data-job": j.id },
      el("td", { class: "mono" }, j.id),
      el("td", {}, j.destination),
      el("td", {}, new Date(j.next_due).toLocaleString()),
      el("td", { class: "mono" }, j.cron || "–"),
      el("td", { class: "num" }, j.delay ? num(j.delay) : "–"),
      el("td", { class: "num" }, j.period ? num(j.period) : "–"),
      el("td", { class: "num" }, j.repeat ? `${num(j.repeats_left)} of ${num(j.repeat)}` : "–"),
      el("td", { class: "mono headers" }, Object.entries(j.headers).map(([k, v]) => `${k}:${v}`).join("\n")),
      el("td", { class: "mono body" }, (j.body_encoding === "base64" ? "(base64) " : "") + j.body + (j.truncated ? "…" : "")),
      el("td", {}, el("button", { type: "button", class: "remove", onclick: () => removeJob(j.id) }, "Remove")),
    ),
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 10, class: "empty" }, "no scheduled messages")));
  $("scheduled").tBodies[0].replaceChildren(...rows);
  $("scheduled-count").textContent = page.next ? `${num(page.jobs.length)}+ scheduled jobs` : plural(page.jobs.length, "scheduled job");
}

// -- polling and routing ---------------------------------------------------------------

async function refresh() {
  try {
    const [list, usage] = await Promise.all([api("GET", "/destinations"), api("GET", "/usage")]);
    state.destinations = list.destinations;
    record(list.destinations, Date.now());
    if (state.page === "overview") {
      renderUsage(usage);
      renderDestinations();
    } else if (state.page === "destination") {
      const d = list.destinations.find((x) => x.name === state.current);
      if (d) {
        renderDestination(d);
        if (isTopic(d)) renderSubscribers(d, await api("GET", `${destPath(d.name)}/subscribers?limit=${SUBSCRIBERS_SHOWN}`));
        await renderClients(d);
      } else {
        renderMissing(state.current);
      }
    } else if (state.page === "connections") {
      const [connections, subscriptions] = await Promise.all([api("GET", "/connections"), api("GET", "/subscriptions")]);
      renderConnections(connections.connections, subscriptions.subscriptions);
    } else if (state.page === "network") {
      renderBridges((await api("GET", "/network")).bridges);
    } else if (state.page === "scheduled") {
      renderScheduled(await api("GET", `/scheduled?limit=${SCHEDULED_SHOWN}&preview=64`));
    }
    setStatus(`updated ${new Date().toLocaleTimeString()}`);
    document.body.classList.remove("stale");
  } catch (error) {
    // What is on the page is from the last answer: dimmed, beside what went wrong.
    document.body.classList.add("stale");
    setStatus(error.message, true);
  }
}

// Another destination's page: nothing typed for the last one's stays to act on this one
// (a Move with the last page's selector and target), and nothing of its list.
function resetDestinationForms() {
  $("op-form").reset();
  $("op-target-label").hidden = false; // the reset picks "Move to", which takes a target
  $("browse-selector").value = "";
  state.browseNext = null;
  $("message-view").hidden = true;
  $("message-view").replaceChildren();
}

function route() {
  const hash = location.hash || "#/";
  let page = "overview";
  if (hash.startsWith("#/destination/")) {
    page = "destination";
    const name = decodeURIComponent(hash.slice("#/destination/".length));
    if (name !== state.current) {
      state.current = name;
      $("browse-result").replaceChildren();
      $("op-result").replaceChildren();
      $("browse-next").disabled = true;
      resetDestinationForms();
      leaveDestination();
    }
  } else if (hash.startsWith("#/connections")) {
    page = "connections";
  } else if (hash.startsWith("#/network")) {
    page = "network";
  } else if (hash.startsWith("#/scheduled")) {
    page = "scheduled";
  } else if (hash.startsWith("#/send")) {
    page = "send";
  }
  state.page = page;
  for (const section of document.querySelectorAll(".page")) section.hidden = section.id !== `page-${page}`;
  for (const link of document.querySelectorAll("[data-nav]")) link.classList.toggle("active", link.dataset.nav === page);
  refresh();
}

function setup() {
  window.addEventListener("hashchange", route);
  $("kind-filter").addEventListener("change", renderDestinations);
  $("name-filter").addEventListener("input", renderDestinations);
  $("create-form").addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      const created = await api("POST", "/destinations", { name: $("create-name").value.trim() });
      $("create-name").value = "";
      showDone($("overview-result"), `created ${created.name}`);
      refresh();
    } catch (error) {
      showError($("overview-result"), error);
    }
  });
  $("browse-form").addEventListener("submit", (event) => {
    event.preventDefault();
    browse(null);
  });
  $("browse-next").addEventListener("click", () => browse(state.browseNext));
  $("op-kind").addEventListener("change", () => {
    const kind = $("op-kind").value;
    $("op-target-label").hidden = !(kind === "move" || kind === "copy");
  });
  $("op-form").addEventListener("submit", submitOperation);
  $("purge").addEventListener("click", purge);
  $("delete").addEventListener("click", deleteDestination);
  $("scheduled-remove-all").addEventListener("click", removeAllJobs);
  route();
  state.timer = setInterval(refresh, POLL_MS);
}

document.addEventListener("DOMContentLoaded", setup);
