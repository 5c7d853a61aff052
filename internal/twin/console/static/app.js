// The seatsaga local console: a Step Functions console over the twin's API, drawn without any
// library. <html data-console-state> is "loading" while a view is fetched, "rendered" once it
// is drawn and "error" after any script error (the headless check reads it).
"use strict";

const root = document.documentElement;
const app = document.getElementById("app");
const crumbs = document.getElementById("crumbs");
const SVG = "http://www.w3.org/2000/svg";

function scriptError(message) {
  root.dataset.consoleState = "error";
  const box = document.getElementById("console-errors");
  box.hidden = false;
  box.appendChild(el("div", {}, "Script error: " + message));
}
window.addEventListener("error", (e) => scriptError(e.message || String(e)));
window.addEventListener("unhandledrejection", (e) => scriptError(String(e.reason && e.reason.stack || e.reason)));

// el builds an element; text children are text nodes, so nothing read is parsed as HTML.
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "class") node.className = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v === true ? "" : v);
  }
  append(node, children);
  return node;
}
function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) node.setAttribute(k, v);
  }
  append(node, children);
  return node;
}
function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
  }
}

// ApiError is an answer of the console's server that carries an error (Step Functions' code).
class ApiError extends Error {
  constructor(status, e) {
    super((e.operation ? e.operation + ": " : "") + e.code + ": " + e.message);
    this.status = status;
    this.code = e.code;
    this.operation = e.operation;
  }
}
async function api(path, options) {
  const resp = await fetch(path, options);
  const body = await resp.json();
  if (!resp.ok) throw new ApiError(resp.status, body.error || { code: String(resp.status), message: resp.statusText });
  return body;
}

function fmtDuration(ms) {
  if (ms === undefined || ms === null) return "";
  if (ms < 1000) return Math.round(ms) + " ms";
  if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 3 : 2) + " s";
  const m = Math.floor(ms / 60000);
  return m + " min " + Math.round((ms - m * 60000) / 1000) + " s";
}
function fmtElapsed(ms) {
  return (ms >= 0 ? "+" : "") + (ms / 1000).toFixed(3) + " s";
}
function fmtTime(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  return d.toISOString().replace("T", " ").replace("Z", " UTC");
}
function badge(status) {
  return el("span", { class: "badge status-" + String(status).toLowerCase() }, String(status).replace("_", " "));
}
function section(title, id, ...children) {
  return el("section", { class: "card", id }, el("h2", {}, title), ...children);
}
function pre(text, cls) {
  return el("pre", { class: cls || "json" }, text);
}
function setCrumbs(...parts) {
  crumbs.replaceChildren(...parts.flatMap((p, i) => (i ? [el("span", { class: "sep" }, "›"), p] : [p])));
}
function banner(err) {
  return el("div", { class: "banner error", "data-error-code": err.code || "error" }, err.message);
}

let machines = null;
async function stateMachines() {
  if (!machines) machines = (await api("/api/state-machines")).stateMachines;
  return machines;
}

function parseHash() {
  const h = location.hash.replace(/^#\/?/, "");
  const [path, query] = h.split("?");
  return { path, params: new URLSearchParams(query || "") };
}
function listHash(p) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(p)) if (v) q.set(k, v);
  return "#/executions?" + q.toString();
}

// tokens remembers the token of every page before the current one, for "Previous".
let tokens = [];

async function route() {
  root.dataset.consoleState = "loading";
  const { path, params } = parseHash();
  try {
    if (path.startsWith("execution/")) {
      await showExecution(decodeURIComponent(path.slice("execution/".length)));
    } else {
      await showExecutions(params);
    }
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    app.replaceChildren(banner(err));
    root.dataset.view = "error";
  }
  if (root.dataset.consoleState !== "error") root.dataset.consoleState = "rendered";
}
window.addEventListener("hashchange", () => route());
route();

