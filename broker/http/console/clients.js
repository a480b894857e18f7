// stompd web console, what ActiveMQ's console has beside the other files' pages: a
// queue's consumers and a destination's producers on its page, a queue's dispatch paused
// and resumed (QueueView.pause/resume), a durable topic subscriber created from a topic's
// page, connections grouped by connector, and the overview's sparklines drawn from the
// broker's history.  Uses app.js's helpers (api, el, num, plural, confirmDialog, ...).
"use strict";

// -- a destination's consumers and producers, a queue's dispatch ------------------------------

async function renderClients(d) {
  const topic = isTopic(d);
  $("queue-part").hidden = topic;
  $("producers-part").hidden = false;
  renderDispatch(d);
  const producers = api("GET", `${destPath(d.name)}/producers`);
  if (!topic) renderConsumers(d, await api("GET", `${destPath(d.name)}/consumers`));
  renderProducers(d, await producers);
}

function renderDispatch(d) {
  const queue = !isTopic(d);
  $("dispatch").hidden = !queue;
  if (!queue) return;
  $("dispatch").classList.toggle("paused", d.paused);
  $("dispatch-state").textContent = d.paused
    ? "Dispatch paused: messages sent here are kept, none is dispatched to a consumer until it is resumed (a restart resumes it too, as in ActiveMQ)."
    : "Dispatching to its consumers.";
  $("dest-pause").hidden = d.paused;
  $("dest-resume").hidden = !d.paused;
}

function renderConsumers(d, { consumers }) {
  const rows = consumers.map((c) =>
    el(
      "tr",
      { "data-consumer": `${c.connection} ${c.id}` },
      el("td", { class: "mono" }, c.connection),
      el("td", { class: "client" }, c.client_id || "–"),
      el("td", {}, c.id),
      el("td", { class: "mono selector" }, c.selector || "–"),
      el("td", {}, c.ack || "–"),
      el("td", { class: "num prefetch" }, num(c.prefetch)),
      el("td", { class: "num dispatched" }, num(c.delivered)),
      el("td", { class: "num in-flight" }, num(c.in_flight)),
      el("td", { class: "num pending" }, num(c.pending)),
    ),
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 9, class: "empty" }, `no consumers: what ${d.name} is sent waits`)));
  $("queue-consumers").tBodies[0].replaceChildren(...rows);
}

function renderProducers(d, { producers }) {
  const rows = producers.map((p) =>
    el(
      "tr",
      { "data-producer": p.id },
      el("td", { class: "mono" }, p.id),
      el("td", { class: "connector" }, connectorLabel(p)),
      el("td", {}, p.peer),
      el("td", {}, p.login || "–"),
      el("td", { class: "client" }, p.client_id || "–"),
      el("td", {}, when(p.connected_since)),
    ),
  );
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 6, class: "empty" }, `no open connection has sent to ${d.name}`)));
  $("dest-producers").tBodies[0].replaceChildren(...rows);
}

async function setDispatch(paused) {
  const name = state.current;
  if (paused && !(await confirmDialog(`Pause dispatch of ${name}? Messages sent to it are kept; none goes to a consumer until you resume it.`))) return;
  const out = $("op-result");
  try {
    const d = await api("POST", `${destPath(name)}/${paused ? "pause" : "resume"}`, {});
    showDone(out, paused ? `paused dispatch of ${d.name}` : `resumed dispatch of ${d.name}`);
    renderDispatch(d);
  } catch (error) {
    showError(out, error);
  }
  refresh();
}

// -- a durable topic subscriber made from a topic's page ---------------------------------------

async function createDurable(event) {
  event.preventDefault();
  const out = $("durable-result");
  const body = {
    destination: state.current,
    client_id: $("durable-client").value.trim(),
    name: $("durable-name").value.trim(),
    selector: $("durable-selector").value.trim() || null,
  };
  try {
    const made = await api("POST", "/subscriptions", body);
    $("durable-form").reset();
    showDone(out, `created durable subscription ${made.client_id}/${made.durable} on ${made.destination} (offline)`);
  } catch (error) {
    showError(out, error);
  }
  refresh();
}

