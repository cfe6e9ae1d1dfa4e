// The live monitor's page: renders the snapshots pushed on /ws and calls the control endpoints.
// Plain JS, no build step, nothing loaded from elsewhere.
"use strict";
const $ = (id) => document.getElementById(id);
let config = { read_only: false, needs_token: false, authenticated: true };
let session = { csrf: "", cookie: "" };

function say(text, error) {
  $("message").textContent = text;
  $("message").className = error ? "error" : "";
}

// This page's CSRF value (GET /api/session sets it as a SameSite=Strict cookie too); every POST
// sends it in a header that must match the cookie. Another tab may have set a newer cookie: use that.
async function newSession() {
  const r = await fetch("/api/session", { cache: "no-store" });
  if (r.ok) session = await r.json();
}

function csrf() {
  for (const c of document.cookie.split("; ")) {
    const [k, v] = c.split("=");
    if (k === session.cookie && v) return v;
  }
  return session.csrf;
}

async function post(path, body, extra) {
  if (!session.csrf) await newSession();
  const send = () => fetch(path, { method: "POST", body: JSON.stringify(body || {}),
    headers: { "Content-Type": "application/json", "X-Monologue-CSRF": csrf(), ...(extra || {}) } });
  let r = await send();
  if (r.status === 403) {  // the console restarted (new signing key): a new CSRF value, once
    const j = await r.clone().json().catch(() => ({}));
    if ((j.detail || "").startsWith("CSRF")) { await newSession(); r = await send(); }
  }
  return r;
}

async function control(path, body) {
  try {
    const r = await post(path, body);
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { say(`refused (${r.status}): ${j.detail || r.statusText}`, true); return false; }
    say(j.message || "ok", false);
    return true;
  } catch (e) { say(`request failed: ${e}`, true); return false; }
}

// Off loopback, reads and control need a session: the token typed here is sent once to /api/login,
// which sets an HttpOnly session cookie; then the page connects.
async function login() {
  const token = $("token").value;
  if (!token) { say("type the token first", true); return; }
  try {
    const r = await post("/api/login", {}, { "X-Monologue-Token": token });
    const j = await r.json().catch(() => ({}));
    if (!r.ok) { say(`login refused (${r.status}): ${j.detail || r.statusText}`, true); return; }
    $("token").value = "";
    config.authenticated = true;
    $("token-row").hidden = true;
    say(j.message || "logged in", false);
    start();
  } catch (e) { say(`login failed: ${e}`, true); }
}

function eventItem(e) {
  const li = document.createElement("li");
  li.className = `k-${e.kind}`;
  if (e.kind === "SUCCESS" && e.data && e.data.success === false) li.classList.add("false");
  li.dataset.kind = e.kind;
  li.dataset.index = e.index;
  li.textContent = e.text;
  li.title = e.kind;
  return li;
}

function renderTranscript(s) {
  const ol = $("transcript");
  const first = s.events.length ? s.events[0].index : 0;
  if (ol.dataset.episode !== s.episode_id || ol.children.length > s.events.length
      || (ol.firstChild && Number(ol.firstChild.dataset.index) !== first)) {
    ol.replaceChildren(); ol.dataset.episode = s.episode_id;
  }
  for (const e of s.events.slice(ol.children.length)) ol.appendChild(eventItem(e));
  $("episode").textContent = s.episode_id ? `episode ${s.episode_id}` : "waiting for an episode";
  if (ol.lastChild) ol.lastChild.scrollIntoView({ block: "nearest" });
}