async function showExecutions(params) {
  const list = await stateMachines();
  root.dataset.view = "executions";
  if (list.length === 0) {
    app.replaceChildren(el("p", { class: "muted" }, "No state machines."));
    return;
  }
  const sm = list.find((m) => m.stateMachineArn === params.get("sm")) || list[0];
  const status = params.get("status") || "";
  const name = params.get("name") || "";
  const token = params.get("token") || "";
  if (!token) tokens = [];
  setCrumbs(el("a", { href: "#/" }, "State machines"), el("span", {}, sm.name));
  const q = new URLSearchParams({ stateMachineArn: sm.stateMachineArn, pageSize: params.get("size") || "25" });
  if (status) q.set("status", status);
  if (name) q.set("name", name);
  if (token) q.set("nextToken", token);
  const page = await api("/api/executions?" + q.toString());

  const machinesCard = section("State machines", "state-machines",
    el("table", { class: "grid" },
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Type"), el("th", {}, "Created"))),
      el("tbody", {}, list.map((m) => el("tr", { class: m === sm ? "selected" : "" },
        el("td", {}, el("a", { href: listHash({ sm: m.stateMachineArn }) }, m.name)),
        el("td", {}, m.type), el("td", {}, fmtTime(m.creationDate)))))));

  const statusSelect = el("select", { id: "status-filter", "aria-label": "Status" },
    ["", "RUNNING", "SUCCEEDED", "FAILED", "TIMED_OUT", "ABORTED", "PENDING_REDRIVE"].map((s) =>
      el("option", { value: s, selected: s === status }, s ? s.replace("_", " ") : "Any status")));
  const nameInput = el("input", { id: "name-filter", type: "search", placeholder: "Name contains…", value: name });
  const go = (extra) => { location.hash = listHash(Object.assign({ sm: sm.stateMachineArn, status: statusSelect.value, name: nameInput.value.trim() }, extra)); };
  statusSelect.addEventListener("change", () => go({}));
  const filters = el("form", { class: "filters", onsubmit: (e) => { e.preventDefault(); go({}); } },
    statusSelect, nameInput, el("button", { type: "submit" }, "Filter"));

  const rows = page.executions.map((x) => el("tr", { "data-execution": x.name, "data-status": x.status },
    el("td", {}, el("a", { href: "#/execution/" + encodeURIComponent(x.executionArn), class: "execution-link" }, x.name)),
    el("td", {}, badge(x.status), x.redriveCount ? el("span", { class: "muted" }, " redriven ×" + x.redriveCount) : null),
    el("td", {}, fmtTime(x.startDate)), el("td", {}, fmtTime(x.stopDate)), el("td", { class: "num" }, fmtDuration(x.durationMs))));
  const prev = el("button", { type: "button", disabled: tokens.length === 0 && !token, onclick: () => {
    const before = tokens.pop() || "";
    go({ token: before });
  } }, "‹ Previous");
  const next = el("button", { type: "button", id: "next-page", disabled: !page.nextToken, onclick: () => {
    tokens.push(token);
    go({ token: page.nextToken });
  } }, "Next ›");
  const pager = el("div", { class: "pager" }, prev, el("span", { class: "muted" },
    "page " + (tokens.length + 1) + " · " + page.executions.length + " shown" +
    (page.scanned ? " · " + page.scanned + " ListExecutions pages read for the name filter" : "")), next);

  const execCard = section("Executions of " + sm.name, "executions", filters,
    rows.length ? el("table", { class: "grid", id: "executions-table" },
      el("thead", {}, el("tr", {}, el("th", {}, "Name"), el("th", {}, "Status"), el("th", {}, "Started"), el("th", {}, "Ended"), el("th", {}, "Duration"))),
      el("tbody", {}, rows)) : el("p", { class: "muted", id: "no-executions" }, "No executions match."),
    pager);
  root.dataset.executions = String(page.executions.length);
  app.replaceChildren(el("div", { class: "list-layout" }, machinesCard, execCard));
}