// -- connections, grouped by connector -----------------------------------------------------

// A bridge's connection is listed apart: another broker's bridge to this one, or this
// broker's own bridges' side here.
const connectorLabel = (c) => (c.network !== null && c.network !== undefined ? `network bridge (${c.network})` : c.connector);

function renderGroups(table, connections, row, columns) {
  const groups = new Map();
  for (const c of connections) {
    const key = connectorLabel(c);
    if (!groups.has(key)) groups.set(key, []);
    groups.get(key).push(c);
  }
  const keys = [...groups.keys()].sort((a, b) => (a.startsWith("network") - b.startsWith("network")) || a.localeCompare(b));
  const bodies = keys.map((key) => {
    const members = groups.get(key);
    const transports = [...new Set(members.map((c) => c.transport))].join(", ");
    const head = el("tr", { class: "group", "data-group": key }, el("th", { colspan: columns }, `${key} (${transports}): ${plural(members.length, "connection")}`));
    return el("tbody", { "data-connector": key }, head, ...members.map(row));
  });
  if (!bodies.length) bodies.push(el("tbody", {}, el("tr", {}, el("td", { colspan: columns, class: "empty" }, "no connections"))));
  for (const old of [...table.tBodies]) old.remove();
  table.append(...bodies);
}

// -- the overview's sparklines: the broker's history of the rows shown ----------------------------

const SPARK_HISTORY_ROWS = 100; // rows whose history is loaded (the first shown)
const SPARK_RELOAD_MS = 60000; // a row's history is read again after this long
const SPARK_LOADS_AT_ONCE = 8;

const sparkPast = new Map(); // name -> {at, loading, samples: [{t (page clock), depth}]}

// The broker's samples of ``name`` older than ``before`` (page clock), oldest first.
function pastDepths(name, before) {
  const kept = sparkPast.get(name);
  return kept ? kept.samples.filter((s) => s.t < before) : [];
}

function loadSparkHistory(names) {
  const now = Date.now();
  let loading = [...sparkPast.values()].filter((k) => k.loading).length;
  for (const name of names.slice(0, SPARK_HISTORY_ROWS)) {
    if (loading >= SPARK_LOADS_AT_ONCE) break;
    const kept = sparkPast.get(name);
    if (kept && (kept.loading || now - kept.at < SPARK_RELOAD_MS)) continue;
    const entry = { at: now, loading: true, samples: kept ? kept.samples : [] };
    sparkPast.set(name, entry);
    loading += 1;
    api("GET", `${destPath(name)}/history`)
      .then((body) => {
        const offset = body.now - Date.now(); // the broker's clock less the page's
        entry.samples = body.samples.map((s) => ({ t: s.time - offset, depth: s.depth }));
        redrawSparkline(name);
      })
      .catch(() => {
        // Gone meanwhile, or the broker unreachable (the status line says so): live samples only.
      })
      .finally(() => {
        entry.loading = false;
      });
  }
  const shown = new Set(names);
  for (const name of sparkPast.keys()) if (!shown.has(name) && !state.history.has(name)) sparkPast.delete(name);
}

// The row's sparkline drawn again at once with what the broker kept (not at the next poll).
function redrawSparkline(name) {
  if (state.page !== "overview") return;
  for (const row of $("destinations").tBodies[0].rows) {
    if (row.dataset.dest === name) row.cells[row.cells.length - 1].replaceChildren(sparkline(name));
  }
}

// -- wiring ----------------------------------------------------------------------------------------

function setupClients() {
  $("dest-pause").addEventListener("click", () => setDispatch(true));
  $("dest-resume").addEventListener("click", () => setDispatch(false));
  $("durable-form").addEventListener("submit", createDurable);
}

document.addEventListener("DOMContentLoaded", setupClients);