function renderScores(sc) {
  const box = $("scores");
  box.replaceChildren();
  $("step").textContent = sc.step ? `step ${sc.step}` : "";
  for (const r of sc.rows || []) {
    const row = document.createElement("div");
    row.className = "row" + (r.chosen ? " chosen" : "");
    row.dataset.candidate = r.candidate;
    const label = document.createElement("span");
    label.className = "label";
    label.textContent = (r.chosen ? "★ " : "") + r.candidate;
    label.title = `${r.candidate}\nLLM ${r.llm.toFixed(3)} × affordance ${r.affordance.toFixed(2)} = ${r.combined.toFixed(3)}`;
    const bars = document.createElement("span");
    bars.className = "bars";
    const maxComb = Math.max(...sc.rows.map((x) => x.combined), 1e-9);
    for (const [cls, v] of [["llm", r.llm], ["aff", r.affordance], ["comb", r.combined / maxComb]]) {
      const b = document.createElement("span");
      b.className = `bar ${cls}`;
      b.style.width = `${Math.max(0, Math.min(1, v)) * 100}%`;
      bars.appendChild(b);
    }
    row.append(label, bars);
    box.appendChild(row);
  }
}

function renderStatus(st) {
  const el = $("status");
  if (!st || st.ok === undefined) { el.textContent = "robot: no status"; el.className = "badge unknown"; return; }
  let text = `robot ${st.backend || ""}: ${st.ok ? "ok" : "not ok"}`;
  if (st.estop_latched) text += ` — E-STOP LATCHED (${st.estop_reason || "estop"})`;
  else if (st.fault) text += ` — ${st.fault}`;
  el.textContent = text;
  el.className = "badge " + (st.estop_latched ? "latched" : st.ok ? "ok" : "fault");
  el.dataset.estopLatched = st.estop_latched ? "true" : "false";
  $("estop").classList.toggle("latched", !!st.estop_latched);
}

function renderSteps(steps) {
  const tb = $("steps").tBodies[0];
  tb.replaceChildren();
  for (const x of steps || []) {
    const tr = document.createElement("tr");
    tr.dataset.step = x.step;
    for (const t of [x.step, x.chosen, x.candidates, x.prompt_tokens, x.new_tokens, x.llm_s.toFixed(2), x.step_s.toFixed(2)]) {
      const td = document.createElement("td"); td.textContent = String(t); td.title = String(t); tr.appendChild(td);
    }
    tb.appendChild(tr);
  }
}

const COLOURS = { red: "#e53935", green: "#43a047", blue: "#1e88e5", yellow: "#fdd835", orange: "#fb8c00",
  purple: "#8e24aa", pink: "#ec407a", cyan: "#00acc1", brown: "#6d4c41", gray: "#9e9e9e", grey: "#9e9e9e",
  white: "#fafafa", black: "#212121" };

function colourOf(name) {
  for (const w of name.toLowerCase().split(/\s+/)) if (COLOURS[w]) return COLOURS[w];
  return "#78909c";
}

