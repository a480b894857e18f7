// stompd web console, what ActiveMQ's console has beside app.js's pages: sending a
// message, one message whole (delete, move, retry a dead letter), a connection's
// producers and consumers, sorting any table by any column, and the broker's name,
// version and uptime.  It uses app.js's helpers (api, el, confirmDialog, ...).
"use strict";

// -- the broker -------------------------------------------------------------------------

const BROKER_POLL_MS = 5000;

function duration(seconds) {
  const s = Math.floor(seconds);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d ${h}h ${m}m`;
  if (h) return `${h}h ${m}m`;
  if (m) return `${m}m ${s % 60}s`;
  return `${s % 60}s`;
}

async function showBroker() {
  const out = $("broker-info");
  try {
    const info = await api("GET", "/broker");
    // Its part in a shared-store pair, as /health says it (a standby serves no console).
    const role = info.pair ? `${info.role} of a pair` : info.role;
    out.textContent = `${info.name} · stompd ${info.version} · up ${duration(info.uptime)} · ${role}`;
    out.title = `started ${new Date(info.started * 1000).toLocaleString()}${
      info.pair ? `; ${info.role} of a shared-store pair since ${new Date(info.role_since * 1000).toLocaleString()}` : "; not one of a shared-store pair"
    }`;
    out.dataset.role = info.role;
  } catch (error) {
    // app.js's status line says the broker is unreachable; this keeps what it knew.
  }
}

// -- sending ------------------------------------------------------------------------------

function parseHeaders(text) {
  const headers = {};
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const colon = line.indexOf(":");
    if (colon <= 0) throw new Error(`a header is "name: value", not "${line.trim()}"`);
    headers[line.slice(0, colon).trim()] = line.slice(colon + 1).trim();
  }
  return headers;
}

async function submitSend(event) {
  event.preventDefault();
  const out = $("send-result");
  const destination = $("send-dest").value.trim();
  const count = Number($("send-count").value || "1");
  let body;
  try {
    body = { headers: parseHeaders($("send-headers").value), body: $("send-body").value, persistent: $("send-persistent").checked };
  } catch (error) {
    showError(out, error);
    return;
  }
  const priority = $("send-priority").value.trim();
  if (priority) body.priority = Number(priority);
  const delay = $("send-delay").value.trim();
  if (delay) body.delay = Number(delay);
  out.replaceChildren(el("div", { class: "progress" }, "sending…"));
  let sent = 0;
  try {
    for (; sent < count; sent += 1) await api("POST", `${destPath(destination)}/messages`, body);
    const later = body.delay ? `, due in ${num(body.delay)} ms` : "";
    const link = el("a", { href: `#/destination/${encodeURIComponent(destination)}` }, destination);
    out.replaceChildren(el("div", { class: "done" }, `sent ${plural(sent, "message")} to `, link, later));
  } catch (error) {
    showError(out, new Error(sent ? `${error.message} (after ${sent} sent)` : error.message));
  }
}

function followRoute() {
  const hash = location.hash || "#/";
  if (hash.startsWith("#/send/")) {
    $("send-dest").value = decodeURIComponent(hash.slice("#/send/".length));
  } else if (hash.startsWith("#/destination/")) {
    $("dest-send").href = `#/send/${hash.slice("#/destination/".length)}`;
    $("message-view").hidden = true;
  }
  if (!hash.startsWith("#/connections")) showConnection(null);
}

// -- one message ---------------------------------------------------------------------------

const messagePath = (name, id) => `${destPath(name)}/messages/${encodeURIComponent(id)}`;

async function showMessage(id) {
  const view = $("message-view");
  const name = state.current;
  view.hidden = false;
  view.replaceChildren(el("div", { class: "progress" }, `reading ${id}…`));
  revealMessage(view);
  let m;
  try {
    m = await api("GET", messagePath(name, id));
  } catch (error) {
    showError(view, error);
    return;
  }
  const headers = Object.entries(m.headers).map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", { class: "mono" }, v)));
  const facts = [
    ["message-id", m.id],
    ["priority", m.priority],
    ["persistent", m.persistent ? "yes" : "no"],
    ["redelivered", m.redelivered ? "yes" : "no"],
    ["timestamp", m.timestamp ? new Date(m.timestamp).toLocaleString() : "–"],
    ["expires", m.expires ? new Date(m.expires).toLocaleString() : "never"],
    ["body", size(m.body_size) + (m.body_encoding === "base64" ? " (binary, shown as base64)" : "")],
  ].map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", { class: "mono" }, String(v))));
  const target = el("input", { id: "message-move-to", placeholder: "/queue/other", "aria-label": "queue to move or copy it to" });
  const actions = el(
    "div",
    { class: "message-actions" },
    el("button", { type: "button", id: "message-delete", onclick: () => deleteMessage(m.id) }, "Delete…"),
    el(
      "span",
      {},
      target,
      el("button", { type: "button", id: "message-move", onclick: () => moveMessage(m.id, target.value.trim()) }, "Move…"),
      el("button", { type: "button", id: "message-copy", onclick: () => copyMessage(m.id, target.value.trim()) }, "Copy…"),
    ),
  );
  const original = m.headers["original-destination"];
  if (original) {
    actions.append(el("button", { type: "button", id: "message-retry", onclick: () => retryMessage(m.id, original) }, `Retry to ${original}…`));
  }
  view.replaceChildren(
    el("h3", {}, `Message ${m.id}`, el("button", { type: "button", class: "close-view", title: "close", onclick: () => (view.hidden = true) }, "×")),
    el("table", { class: "message-facts" }, el("tbody", {}, ...facts, el("tr", { class: "section" }, el("th", { colspan: 2 }, "Headers")), ...headers)),
    el("pre", { class: "message-body mono", id: "message-body" }, m.body),
    actions,
    el("div", { id: "message-result", role: "status" }),
  );
  revealMessage(view);
}

