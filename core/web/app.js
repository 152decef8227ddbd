// The dashboard's script (docs/dashboard.md): polls /api/stats and the selected queue's rows,
// and posts requeue and purge with the page's CSRF token. No framework, nothing fetched from
// elsewhere.
"use strict";

const csrf = document.querySelector('meta[name="tabq-csrf"]').content;
const PERIOD_MS = 2000;
let selected = null; // {table, queue, dead_in, in_work}
let lastStats = null;

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

function count(n) { return n === null || n === undefined ? "-" : String(n); }

function age(ms) {
  if (ms === null || ms < 0) return "-";
  if (ms < 120000) return Math.floor(ms / 1000) + "s";
  if (ms < 7200000) return Math.floor(ms / 60000) + "m";
  if (ms < 172800000) return Math.floor(ms / 3600000) + "h";
  return Math.floor(ms / 86400000) + "d";
}

function when(us) {
  if (us === null || us < 0) return "-";
  return new Date(us / 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

function status(text, error) {
  const s = document.getElementById("status");
  s.textContent = text;
  s.className = error ? "status error" : "status";
}

async function getJSON(url) {
  const r = await fetch(url, {cache: "no-store"});
  const body = await r.text();
  if (!r.ok) throw new Error(body.trim() || r.status + " " + r.statusText);
  return JSON.parse(body);
}

function key(q) { return q.table + "\u0000" + (q.queue === null ? "" : q.queue); }

function renderQueues(stats) {
  document.getElementById("app").textContent = stats.app + " on " + stats.dialect;
  const body = document.querySelector("#queues tbody");
  body.replaceChildren();
  for (const q of stats.queues) {
    const tr = el("tr", {"data-table": q.table, "data-queue": q.queue === null ? "" : q.queue});
    if (selected && key(selected) === key(q)) tr.className = "selected";
    tr.append(el("td", {}, q.table), el("td", {}, q.queue === null ? "(all)" : q.queue));
    for (const f of ["due", "delayed", "in_work", "processed", "dead"]) {
      const td = el("td", {"class": "n", "data-field": f}, count(q[f]));
      if (f === "dead" && q.dead > 0) td.className = "n warn";
      tr.append(td);
    }
    tr.append(el("td", {"class": "n", "data-field": "oldest_due",
                        "data-ms": String(q.oldest_due_ms)}, age(q.oldest_due_ms)));
    const hist = Object.entries(q.attempts).map(([a, n]) => a + ":" + n).join(" ");
    tr.append(el("td", {"data-field": "attempts"}, hist || "-"));
    tr.addEventListener("click", () => select(q));
    body.append(tr);
  }
}

function payloadCell(r) {
  let text = r.payload === null ? "(row mode)" : r.payload;
  if (r.payload_len > r.payload_shown) text += " … (" + r.payload_len + " bytes)";
  return el("td", {"class": "payload", "title": text}, text);
}

function renderRows(kind, rows, error) {
  const body = document.querySelector("#rows-" + kind + " tbody");
  const label = document.getElementById("count-" + kind);
  body.replaceChildren();
  if (error) {
    label.textContent = "(" + error + ")";
    return;
  }
  label.textContent = rows.length ? "(" + rows.length + " shown)" : "(none)";
  for (const r of rows) {
    const tr = el("tr", {"data-id": r.id});
    tr.append(el("td", {}, r.id), el("td", {"class": "n"}, count(r.attempt)));
    if (kind === "due") {
      tr.append(el("td", {"class": "n"}, String(r.priority)), el("td", {}, when(r.retry_after_us)));
    } else if (kind === "in_work") {
      tr.append(el("td", {}, when(r.locked_until_us)));
    } else {
      tr.append(el("td", {}, when(r.retry_after_us)));
    }
    tr.append(payloadCell(r));
    body.append(tr);
  }
}

async function refreshRows() {
  if (!selected) return;
  const q = selected;
  const base = "api/rows?table=" + encodeURIComponent(q.table) +
               (q.queue === null ? "" : "&queue=" + encodeURIComponent(q.queue)) + "&kind=";
  const kinds = [["due", true], ["in_work", q.in_work !== null], ["dead", q.dead_in !== null]];
  for (const [kind, readable] of kinds) {
    if (!readable) {
      renderRows(kind, null, kind === "dead" ? "no dead letter" : "held by locks no query sees");
      continue;
    }
    try {
      renderRows(kind, (await getJSON(base + kind)).rows);
    } catch (e) {
      renderRows(kind, null, e.message);
    }
  }
}

function select(q) {
  selected = q;
  location.hash = encodeURIComponent(q.table) + "/" + encodeURIComponent(q.queue || "");
  document.getElementById("detail").hidden = false;
  document.getElementById("detail-name").textContent =
      q.table + " / " + (q.queue === null ? "(all)" : q.queue);
  const requeue = document.getElementById("requeue");
  requeue.disabled = q.dead_in === null;
  requeue.dataset.queue = q.queue === null ? "" : q.queue;
  requeue.textContent = q.dead_in === null ? "No dead letter" :
      "Requeue " + count(q.dead) + " dead letters (" + q.dead_in + ")";
  if (lastStats) renderQueues(lastStats);
  refreshRows();
}

async function refresh() {
  try {
    const stats = await getJSON("api/stats");
    lastStats = stats;
    if (selected) {
      const same = stats.queues.find(q => key(q) === key(selected));
      if (same) selected = same;
    } else if (location.hash.length > 1) {
      const [t, q] = location.hash.slice(1).split("/").map(decodeURIComponent);
      const found = stats.queues.find(x => x.table === t && (x.queue || "") === q);
      if (found) select(found);
    }
    renderQueues(stats);
    if (selected) select(selected);
    status("read " + new Date(stats.time_us / 1000).toLocaleTimeString());
  } catch (e) {
    status(e.message, true);
  }
}

// A writing action: the first click asks, a second within four seconds does it.
function twoStep(button, run) {
  let armed = null;
  button.addEventListener("click", async () => {
    if (!armed) {
      button.dataset.label = button.textContent;
      button.textContent = "Click again to confirm";
      button.classList.add("confirm");
      armed = setTimeout(() => {
        armed = null;
        button.textContent = button.dataset.label;
        button.classList.remove("confirm");
      }, 4000);
      return;
    }
    clearTimeout(armed);
    armed = null;
    button.classList.remove("confirm");
    button.textContent = button.dataset.label;
    const result = document.getElementById("action-result");
    try {
      result.textContent = await run();
    } catch (e) {
      result.textContent = e.message;
    }
    refresh();
  });
}

async function post(url, fields) {
  const body = new URLSearchParams(Object.assign({csrf: csrf}, fields));
  const r = await fetch(url, {method: "POST", body: body});
  const text = await r.text();
  if (!r.ok) throw new Error(text.trim());
  return JSON.parse(text);
}

twoStep(document.getElementById("requeue"), async () => {
  // tabq_admin_requeue: the dead letters of every subscription reading this queue.
  const r = await post("api/requeue", selected.queue === null ? {} : {queue: selected.queue});
  return "moved " + r.moved + " dead letters back into " + (selected.queue || "their queues");
});

twoStep(document.getElementById("purge"), async () => {
  const r = await post("api/purge", {older_than_s: document.getElementById("purge-age").value});
  return "deleted " + r.processed + " processed rows and " + r.dead_letters + " dead letters";
});

refresh();
setInterval(refresh, PERIOD_MS);