// Top view of the scene description: x (forward) up the canvas, y (left) to the left, metres to px.
function renderScene(sc) {
  const cv = $("topview");
  const objs = (sc && sc.objects) || [];
  cv.dataset.objects = JSON.stringify(objs.map((o) => o.name));
  $("scene-info").textContent = objs.length ? `${sc.source || ""} · ${objs.length} objects · frame ${sc.frame || "?"}`
    + (sc.held && sc.held.length ? ` · holding ${sc.held.join(", ")}` : "") : "";
  const g = cv.getContext("2d");
  g.clearRect(0, 0, cv.width, cv.height);
  if (!objs.length) { g.fillStyle = "#889"; g.fillText("no scene description yet", 10, 20); return; }
  const xs = objs.map((o) => o.x), ys = objs.map((o) => o.y);
  const pad = 0.08;
  const x0 = Math.min(...xs) - pad, x1 = Math.max(...xs) + pad, y0 = Math.min(...ys) - pad, y1 = Math.max(...ys) + pad;
  const k = Math.min((cv.width - 160) / Math.max(y1 - y0, 1e-3), (cv.height - 40) / Math.max(x1 - x0, 1e-3));
  const px = (o) => [cv.width / 2 - (o.y - (y0 + y1) / 2) * k, cv.height / 2 - (o.x - (x0 + x1) / 2) * k];
  g.font = "10px system-ui, sans-serif";
  for (const o of [...objs].sort((a, b) => (a.category === "location") - (b.category === "location"))) {
    const [u, v] = px(o);
    g.globalAlpha = o.visible === false ? 0.35 : 1.0;
    if (o.category === "location") {
      g.strokeStyle = "#90a4ae"; g.beginPath(); g.moveTo(u - 4, v); g.lineTo(u + 4, v); g.moveTo(u, v - 4); g.lineTo(u, v + 4); g.stroke();
      g.fillStyle = "#90a4ae"; g.fillText(o.name, u + 5, v - 3);
      continue;
    }
    const w = Math.max(o.sy * k, 6), h = Math.max(o.sx * k, 6);
    g.fillStyle = colourOf(o.name); g.strokeStyle = "#263238";
    if (/bowl|plate|cup/.test(o.category + " " + o.name)) {
      const r = Math.max(w, h) / 2;
      g.beginPath(); g.arc(u, v, r, 0, 2 * Math.PI); g.lineWidth = 3; g.strokeStyle = colourOf(o.name); g.stroke(); g.lineWidth = 1;
      g.fillStyle = "#263238"; g.fillText(o.name, u - g.measureText(o.name).width / 2, v + r + 11);  // below the ring
    } else {
      g.fillRect(u - w / 2, v - h / 2, w, h); g.strokeRect(u - w / 2, v - h / 2, w, h);
      g.fillStyle = "#263238"; g.fillText(o.name, u + w / 2 + 2, v + 3);
    }
  }
  g.globalAlpha = 1.0;
}

let cameraSeq = -1;
function renderCamera(cam) {
  if (!cam || cam.seq === undefined || cam.seq === cameraSeq) return;
  cameraSeq = cam.seq;
  const img = $("camera");
  img.onload = () => { img.hidden = false; $("camera-none").hidden = true; };
  img.src = `/api/camera.jpg?seq=${cam.seq}`;
  img.dataset.topic = cam.topic;
  $("camera-topic").textContent = `${cam.topic} (${cam.width}×${cam.height})`;
}

let historyFor = "";

function render(s) {
  renderTranscript(s);
  const last = s.events.length ? s.events[s.events.length - 1] : null;
  if (last && last.kind === "EPISODE_END" && historyFor !== s.episode_id) {  // the file has its end record now
    historyFor = s.episode_id;
    setTimeout(loadHistory, 500);
  }
  renderScores(s.scores || {});
  renderSteps(s.steps);
  renderScene(s.scene);
  renderCamera(s.camera);
  const a = s.approval || {};
  $("approval-box").hidden = !a.request;
  $("approval").textContent = a.request || "";
  renderStatus(s.status);
  const sk = s.skill || {};
  $("skill").textContent = sk.skill ? `${sk.skill}(${(sk.args || []).join(", ")}): ${sk.state || ""}` : "none";
  $("skill").className = "skill" + (sk.skill ? "" : " none");
  const g = s.goal || { state: "idle" };
  $("goal").textContent = g.state + (g.message ? `: ${g.message}` : "");
  $("goal").className = `badge ${g.state}`;
  const q = s.question || {};
  $("question-box").hidden = !q.question;
  $("question").textContent = q.question || "";
}

function connect() {
  const ws = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  ws.onopen = () => { $("conn").textContent = "live"; $("conn").className = "badge on"; };
  ws.onmessage = (m) => { const s = JSON.parse(m.data); if (s.events) render(s); };
  ws.onclose = () => {
    $("conn").textContent = "disconnected, retrying"; $("conn").className = "badge off";
    setTimeout(connect, 1000);
  };
}

// Fetch a JSON list from `url` and show it in table `tableId`, one row (makeRow(item)) per item.
async function fillTable(url, tableId, makeRow) {
  const r = await fetch(url);
  const items = r.ok ? await r.json() : [];
  $(tableId).tBodies[0].replaceChildren(...items.map(makeRow));
}