// The view opens below the list it was picked from: brought into sight, and the focus
// moved to it (a keyboard user, a screen reader, lands on the message).
function revealMessage(view) {
  view.scrollIntoView({ block: "start" });
  view.focus({ preventScroll: true });
}

async function messageAction(question, method, path, body, done) {
  if (!(await confirmDialog(question))) return;
  try {
    const result = await api(method, path, body);
    $("message-view").replaceChildren(el("div", { class: "done" }, done(result)));
    browse(null);
  } catch (error) {
    showError($("message-result"), error);
  }
  refresh();
}

function deleteMessage(id) {
  const name = state.current;
  messageAction(`Delete message ${id} from ${name}? This cannot be undone.`, "DELETE", messagePath(name, id), undefined, () => `deleted ${id} from ${name}`);
}

function moveMessage(id, target) {
  const name = state.current;
  if (!target) {
    showError($("message-result"), new Error("name the queue to move it to"));
    return;
  }
  messageAction(`Move message ${id} from ${name} to ${target}?`, "POST", `${messagePath(name, id)}/move`, { to: target }, (r) => `moved ${id} to ${r.target}`);
}

function copyMessage(id, target) {
  const name = state.current;
  if (!target) {
    showError($("message-result"), new Error("name the queue to copy it to"));
    return;
  }
  messageAction(`Copy message ${id} from ${name} to ${target}? The original stays on ${name}.`, "POST", `${messagePath(name, id)}/copy`, { to: target }, (r) => `copied ${id} to ${r.target}`);
}

function retryMessage(id, original) {
  const name = state.current;
  messageAction(`Retry message ${id}: move it from ${name} back to ${original}?`, "POST", `${messagePath(name, id)}/retry`, {}, (r) => `retried ${id}: back on ${r.target}`);
}

// -- a connection's producers and consumers ---------------------------------------------------

let shownConnection = null;

function showConnection(id) {
  shownConnection = id;
  const panel = $("connection-detail");
  panel.hidden = id === null;
  if (id !== null) loadConnection();
}

async function loadConnection() {
  const id = shownConnection;
  if (id === null || state.page !== "connections") return;
  const panel = $("connection-detail");
  let c;
  try {
    c = await api("GET", `/connections/${encodeURIComponent(id)}`);
  } catch (error) {
    if (id === shownConnection) showError(panel, error);
    return;
  }
  if (id !== shownConnection) return;
  const producers = c.producer_list.map((name) => el("tr", {}, el("td", {}, el("a", { href: `#/destination/${encodeURIComponent(name)}` }, name))));
  if (!producers.length) producers.push(el("tr", {}, el("td", { class: "empty" }, "it has sent nothing")));
  const consumers = c.subscription_list.map((s) =>
    el(
      "tr",
      {},
      el("td", {}, s.id),
      el("td", {}, s.destination),
      el("td", {}, s.ack || "–"),
      el("td", { class: "mono" }, s.selector || "–"),
      el("td", { class: "num" }, num(s.prefetch)),
      el("td", { class: "num" }, num(s.in_flight)),
      el("td", { class: "num" }, num(s.delivered)),
    ),
  );
  if (!consumers.length) consumers.push(el("tr", {}, el("td", { colspan: 7, class: "empty" }, "no consumers")));
  const head = (...names) => el("thead", {}, el("tr", {}, ...names.map(([n, cls]) => el("th", { class: cls }, n))));
  panel.replaceChildren(
    el("h3", {}, `Connection ${c.id} (${c.login || "no login"}${c.client_id ? ", client-id " + c.client_id : ""}; on ${connectorLabel(c)}, ${c.transport})`, el("button", { type: "button", class: "close-view", title: "close", onclick: () => showConnection(null) }, "×")),
    el("h4", {}, "Producers"),
    el("table", { id: "connection-producers" }, head(["Destination"]), el("tbody", {}, ...producers)),
    el("h4", {}, "Consumers"),
    el(
      "table",
      { id: "connection-consumers" },
      head(["ID"], ["Destination"], ["Ack"], ["Selector"], ["Prefetch", "num"], ["In flight", "num"], ["Delivered", "num"]),
      el("tbody", {}, ...consumers),
    ),
  );
}

