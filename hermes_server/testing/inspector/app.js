// The hermes-server inspector (serve --fixture-api). Plain script, no build step.
// The key comes from the URL fragment (#key=..., never sent to the server) or the form, and is
// sent only as `Authorization: Bearer`; without it the page shows no data. Every value from the
// server is put in the page as text (textContent), never as markup.
"use strict";

const POLL_MS = 1000;
const SVG = "http://www.w3.org/2000/svg";

function keyFromFragment() {
  const params = new URLSearchParams(location.hash.replace(/^#/, ""));
  return params.get("key") || "";
}

let key = keyFromFragment();

function fragment() { return key ? "#key=" + encodeURIComponent(key) : ""; }

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name === "class") node.className = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}

function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : String(child));
  return node;
}

class HttpError extends Error {
  constructor(status, body) { super("HTTP " + status); this.status = status; this.body = body; }
}

async function api(path) {
  const headers = key ? { Authorization: "Bearer " + key } : {};
  const response = await fetch(path, { headers, cache: "no-store", credentials: "omit" });
  const body = await response.json().catch(() => null);
  if (!response.ok) throw new HttpError(response.status, body);
  return body;
}

function setStatus(text) { document.getElementById("status").textContent = text; }

// One time format on the whole page: UTC, 24-hour, labelled (the server's clock may be a fixture's,
// so a local clock beside it would mislead).
function when(seconds) {
  if (typeof seconds !== "number") return "";
  return new Date(seconds * 1000).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

// A journal time, in a column headed "time (UTC)": to the millisecond, the date left out.
function clockTime(seconds) {
  return new Date(seconds * 1000).toISOString().slice(11, 23);
}

function short(text, n) {
  text = text === null || text === undefined ? "" : String(text);
  return text.length > n ? text.slice(0, n - 1) + "…" : text;
}

function shown(value) {
  if (value === null || value === undefined) return "";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}

function sessionLink(id, label) {
  return el("a", { href: "/_fixture/ui/sessions/" + encodeURIComponent(id) + fragment(), class: "mono" },
            label === undefined ? id : label);
}

function section(id, title, wide) {
  const heading = el("h2", {}, title, " ", el("small", { id: id + "-note" }));
  return el("section", { id, class: wide ? "wide" : null }, heading, el("div", { id: id + "-body" }));
}

function fill(id, ...children) {
  const body = document.getElementById(id + "-body");
  body.replaceChildren(...children);
}

function note(id, text) { document.getElementById(id + "-note").textContent = text; }

function table(headings, rows) {
  return el("table", {}, el("thead", {}, el("tr", {}, ...headings.map((h) => el("th", {}, h)))),
            el("tbody", {}, ...rows));
}

// -- the overview -----------------------------------------------------------------------------

function renderSessions(list) {
  const rows = list.data.map((s) => el("tr", { "data-session-id": s.id },
    el("td", {}, sessionLink(s.id, short(s.id, 40))),
    el("td", {}, s.source || ""),
    el("td", {}, short(s.title || "", 40)),
    el("td", {}, s.kind === "root" ? "" : s.kind, s.parent_session_id ? el("span", { class: "muted" }, " of ", short(s.parent_session_id, 24)) : null),
    el("td", {}, s.end_reason || el("span", { class: "tag live" }, "open")),
    el("td", { class: "num" }, s.message_count ?? ""),
    el("td", { class: "num" }, s.tool_call_count ?? "")));
  note("sessions", list.data.length + (list.truncated ? "+ (newest shown)" : "") + " sessions, children included");
  fill("sessions", rows.length ? table(["id", "source", "title", "parent", "end reason", "messages", "tool calls"], rows)
                               : el("p", { class: "empty" }, "No sessions."));
}

let journalSeqs = [];
const openBodies = new Set();

function flashRow(seq) {
  const row = document.querySelector('#journal tr[data-seq="' + seq + '"]');
  if (!row) return;
  row.scrollIntoView({ block: "center" });
  row.classList.add("flash");
  setTimeout(() => row.classList.remove("flash"), 1500);
}

async function toggleBody(seq, cell) {
  if (openBodies.has(seq)) { openBodies.delete(seq); cell.querySelector("pre")?.remove(); return; }
  openBodies.add(seq);
  const all = await api("/_fixture/requests?bodies=true");
  const entry = all.data.find((e) => e.seq === seq);
  if (!entry) return;
  cell.append(el("pre", { class: "body" }, "request: " + (shown(entry.request_body) || "(none)") +
                                           "\n\nresponse: " + (shown(entry.response_body) || "(none)")));
}

function journalRow(e) {
  const bodyCell = el("td", {});
  bodyCell.append(el("button", { class: "link", type: "button", onclick: () => toggleBody(e.seq, bodyCell) }, "bodies"));
  const path = e.path + (e.query ? "?" + e.query : "");
  return el("tr", { "data-seq": e.seq, id: "seq-" + e.seq },
    el("td", { class: "num" }, e.seq),
    el("td", { class: "mono" }, clockTime(e.time)),
    el("td", {}, e.method),
    el("td", { class: "mono" }, short(path, 70)),
    el("td", { class: "s" + String(e.status || "").slice(0, 1) }, e.status ?? ""),
    el("td", { class: "outcome-" + e.outcome }, e.outcome || ""),
    el("td", {}, (e.faults || []).map((f) => (typeof f === "string" ? f : f.id || JSON.stringify(f))).join(", ")),
    el("td", { class: "num" }, typeof e.duration_ms === "number" ? e.duration_ms.toFixed(1) + " ms" : ""),
    bodyCell);
}

function renderJournal(list) {
  const seqs = list.data.map((e) => e.seq);
  note("journal", seqs.length + " entries, live");
  if (!seqs.length) { journalSeqs = []; fill("journal", el("p", { class: "empty" }, "The journal is empty.")); return; }
  const tbody = document.querySelector("#journal tbody");
  const appendOnly = tbody && journalSeqs.length && seqs.length >= journalSeqs.length
    && seqs[journalSeqs.length - 1] === journalSeqs[journalSeqs.length - 1] && seqs[0] === journalSeqs[0];
  if (appendOnly) {
    for (const e of list.data.slice(journalSeqs.length)) tbody.append(journalRow(e));
  } else {
    openBodies.clear();
    fill("journal", el("div", { class: "journal-wrap" },
      table(["seq", "time (UTC)", "method", "path", "status", "outcome", "faults", "duration", ""], list.data.map(journalRow))));
  }
  journalSeqs = seqs;
}

function renderAudit(audit) {
  if (audit === null) { note("audit", ""); fill("audit", el("p", { class: "empty" }, "audit not available")); return; }
  const findings = audit.findings || [];
  note("audit", audit.checked + " requests checked, " + findings.length + " findings");
  if (!findings.length) { fill("audit", el("p", { class: "empty" }, "No findings: the traffic so far is clean.")); return; }
  fill("audit", el("ul", { class: "findings" }, ...findings.map((f) => el("li",
    { "data-rule": f.rule, "data-severity": f.severity, class: "severity-" + f.severity },
    el("span", { class: "rule" }, f.rule), " ", el("span", { class: "tag" }, f.severity), " ",
    f.session_id ? sessionLink(f.session_id, short(f.session_id, 30)) : null,
    el("div", {}, f.message),
    el("div", { class: "muted" }, "requests: ", ...(f.requests || []).map((seq) =>
      el("button", { class: "link", type: "button", "data-seq-link": seq, onclick: () => flashRow(seq) }, "#" + seq)))))));
}

function renderFaults(list) {
  note("faults", list.data.length + " armed");
  fill("faults", list.data.length ? table(["id", "kind", "route", "method", "fired", "remaining"], list.data.map((f) =>
    el("tr", { "data-fault-id": f.id }, el("td", { class: "mono" }, f.id), el("td", {}, f.kind || ""),
       el("td", {}, f.route || "*"), el("td", {}, f.method || ""), el("td", { class: "num" }, f.fired),
       el("td", { class: "num" }, f.remaining ?? "∞"))))
    : el("p", { class: "empty" }, "No faults armed."));
}

function renderClock(clock) {
  fill("clock", el("dl", { class: "facts" },
    el("dt", {}, "now"), el("dd", { class: "mono" }, when(clock.now), el("span", { class: "muted" }, " (" + clock.now + ")")),
    el("dt", {}, "mode"), el("dd", {}, clock.manual ? "manual, step " + clock.step + " s" : "wall clock"),
    el("dt", {}, "deterministic"), el("dd", {}, String(clock.deterministic))));
}

// A server without the audit answers 404, an unrouted path the journal records: asked once a page load.
let auditAbsent = false;

async function audit() {
  if (auditAbsent) return null;
  try { return await api("/_fixture/audit"); } catch (error) {
    if (!(error instanceof HttpError && error.status === 404)) throw error;
    auditAbsent = true;
    return null;
  }
}

const lastSeen = {};

async function pollOverview() {
  const [sessions, journal, findings, faults, clock] = await Promise.all([
    api("/_fixture/sessions"), api("/_fixture/requests"), audit(), api("/_fixture/faults"), api("/_fixture/clock")]);
  renderJournal(journal);
  for (const [name, data, render] of [["sessions", sessions, renderSessions], ["audit", findings, renderAudit],
                                      ["faults", faults, renderFaults], ["clock", clock, renderClock]]) {
    const seen = JSON.stringify(data);
    if (lastSeen[name] !== seen) render(data);  // unchanged: keep the reader's selection
    lastSeen[name] = seen;
  }
}

function showOverview() {
  const main = document.getElementById("main");
  main.replaceChildren(section("sessions", "Sessions", true), section("audit", "Audit findings", true),
                       section("journal", "Request journal", true), section("faults", "Armed faults"),
                       section("clock", "Clock"));
  return pollOverview;
}

// -- one session: lineage and transcript -----------------------------------------------------

const BOX_W = 180, BOX_H = 62, GAP_X = 76, GAP_Y = 18, PAD = 12;

function layout(tree) {
  const children = new Map();
  for (const node of tree.nodes) {
    if (node.id === tree.root) continue;
    if (!children.has(node.parent_session_id)) children.set(node.parent_session_id, []);
    children.get(node.parent_session_id).push(node);
  }
  const place = new Map();
  let row = 0;
  const visit = (node, depth) => {
    const kids = children.get(node.id) || [];
    const top = row;
    for (const kid of kids) visit(kid, depth + 1);
    const y = kids.length ? (top + row - 1) / 2 : row++;
    place.set(node.id, { x: depth, y, node });
  };
  visit(tree.nodes[0], 0);
  return { place, rows: row, depth: Math.max(...[...place.values()].map((p) => p.x)) + 1 };
}

function drawLineage(tree) {
  const { place, rows, depth } = layout(tree);
  const width = PAD * 2 + depth * BOX_W + (depth - 1) * GAP_X;
  const height = PAD * 2 + rows * BOX_H + (rows - 1) * GAP_Y;
  const pos = (p) => ({ left: PAD + p.x * (BOX_W + GAP_X), top: PAD + p.y * (BOX_H + GAP_Y) });
  const picture = svg("svg", { class: "lineage", viewBox: `0 0 ${width} ${height}`, width, height,
                              role: "img", "aria-label": "lineage of " + tree.root });
  for (const p of place.values()) {
    if (p.node.id === tree.root) continue;
    const parent = place.get(p.node.parent_session_id);
    if (!parent) continue;
    const a = pos(parent), b = pos(p);
    const x1 = a.left + BOX_W, y1 = a.top + BOX_H / 2, x2 = b.left, y2 = b.top + BOX_H / 2;
    const mid = (x1 + x2) / 2;
    picture.append(svg("path", { class: "edge " + p.node.kind, d: `M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}` }),
                   svg("text", { class: "edge-label", x: mid, y: (y1 + y2) / 2 - 5, "text-anchor": "middle" }, p.node.kind));
  }
  for (const p of place.values()) {
    const n = p.node, { left, top } = pos(p);
    const classes = ["node", n.kind, n.ended_at ? "ended" : "open"];
    if (n.id === tree.tip) classes.push("tip");
    if (n.id === tree.session_id) classes.push("current");
    const link = svg("a", { href: "/_fixture/ui/sessions/" + encodeURIComponent(n.id) + fragment() });
    link.append(
      svg("rect", { x: left, y: top, width: BOX_W, height: BOX_H, rx: 6 }),
      svg("text", { class: "id", x: left + 8, y: top + 16 }, short(n.id, 23)),
      svg("text", { x: left + 8, y: top + 32 }, short(n.title || "(untitled)", 26)),
      svg("text", { class: n.id === tree.tip ? "small live" : "small", x: left + 8, y: top + 50 },
          (n.id === tree.tip ? "LIVE TIP · " : "") + (n.end_reason ? "ended: " + n.end_reason : "open") +
          " · " + (n.message_count ?? 0) + " msgs"));
    picture.append(svg("g", { class: classes.join(" "), "data-session-id": n.id, "data-kind": n.kind,
                              "data-end-reason": n.end_reason || "", "data-tip": n.id === tree.tip ? "true" : "false" },
                       svg("title", {}, n.id + " (" + n.kind + ")"), link));
  }
  return picture;
}

function renderTranscript(list) {
  note("transcript", list.data.length + " active messages of this exact session");
  fill("transcript", list.data.length ? el("div", { class: "transcript" }, ...list.data.map((m) => el("article",
    { "data-role": m.role, "data-message-id": m.id },
    el("div", { class: "role" }, m.role, m.tool_name ? " · " + m.tool_name : "", m.tool_call_id ? " · " + m.tool_call_id : ""),
    el("div", { class: "content" }, shown(m.content)),
    ...(Array.isArray(m.tool_calls) ? m.tool_calls : []).map((call) => el("div", { class: "tool-call" },
      "→ " + ((call.function && call.function.name) || call.name || "tool") + "(" +
      shown((call.function && call.function.arguments) ?? call.arguments ?? "") + ")"))))) :
    el("p", { class: "empty" }, "No messages."));
}

const MISSING = "missing";

function showMissing(id) {
  document.getElementById("main").replaceChildren(el("section", { id: "missing", class: "wide" },
    el("h2", {}, "No such session"),
    el("p", { id: "no-such-session", class: "empty" }, "No such session: ", el("span", { class: "mono" }, id),
       " is not in state.db (never created, deleted, or emptied by a fixture reset). ",
       el("a", { href: "/_fixture/ui/" + fragment() }, "Back to the overview"), ".")));
}

function showSession(id) {
  const main = document.getElementById("main");
  const frame = () => main.replaceChildren(section("lineage", "Lineage", true), section("facts", "Session"),
                                           section("transcript", "Transcript"));
  frame();
  document.title = id + " · hermes-server inspector";
  let last = null;
  return async () => {
    let tree, transcript;
    try {
      [tree, transcript] = await Promise.all([
        api("/_fixture/sessions/" + encodeURIComponent(id) + "/lineage"),
        api("/_fixture/sessions/" + encodeURIComponent(id) + "/messages")]);
    } catch (error) {
      if (!(error instanceof HttpError && error.status === 404)) throw error;
      if (last !== MISSING) showMissing(id);  // said in the page, and said again if it comes and goes
      last = MISSING;
      return;
    }
    const seen = JSON.stringify([tree, transcript]);
    if (seen === last) return;  // unchanged: keep the reader's scroll and selection
    if (last === MISSING) frame();
    last = seen;
    note("lineage", tree.nodes.length + " sessions from root " + tree.root + "; live tip " + tree.tip);
    fill("lineage", el("p", { class: "legend muted" }, el("span", { class: "compression" }, "── compression"),
                       el("span", { class: "fork" }, "╌╌ fork"), el("span", { class: "delegate" }, "·· delegate"),
                       el("span", {}, "green: the live tip")), drawLineage(tree));
    const self = tree.nodes.find((n) => n.id === id) || {};
    fill("facts", el("dl", { class: "facts" }, ...["id", "kind", "source", "title", "parent_session_id", "started_at",
      "ended_at", "end_reason", "message_count", "tool_call_count"].flatMap((k) =>
        [el("dt", {}, k), el("dd", { class: k === "id" ? "mono" : null },
          k.endsWith("_at") && self[k] ? when(self[k]) : (self[k] ?? ""))])));
    renderTranscript(transcript);
  };
}

// -- start -------------------------------------------------------------------------------------

function sessionFromPath() {
  const match = location.pathname.match(/^\/_fixture\/ui\/sessions\/([^/]+)$/);
  return match ? decodeURIComponent(match[1]) : null;
}

function start() {
  document.getElementById("home").setAttribute("href", "/_fixture/ui/" + fragment());
  document.getElementById("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    const input = document.getElementById("key-input");
    key = input.value.trim();
    input.value = "";
    history.replaceState(null, "", location.pathname + fragment());
    location.reload();
  });
  const id = sessionFromPath();
  const refresh = id === null ? showOverview() : showSession(id);
  let busy = false, stopped = false;
  const tick = async () => {
    if (busy || stopped) return;
    busy = true;
    try {
      await refresh();
      setStatus((key ? "" : "no key · ") + "updated " + when(Date.now() / 1000).slice(11));
    } catch (error) {
      if (error instanceof HttpError && error.status === 401) {
        stopped = true;
        document.getElementById("main").replaceChildren(el("p", { id: "need-key", class: "empty" },
          key ? "The key was refused. Enter the server's API key." : "This server needs its API key: enter it above, or open the page as …/_fixture/ui/#key=KEY."));
        setStatus("no data without the key");
      } else {
        setStatus("error: " + error.message);
      }
    } finally { busy = false; }
  };
  tick();
  setInterval(tick, POLL_MS);
}

window.addEventListener("hashchange", () => { if (keyFromFragment() !== key) location.reload(); });
start();