async function showExecution(arn) {
  const view = await api("/api/execution?arn=" + encodeURIComponent(arn));
  root.dataset.view = "execution";
  const x = view.execution;
  const smName = x.stateMachineArn.split(":").pop();
  setCrumbs(el("a", { href: "#/" }, "State machines"),
    el("a", { href: listHash({ sm: x.stateMachineArn }) }, smName), el("span", {}, x.name));

  const redriveResult = el("div", { id: "redrive-result" });
  const redrive = view.redrivable ? el("button", { type: "button", id: "redrive", class: "primary", onclick: async () => {
    redrive.disabled = true;
    redriveResult.replaceChildren(el("span", { class: "muted" }, "Redriving…"));
    try {
      const out = await api("/api/redrive", { method: "POST", headers: { "Content-Type": "application/json", "X-Seatsaga-Console": "1" },
        body: JSON.stringify({ executionArn: x.executionArn }) });
      root.dataset.redrive = "ok";
      redriveResult.replaceChildren(el("div", { class: "banner ok" }, "Redriven at " + fmtTime(out.redriveDate) + "; reloading…"));
      setTimeout(() => route(), 800);
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      root.dataset.redrive = "error";
      redriveResult.replaceChildren(banner(err));
      redrive.disabled = false;
    }
  } }, "Redrive") : null;

  const facts = [
    ["Status", badge(x.status)],
    ["Outcome", view.ending.finished ? el("span", { class: view.ending.needsPerson ? "needs-person" : "" },
      view.ending.outcome + (view.ending.needsPerson ? " — needs a person" : "")) : "running"],
    ["Started", fmtTime(x.startDate)],
    ["Ended", fmtTime(x.stopDate)],
    ["Duration", fmtDuration(x.durationMs)],
    ["State transitions", String(view.states.length)],
    ["Redrives", String(x.redriveCount || 0) + (x.redriveStatus ? " (" + x.redriveStatus.replace(/_/g, " ").toLowerCase() + ")" : "")],
  ];
  if (x.error) facts.push(["Error", el("code", {}, x.error)]);
  const cause = view.ending.cause || x.cause;
  const summary = el("section", { class: "card summary", id: "summary" },
    el("div", { class: "title-row" }, el("h1", {}, x.name), redrive),
    redriveResult,
    el("dl", { class: "facts" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    cause ? el("p", { class: "cause" }, el("strong", {}, "Cause "), cause) : null,
    el("div", { class: "io" },
      el("details", {}, el("summary", {}, "Execution input"), pre(x.input || "")),
      el("details", {}, el("summary", {}, "Execution output"), pre(x.output || "(none)"))),
    el("p", { class: "muted arn" }, x.executionArn));

  const stateDetail = el("div", { id: "state-detail", class: "muted" }, "Select a state on the graph to see its visits.");
  const graphCard = section("Graph", "graph-card",
    view.graph ? drawGraph(view, (name) => showState(view, name, stateDetail)) : banner({ message: "No graph: " + view.graphError }),
    legend(), stateDetail);

  const main = el("div", { class: "exec-main" }, graphCard, visitsTable(view), historyTable(view));
  const aside = el("aside", { class: "exec-aside" }, recordsCards(view.records));
  app.replaceChildren(summary, el("div", { class: "exec-layout" }, main, aside));
  root.dataset.events = String(view.events.length);
}

const legendItems = [["succeeded", "Succeeded"], ["caught", "Caught error"], ["failed", "Failed"], ["running", "In progress"], ["aborted", "Aborted"], ["notrun", "Not run"]];
function legend() {
  return el("div", { class: "legend" }, legendItems.map(([cls, text]) => el("span", { class: "key" }, el("i", { class: "swatch " + cls }), text)));
}

// wrap splits a state's name into at most two lines that fit its box.
function wrap(name, width) {
  const words = name.split(" ");
  const lines = [""];
  for (const w of words) {
    const cur = lines[lines.length - 1];
    if (!cur) lines[lines.length - 1] = w;
    else if ((cur + " " + w).length <= width) lines[lines.length - 1] = cur + " " + w;
    else lines.push(w);
  }
  if (lines.length > 2) lines.splice(1, lines.length - 1, lines.slice(1).join(" "));
  return lines.map((l) => (l.length > width + 2 ? l.slice(0, width) + "…" : l));
}

function edgePath(pts) {
  let d = "M" + pts[0][0] + " " + pts[0][1];
  for (let i = 1; i < pts.length; i++) {
    const [x0, y0] = pts[i - 1];
    const [x1, y1] = pts[i];
    const dy = (y1 - y0) / 2;
    d += " C" + x0 + " " + (y0 + dy) + " " + x1 + " " + (y1 - dy) + " " + x1 + " " + y1;
  }
  return d;
}

function drawGraph(view, onSelect) {
  const g = view.graph;
  const status = view.stateStatus || {};
  const taken = new Map((view.taken || []).map((t) => [t.from + "\u0000" + t.to, t.count]));
  const pic = svg("svg", { id: "graph", viewBox: "0 0 " + g.width + " " + g.height, width: g.width, height: g.height,
    role: "img", "aria-label": "state machine graph", "data-nodes": g.nodes.length });
  pic.appendChild(svg("defs", {},
    ["plain", "taken", "failed"].map((k) => svg("marker", { id: "arrow-" + k, viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse" }, svg("path", { d: "M0 0 L10 5 L0 10 z", class: "arrow " + k })))));
  const edges = svg("g", { class: "edges" });
  const hot = svg("g", { class: "edges taken" });
  for (const e of g.edges) {
    const count = taken.get(e.from + "\u0000" + e.to) || 0;
    const toFailed = status[e.to] === "failed";
    const kind = count ? (toFailed ? "failed" : "taken") : "plain";
    const path = svg("path", { d: edgePath(e.points), class: "edge " + e.kind + " " + kind + (e.back ? " back" : ""),
      "marker-end": "url(#arrow-" + kind + ")", "data-from": e.from, "data-to": e.to, "data-taken": count },
      svg("title", {}, e.from + " → " + e.to + (e.label ? " (" + e.label + ")" : "") + (count ? ", taken " + count + "×" : "")));
    (count ? hot : edges).appendChild(path);
    if (count > 1) {
      const [x, y] = e.points[Math.floor(e.points.length / 2)];
      hot.appendChild(svg("text", { x: x + 6, y: y - 4, class: "edge-count" }, "×" + count));
    }
  }
  pic.appendChild(edges);
  pic.appendChild(hot);
  for (const n of g.nodes) {
    const st = n.type === "Start" ? (view.states.length ? "succeeded" : "notrun") : status[n.name] || "notrun";
    const group = svg("g", { class: "node " + st + " type-" + n.type.toLowerCase() + (n.end ? " end" : ""), "data-state": n.name,
      "data-status": st, tabindex: 0 });
    const rx = n.type === "Start" ? n.h / 2 : n.type === "Choice" ? 14 : 6;
    group.appendChild(svg("rect", { x: n.x, y: n.y, width: n.w, height: n.h, rx }));
    const lines = wrap(n.name, 20);
    lines.forEach((line, i) => group.appendChild(svg("text", { x: n.x + n.w / 2,
      y: n.y + n.h / 2 + (i - (lines.length - 1) / 2) * 13 + 4, "text-anchor": "middle" }, line)));
    group.appendChild(svg("title", {}, n.name + " (" + n.type + ")" + (st !== "notrun" ? ": " + st : "")));
    if (n.type !== "Start") {
      group.addEventListener("click", () => onSelect(n.name));
      group.addEventListener("keydown", (e) => { if (e.key === "Enter") onSelect(n.name); });
    }
    pic.appendChild(group);
  }
  // The graph fits its pane's width at first; "Actual size" shows it unscaled, to scroll.
  pic.setAttribute("width", "100%");
  pic.removeAttribute("height");
  const zoom = el("button", { type: "button", class: "small zoom", onclick: () => {
    const fitted = pic.getAttribute("width") === "100%";
    pic.setAttribute("width", fitted ? g.width : "100%");
    zoom.textContent = fitted ? "Fit to pane" : "Actual size";
  } }, "Actual size");
  return [zoom, el("div", { class: "graph-scroll" }, pic)];
}

function showState(view, name, box) {
  for (const n of document.querySelectorAll("#graph .node")) n.classList.toggle("selected", n.dataset.state === name);
  const visits = view.states.filter((s) => s.name === name);
  const events = view.events.filter((e) => e.state === name && (e.input || e.output || e.error));
  box.className = "";
  box.replaceChildren(el("h3", {}, name),
    visits.length ? el("p", {}, visits.length + " visit" + (visits.length > 1 ? "s" : "") + ": " +
      visits.map((v) => v.status + " after " + fmtDuration(v.durationMs) + (v.attempts > 1 ? " in " + v.attempts + " attempts" : "")).join("; "))
      : el("p", { class: "muted" }, "Not entered by this execution."),
    events.map((e) => el("details", {}, el("summary", {}, "#" + e.id + " " + e.type),
      e.input ? [el("h4", {}, "Input"), pre(e.input)] : null,
      e.output ? [el("h4", {}, "Output"), pre(e.output)] : null,
      e.error ? [el("h4", {}, "Error"), pre(e.error + (e.cause ? "\n" + e.cause : ""), "error-text")] : null)));
}

function visitsTable(view) {
  return section("States entered", "visits", el("table", { class: "grid" },
    el("thead", {}, el("tr", {}, ["State", "Type", "Status", "Entered", "Duration", "Attempts", "Last error"].map((h) => el("th", {}, h)))),
    el("tbody", {}, view.states.map((s) => el("tr", { class: "visit " + s.status },
      el("td", {}, s.name), el("td", {}, s.type), el("td", {}, el("span", { class: "status-dot " + s.status }), s.status),
      el("td", { class: "num" }, fmtElapsed(s.enteredMs)), el("td", { class: "num" }, fmtDuration(s.durationMs)),
      el("td", { class: "num" + (s.attempts > 1 ? " retried" : "") }, s.attempts ? String(s.attempts) : ""),
      el("td", { class: "error-text" }, s.error || ""))))));
}

function eventClass(e) {
  if (/Failed|TimedOut|Aborted/.test(e.type)) return "bad";
  if (/Succeeded|Exited/.test(e.type)) return "good";
  return "";
}

function historyTable(view) {
  const body = el("tbody", {});
  for (const e of view.events) {
    const hasDetail = e.input || e.output || e.parameters || e.error || e.cause || e.details;
    const detail = hasDetail ? el("tr", { class: "event-detail", hidden: true }, el("td", { colspan: 7 },
      el("div", { class: "detail-grid" },
        e.parameters ? el("div", {}, el("h4", {}, "Parameters"), pre(e.parameters)) : null,
        e.input ? el("div", {}, el("h4", {}, "Input"), pre(e.input)) : null,
        e.output ? el("div", {}, el("h4", {}, "Output"), pre(e.output)) : null,
        e.error || e.cause ? el("div", {}, el("h4", {}, "Error"), pre((e.error || "") + (e.cause ? "\n" + e.cause : ""), "error-text")) : null,
        e.details ? el("div", {}, el("h4", {}, "Details"), pre(Object.keys(e.details).sort().map((k) => k + ": " + e.details[k]).join("\n"))) : null))) : null;
    const retry = e.attempt > 1 ? el("span", { class: "retry" }, "retry " + (e.attempt - 1) + (e.durationMs !== undefined ? " after " + fmtDuration(e.durationMs) : "")) : null;
    const row = el("tr", { class: "event " + eventClass(e) + (hasDetail ? " expandable" : ""), "data-event-type": e.type, "data-event-id": e.id,
      onclick: () => { if (detail) { detail.hidden = !detail.hidden; row.classList.toggle("open", !detail.hidden); } } },
      el("td", { class: "num" }, String(e.id)),
      el("td", {}, hasDetail ? el("span", { class: "chevron" }, "▸") : null, e.type),
      el("td", {}, e.state || ""),
      el("td", { class: "resource" }, e.resource ? e.resource.split(":").pop() : ""),
      el("td", { class: "num" }, fmtElapsed(e.elapsedMs)),
      el("td", { class: "num" }, retry || (e.durationMs !== undefined ? fmtDuration(e.durationMs) : "")),
      el("td", { class: "muted" }, e.timestamp.slice(11, 23)));
    body.appendChild(row);
    if (detail) body.appendChild(detail);
  }
  const expandAll = el("button", { type: "button", class: "small", onclick: () => {
    const rows = body.querySelectorAll("tr.event-detail");
    const open = Array.from(rows).some((r) => r.hidden);
    rows.forEach((r) => { r.hidden = !open; });
    body.querySelectorAll("tr.expandable").forEach((r) => r.classList.toggle("open", open));
  } }, "Expand all");
  return section("Events (" + view.events.length + ")", "history", el("p", { class: "muted" },
    "Click an event for its input, output and error. Duration is the time in the state on an exit, the attempt's on a task's outcome; a retry shows the backoff before it. ", expandAll),
    el("table", { class: "grid history" },
      el("thead", {}, el("tr", {}, ["ID", "Type", "State", "Resource", "Elapsed", "Duration", "Time (UTC)"].map((h) => el("th", {}, h)))),
      body));
}

function kv(fields) {
  return el("table", { class: "kv" }, el("tbody", {}, fields.map(([k, v]) => el("tr", {}, el("th", {}, k), el("td", {}, v)))));
}
function sectionError(text) {
  return text ? el("div", { class: "banner error" }, text) : null;
}

function recordsCards(r) {
  if (!r) return section("This system's records", "records", el("p", { class: "muted" }, "The console was started without access to the tables."));
  const reservation = section("Reservation item", "reservation-item", el("p", { class: "muted" }, r.reservationsTable),
    sectionError(r.reservationError),
    r.reservation && r.reservation.length ? kv(r.reservation) : el("p", { class: "muted" }, "None: the claim never wrote one."));
  const seats = section("Seat items", "seat-items", el("p", { class: "muted" }, r.seatsTable), sectionError(r.seatsError),
    r.seats.length ? r.seats.map((s) => el("div", { class: "seat" }, el("h4", {}, s.key),
      kv(s.fields.filter(([k]) => !["seatKey", "eventId", "seatId"].includes(k))))) : el("p", { class: "muted" }, "No seats named."));
  const outbox = section("Outbox events (" + r.outbox.length + ")", "outbox", sectionError(r.outboxError),
    r.outbox.map((e) => el("details", { class: "outbox-event" },
      el("summary", {}, el("span", { class: "version" }, "v" + e.version), " ", e.type, " ", el("span", { class: "muted" }, e.createdAt.slice(11, 23))),
      pre(e.payload))));
  let ledger = section("Provider ledger", "ledger", sectionError(r.ledgerError), el("p", { class: "muted" }, "No ledger."));
  if (r.ledger) {
    ledger = section("Provider ledger (" + r.ledger.entries.length + " PaymentIntents)", "ledger", sectionError(r.ledgerError),
      r.ledger.entries.map((e) => el("div", { class: "intent" }, el("h4", {}, e.paymentIntentId, " ", badge(e.status)),
        kv([["amount", e.amount + " " + e.currency], ["authorized", String(e.authorized)], ["captured", String(e.captured)],
          ["voided", String(e.voided)], ["refunded", String(e.refunded)],
          ["operations", e.captures + " captures, " + e.refunds + " refunds, " + e.declines + " declines"]]))),
      r.ledger.movements.length ? el("table", { class: "grid movements" },
        el("thead", {}, el("tr", {}, ["Time (UTC)", "Movement", "Amount", "PaymentIntent"].map((h) => el("th", {}, h)))),
        el("tbody", {}, r.ledger.movements.map((m) => el("tr", {}, el("td", {}, m.at.slice(11, 23)), el("td", {}, m.kind),
          el("td", { class: "num" }, m.amount + " " + m.currency), el("td", { class: "resource" }, m.paymentIntentId))))) : null);
  }
  return [el("h2", { class: "aside-title" }, "What only seatsaga knows"), reservation, seats, outbox, ledger];
}