// -- sorting any table by any column ---------------------------------------------------------

const sorting = new Map(); // a table's key -> {index, dir}
const UNITS = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };

const tableKey = (table) => table.id || table.className;

function sortValue(cell, numeric) {
  const text = cell ? (cell.dataset.sort ?? cell.textContent.trim()) : "";
  if (numeric) {
    // "1,234", "2.5 KiB", "3 of 5"; "–" (nothing) sorts first.
    const match = /^(-?[\d,]*\.?\d+)\s*(B|KiB|MiB|GiB|TiB)?/.exec(text);
    return match ? Number(match[1].replace(/,/g, "")) * (UNITS[match[2]] || 1) : -Infinity;
  }
  return text;
}

function compareText(a, b) {
  // Dates as the page writes them sort as times, anything else as text with numbers in it.
  if (/\d[/:.-]\d/.test(a) && /\d[/:.-]\d/.test(b)) {
    const ta = Date.parse(a);
    const tb = Date.parse(b);
    if (!Number.isNaN(ta) && !Number.isNaN(tb)) return ta - tb;
  }
  return a.localeCompare(b, undefined, { numeric: true });
}

function sortTable(table) {
  const order = sorting.get(tableKey(table));
  if (!order || !table.tBodies.length) return;
  const heading = table.tHead && table.tHead.rows[0] ? table.tHead.rows[0].cells[order.index] : null;
  for (const th of table.tHead ? table.tHead.rows[0].cells : []) {
    th.classList.toggle("sorted-asc", th === heading && order.dir > 0);
    th.classList.toggle("sorted-desc", th === heading && order.dir < 0);
    if (th === heading) th.setAttribute("aria-sort", order.dir > 0 ? "ascending" : "descending");
    else th.removeAttribute("aria-sort");
  }
  const numeric = Boolean(heading && heading.classList.contains("num"));
  // Each <tbody> on its own (the connections' groups), under its group's heading row.
  for (const body of table.tBodies) {
    const rows = [...body.rows].filter((row) => !row.classList.contains("group"));
    // A lone "no destinations" row, or a table still being filled: nothing to order.
    if (rows.length < 2 || rows.some((row) => row.cells.length === 1 && row.cells[0].colSpan > 1)) continue;
    const keyed = rows.map((row, at) => ({ row, at, value: sortValue(row.cells[order.index], numeric) }));
    keyed.sort((x, y) => {
      const c = numeric ? x.value - y.value : compareText(x.value, y.value);
      return c ? c * order.dir : x.at - y.at;
    });
    if (keyed.every((k, i) => k.row === rows[i])) continue;
    body.append(...keyed.map((k) => k.row));
  }
}

function onHeadingClick(event) {
  const th = event.target.closest("thead th");
  if (!th) return;
  const table = th.closest("table");
  const key = tableKey(table);
  const current = sorting.get(key);
  const dir = current && current.index === th.cellIndex ? -current.dir : 1;
  sorting.set(key, { index: th.cellIndex, dir });
  sortTable(table);
}

function resortChanged(mutations) {
  const tables = new Set();
  for (const mutation of mutations) {
    const table = mutation.target.closest ? mutation.target.closest("table") : null;
    if (table) tables.add(table);
    for (const node of mutation.addedNodes) {
      if (node.nodeType !== Node.ELEMENT_NODE) continue;
      if (node.matches("table")) tables.add(node);
      for (const inner of node.querySelectorAll("table")) tables.add(inner);
    }
  }
  for (const table of tables) if (sorting.has(tableKey(table))) sortTable(table);
}

// -- wiring -------------------------------------------------------------------------------------

function setupActions() {
  $("send-form").addEventListener("submit", submitSend);
  window.addEventListener("hashchange", followRoute);
  followRoute();
  document.addEventListener("click", (event) => {
    const message = event.target.closest("a[data-message]");
    if (message) {
      event.preventDefault();
      showMessage(message.dataset.message);
      return;
    }
    const connection = event.target.closest("a[data-show-connection]");
    if (connection) {
      event.preventDefault();
      showConnection(connection.dataset.showConnection);
      return;
    }
    onHeadingClick(event);
  });
  new MutationObserver(resortChanged).observe(document.querySelector("main"), { childList: true, subtree: true });
  showBroker();
  setInterval(showBroker, BROKER_POLL_MS);
  setInterval(loadConnection, POLL_MS);
}

document.addEventListener("DOMContentLoaded", setupActions);
