// stompd web console: a destination's page as its kind has it (loaded after app.js).
// A topic keeps nothing itself: its page lists whom it feeds, with what each is owed,
// and offers what applies to a topic: a durable subscription's backlog browsed or purged,
// an offline durable subscription deleted, the topic deleted.
"use strict";

const isTopic = (d) => d.kind === "topic" || d.kind === "temp-topic";

// A queue's messages out are those consumed; a topic's, those it dispatched.
const outCount = (d) => (isTopic(d) ? d.dispatched : d.dequeued);

const QUEUE_ONLY = ["op-form", "purge"];
const BROWSING = ["browse-heading", "browse-form", "browse-result"];

function showParts(ids, shown) {
  for (const id of ids) $(id).hidden = !shown;
}

function showKind(d) {
  const topic = isTopic(d);
  showParts(["topic-part"], topic);
  showParts(QUEUE_ONLY, !topic);
  // A topic's messages are its durable subscriptions': browsed once one is picked.
  showParts(BROWSING, !topic || state.browseBase !== null);
  showParts(["delete", "dest-links"], true);
  document.querySelector("#page-destination .chart-wrap").hidden = false;
  $("l-out").textContent = topic ? "dispatched/s" : "out/s";
}

// The page of a destination that does not exist: its name, and nothing of another's.
function renderMissing(name) {
  $("dest-title").textContent = `${name} (not found)`;
  $("dest-stats").replaceChildren(el("div", { class: "error" }, `${name} does not exist (any more)`));
  document.querySelector("#page-destination .chart-wrap").hidden = true;
  // Nothing to send to, pause or list: only the name and that it is not there.
  showParts(["topic-part", "delete", "dest-links", "dispatch", "queue-part", "producers-part", ...QUEUE_ONLY, ...BROWSING], false);
}

// Another destination's page is opened: nothing of this one's subscribers stays.
function leaveDestination() {
  state.browseBase = null;
  $("browse-heading").textContent = "Messages";
  $("subscribers").tBodies[0].replaceChildren();
}

const subPath = (s) => `/subscriptions/${encodeURIComponent(s.client_id)}/${encodeURIComponent(s.durable)}`;
const subName = (s) => `${s.client_id}/${s.durable}`;

const SUBSCRIBERS_SHOWN = 500;

function renderSubscribers(d, { subscribers, total }) {
  const rows = subscribers.map((s) => {
    const durable = s.durable !== null;
    const online = s.connection !== null;
    const actions = [];
    if (durable) {
      actions.push(el("button", { type: "button", class: "browse", onclick: () => browseDurable(s) }, "Browse"));
      actions.push(el("button", { type: "button", class: "purge", onclick: () => purgeDurable(s) }, "Purge…"));
      // Its subscriber must leave first: deleting it would pull the backlog from under it.
      if (!online) actions.push(el("button", { type: "button", class: "delete", onclick: () => deleteDurable(s) }, "Delete…"));
    }
    return el(
      "tr",
      { "data-sub": durable ? subName(s) : `${s.connection} ${s.id}`, class: online ? "online" : "offline" },
      el("td", { class: "mono connection" }, online ? s.connection : "offline"),
      el("td", { class: "client" }, s.client_id || "–"),
      el("td", { class: "name" }, durable ? `${s.durable} (durable)` : s.id),
      el("td", { class: "mono" }, s.selector || "–"),
      el("td", {}, s.ack || "–"),
      el("td", { class: "num owed" }, num(s.pending)),
      el("td", { class: "num" }, num(s.in_flight)),
      el("td", { class: "num" }, num(s.delivered)),
      el("td", { class: "num discarded" }, num(s.discarded)),
      el("td", { class: "actions" }, ...actions),
    );
  });
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 10, class: "empty" }, `no subscribers: what ${d.name} is sent goes nowhere`)));
  if (total > subscribers.length) {
    const more = `and ${num(total - subscribers.length)} more (stompd-admin subscriptions lists every one)`;
    rows.push(el("tr", { class: "more" }, el("td", { colspan: 10, class: "empty" }, more)));
  }
  $("subscribers").tBodies[0].replaceChildren(...rows);
}

function browseDurable(s) {
  state.browseBase = subPath(s);
  $("browse-heading").textContent = `Messages owed to durable subscription ${subName(s)}`;
  showParts(BROWSING, true);
  browse(null);
}

async function purgeDurable(s) {
  const question = `Purge durable subscription ${subName(s)}: remove the ${plural(s.pending, "message")} it is owed (not those its subscriber has in flight)? This cannot be undone.`;
  if (!(await confirmDialog(question))) return;
  runOperation(`${subPath(s)}/purge`, {});
}

async function deleteDurable(s) {
  const question = `Delete durable subscription ${subName(s)} (offline) and the ${plural(s.pending, "message")} it is owed? This cannot be undone.`;
  if (!(await confirmDialog(question))) return;
  try {
    const result = await api("DELETE", subPath(s));
    if (state.browseBase === subPath(s)) {
      leaveDestination();
      $("browse-result").replaceChildren();
      showParts(BROWSING, false);
    }
    showDone($("op-result"), `deleted durable subscription ${subName(s)} (${plural(result.removed, "message")} dropped)`);
  } catch (error) {
    showError($("op-result"), error);
  }
  refresh();
}