function textRow(cells) {
  const tr = document.createElement("tr");
  for (const t of cells) { const td = document.createElement("td"); td.textContent = t; tr.appendChild(td); }
  return tr;
}

async function loadHistory() {
  await fillTable("/api/history", "history", (h) => {
    const outcome = h.running ? "running" : !h.ended ? "interrupted" : h.success ? "success" : `failure ${h.reason}`;
    const tr = textRow([h.episode_id, h.instruction, String(h.events), outcome]);
    const td = document.createElement("td");
    const view = document.createElement("button"); view.className = "small"; view.textContent = "view";
    view.onclick = () => showEpisode(h.name);
    const dl = document.createElement("a"); dl.textContent = "download";
    dl.href = `/api/history/${encodeURIComponent(h.name)}/download`; dl.download = h.name;
    td.append(view, " ", dl); tr.appendChild(td);
    return tr;
  });
}

function fmtBytes(n) { return n > 1e6 ? `${(n / 1e6).toFixed(1)} MB` : `${(n / 1e3).toFixed(0)} kB`; }

async function loadBags() {
  await fillTable("/api/bags", "bags", (b) => {
    const topics = (b.topics || []).filter((t) => t.messages > 0).map((t) => `${t.topic} ${t.messages}`).join(", ");
    const tr = textRow(b.error ? [b.name, "", "", "", "", b.error]
      : [b.name, new Date(b.start_s * 1000).toLocaleString(), `${b.duration_s.toFixed(1)} s`, String(b.messages),
         fmtBytes(b.size), topics]);
    tr.dataset.bag = b.name;
    return tr;
  });
}

async function showEpisode(name) {
  const r = await fetch(`/api/history/${encodeURIComponent(name)}`);
  if (!r.ok) { say(`cannot read ${name}`, true); return; }
  const ep = await r.json();
  $("viewer").hidden = false;
  $("viewer-title").textContent = name;
  $("viewer-events").replaceChildren(...ep.events.map(eventItem));
}

let started = false;
function start() {  // the live view and the lists (off loopback: once logged in)
  if (started) return;
  started = true;
  connect();
  loadHistory();
  loadBags();
}

async function init() {
  try { config = await (await fetch("/api/config")).json(); } catch (e) { /* keep defaults */ }
  await newSession().catch(() => {});
  $("readonly").hidden = !config.read_only;
  $("token-row").hidden = !(config.needs_token && !config.authenticated);
  $("login").onclick = login;
  $("token").onkeydown = (ev) => { if (ev.key === "Enter") login(); };
  for (const id of ["send", "cancel", "interject", "estop-reset", "send-answer", "approve", "deny"]) $(id).disabled = config.read_only;
  $("approve").onclick = () => control("/api/approval", { approve: true });
  $("deny").onclick = () => control("/api/approval", { approve: false });
  $("instruction-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const text = $("instruction").value.trim();
    if (!text) { say("type an instruction first", true); return; }
    if (await control("/api/instruction", { text, strategy: $("strategy").value })) $("instruction").value = "";
  };
  $("cancel").onclick = () => control("/api/cancel");
  $("interject-form").onsubmit = async (ev) => {
    ev.preventDefault();
    const text = $("interjection").value.trim();
    if (text && await control("/api/interject", { text })) $("interjection").value = "";
  };
  $("send-answer").onclick = async () => {
    const text = $("answer").value.trim();
    if (text && await control("/api/answer", { text })) $("answer").value = "";
  };
  $("estop").onclick = () => control("/api/estop");
  $("estop-reset").onclick = () => control("/api/estop_reset");
  $("refresh-history").onclick = () => { loadHistory(); loadBags(); };
  if (config.needs_token && !config.authenticated) {
    $("conn").textContent = "log in with the token";
    say(`this console needs the token ($${config.token_env}); E-STOP works without it`, false);
  } else {
    start();
  }
}
init();
