// atoll dashboard: one page, seven views, polling the JSON API under
// /api/. Everything shown comes from the API; the page keeps only the
// samples of its live charts (the last maxSamples polls of /api/cluster).
"use strict";

const pollMs = 2000;
const maxSamples = 150; // 5 minutes at one poll every 2 s
const palette = ["#2563eb", "#16a34a", "#ea580c", "#9333ea", "#0891b2", "#ca8a04", "#db2777", "#4b5563"];
const svgNS = "http://www.w3.org/2000/svg";

const state = {
  view: "overview",
  params: new URLSearchParams(),
  cluster: null,     // the last /api/cluster
  samples: [],       // {t, nodes: {id: {used, spilled}}, running, queued}
  jobs: [],          // the last /api/jobs (the tasks view's job filter)
  jobsAt: 0,         // when it was read
  timer: null,
  busy: false,
};

// ---------- helpers ----------

function $(id) { return document.getElementById(id); }

// el builds an element: attrs are attributes (class, href, title,
// data-*), children strings (text) or nodes. Never HTML from data.
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null && v !== false) e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function svg(tag, attrs, ...children) {
  const e = document.createElementNS(svgNS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const c of children.flat()) {
    if (c === undefined || c === null) continue;
    e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return e;
}

function fmtBytes(n) {
  if (!n) return "0 B";
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n < 10 ? n.toFixed(2) : n < 100 ? n.toFixed(1) : n.toFixed(0)) + " " + units[i];
}

function fmtNum(n) {
  if (n === undefined || n === null) return "–";
  return Number.isInteger(n) ? n.toLocaleString("en-US") : n.toLocaleString("en-US", { maximumFractionDigits: 2 });
}

function fmtMs(ms) {
  if (ms < 1) return (ms * 1000).toFixed(0) + " µs";
  if (ms < 1000) return ms.toFixed(ms < 10 ? 2 : 0) + " ms";
  const s = ms / 1000;
  if (s < 60) return s.toFixed(s < 10 ? 2 : 1) + " s";
  const m = Math.floor(s / 60);
  if (m < 60) return m + " min " + Math.floor(s % 60) + " s";
  return Math.floor(m / 60) + " h " + (m % 60) + " min";
}

function fmtTime(iso) {
  if (!iso) return "–";
  const d = new Date(iso);
  const pad = (x, n = 2) => String(x).padStart(n, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// fmtClockISO is the time of day of an RFC 3339 time.
function fmtClockISO(iso) {
  if (!iso) return "–";
  return fmtTime(iso).slice(11);
}

function fmtClock(us) {
  const d = new Date(us / 1000);
  const pad = (x, n = 2) => String(x).padStart(n, "0");
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}.${pad(d.getMilliseconds(), 3)}`;
}

function short(id) { return id ? id.slice(0, 8) : ""; }

function idCell(id, href) {
  if (!id) return el("td", {}, "–");
  const text = el("span", { class: "id", title: id }, short(id));
  return el("td", {}, href ? el("a", { href }, text) : text);
}

function badge(text, cls) { return el("span", { class: "badge " + (cls || text) }, text); }

function colorOf(key, keys) {
  const i = keys.indexOf(key);
  return palette[(i < 0 ? 0 : i) % palette.length];
}

function setRows(tbody, rows, cols, emptyText) {
  tbody.replaceChildren(...(rows.length ? rows : [el("tr", { class: "empty" }, el("td", { colspan: cols }, emptyText))]));
}

async function api(path) {
  const resp = await fetch(path, { headers: { Accept: "application/json" } });
  let body;
  try { body = await resp.json(); } catch (e) { body = { error: resp.statusText }; }
  if (resp.status === 401) {
    $("login").hidden = false;
    const err = new Error(`${path}: ${body.error || resp.status}`);
    err.login = true;
    throw err;
  }
  if (!resp.ok) throw new Error(`${path}: ${body.error || resp.status}`);
  return body;
}

// login posts the reader token; the server answers with a session cookie.
async function login(ev) {
  ev.preventDefault();
  const resp = await fetch("/api/login", { method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ token: $("login-token").value }) });
  if (resp.ok) {
    $("login-token").value = "";
    $("login").hidden = true;
    $("login-error").textContent = "";
    refresh();
    return;
  }
  let body;
  try { body = await resp.json(); } catch (e) { body = { error: resp.statusText }; }
  $("login-error").textContent = body.error || String(resp.status);
}

function showError(err) {
  const box = $("error");
  if (err && err.login) {
    box.hidden = true; // the login form says it
  } else if (err) {
    box.textContent = "Cannot reach the cluster: " + err.message;
    box.hidden = false;
  } else {
    box.hidden = true;
  }
}

// ---------- routing ----------

function route() {
  const [view, query] = (location.hash.slice(1) || "overview").split("?");
  state.view = document.getElementById("view-" + view) ? view : "overview";
  state.params = new URLSearchParams(query || "");
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== "view-" + state.view;
  for (const a of document.querySelectorAll("#nav a")) a.classList.toggle("active", a.dataset.view === state.view);
  if (state.view === "tasks") syncTaskFilter();
  refresh();
}

// ---------- polling ----------

async function refresh() {
  clearTimeout(state.timer);
  if (state.busy) { state.timer = setTimeout(refresh, pollMs); return; }
  state.busy = true;
  try {
    await loadCluster();
    const views = { overview: drawOverview, jobs: loadJobs, tasks: loadTasks, actors: loadActors, groups: loadGroups,
      memory: drawMemory, timeline: loadTimeline, logs: loadLogs };
    await views[state.view]();
    showError(null);
    $("updated").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (err) {
    showError(err);
  } finally {
    state.busy = false;
    state.timer = setTimeout(refresh, pollMs);
  }
}

async function loadCluster() {
  // #overview?all=1 lists the nodes gone long ago too.
  const c = await api("/api/cluster" + (state.params.get("all") ? "?gone_within=0" : ""));
  state.cluster = c;
  $("cluster-address").textContent = "cluster " + c.address;
  const sample = { t: Date.parse(c.time), nodes: {}, running: c.totals.running + c.drivers.running, queued: c.totals.queued + c.drivers.queued };
  for (const n of c.nodes) {
    if (n.state === "alive" && n.reporting) sample.nodes[n.node_id] = { used: n.store_used_bytes, spilled: n.spilled_bytes };
  }
  state.samples.push(sample);
  if (state.samples.length > maxSamples) state.samples.shift();
  fillNodeSelects(c.nodes);
}

// ---------- overview ----------

function nodeLabel(n) { return short(n.node_id) + (n.role === "worker" ? "" : " (" + n.role + ")"); }

function drawOverview() {
  const c = state.cluster;
  const t = c.totals;
  const members = c.nodes.filter(n => n.role !== "driver");
  const alive = members.filter(n => n.state === "alive").length;
  const drivers = c.nodes.filter(n => n.role === "driver" && n.state === "alive").length;
  $("node-count").textContent = alive;
  const gone = c.nodes_not_listed
    ? [" · ", el("a", { href: "#overview?all=1", title: `left or died over ${c.gone_within} ago` }, `${c.nodes_not_listed} older not listed`)] : [];
  $("node-sub").replaceChildren(`${drivers} driver${drivers === 1 ? "" : "s"} · ${t.nodes_left} left · ${t.nodes_dead} dead`, ...gone);
  const cpu = t.resources_total.CPU || 0, cpuFree = t.resources_available.CPU || 0;
  $("cpu-use").textContent = `${fmtNum(cpu - cpuFree)} / ${fmtNum(cpu)}`;
  $("cpu-sub").textContent = cpu ? Math.round(100 * (cpu - cpuFree) / cpu) + "% busy" : "no CPUs";
  $("store-use").textContent = fmtBytes(t.store_used_bytes);
  const d = c.drivers;
  $("store-sub").textContent = `of ${fmtBytes(t.store_capacity_bytes)} · ${fmtNum(t.objects)} objects` +
    (d.store_capacity_bytes ? ` · drivers' own stores: ${fmtBytes(d.store_used_bytes)} of ${fmtBytes(d.store_capacity_bytes)}` : "");
  $("spill-use").textContent = fmtBytes(t.spilled_bytes + d.spilled_bytes);
  const files = t.spill_files + d.spill_files;
  $("spill-sub").textContent = `${fmtNum(files)} file${files === 1 ? "" : "s"} · ${fmtBytes(t.restored_bytes_total + d.restored_bytes_total)} restored ever`;
  $("task-use").textContent = `${fmtNum(t.running + d.running)} · ${fmtNum(t.queued + d.queued)}`;

  const ids = c.nodes.filter(n => n.state === "alive" && n.reporting).map(n => n.node_id);
  const labels = Object.fromEntries(c.nodes.map(n => [n.node_id, nodeLabel(n)]));
  drawChart($("chart-store"), $("legend-store"), ids.map(id => ({
    name: labels[id], color: colorOf(id, ids), values: state.samples.map(s => s.nodes[id] ? s.nodes[id].used : null) })), fmtBytes, 1 << 20);
  drawChart($("chart-spill"), $("legend-spill"), ids.map(id => ({
    name: labels[id], color: colorOf(id, ids), values: state.samples.map(s => s.nodes[id] ? s.nodes[id].spilled : null) })), fmtBytes, 1 << 20);
  drawChart($("chart-tasks"), $("legend-tasks"), [
    { name: "running", color: palette[1], values: state.samples.map(s => s.running) },
    { name: "queued", color: palette[2], values: state.samples.map(s => s.queued) }], v => fmtNum(Math.round(v)), 2);

  const rows = c.nodes.map(n => {
    const cpuT = n.resources_total.CPU || 0, cpuA = n.resources_available.CPU || 0;
    const other = Object.keys(n.resources_total).filter(k => k !== "CPU" && k !== "memory").sort()
      .map(k => `${k} ${fmtNum(n.resources_total[k] - (n.resources_available[k] || 0))}/${fmtNum(n.resources_total[k])}`).join(", ");
    return el("tr", { "data-node-id": n.node_id, "data-state": n.state, "data-role": n.role },
      idCell(n.node_id, "#logs?node=" + n.node_id),
      el("td", {}, badge(n.role, n.role === "head" ? "head" : "")),
      el("td", { class: "node-state" }, badge(n.state), n.state === "alive" && !n.reporting ? el("span", { class: "muted small" }, " not reporting") : null,
        n.state !== "alive" ? el("div", { class: "muted small", title: fmtTime(n.end_time) },
          (n.end_reason || "no reason recorded") + (n.end_time ? ", " + fmtMs(Date.parse(c.time) - Date.parse(n.end_time)) + " ago" : "")) : null),
      el("td", {}, n.hostname),
      // What a node uses is known from its load report only.
      el("td", { class: "num" }, `${n.reporting ? fmtNum(cpuT - cpuA) : "–"} / ${fmtNum(cpuT)}`),
      el("td", { class: "num" }, (n.reporting && other) || "–"),
      el("td", {}, usageBar(n.store_used_bytes, n.store_capacity_bytes)),
      el("td", { class: "num" }, fmtNum(n.objects)),
      el("td", { class: "num" }, fmtBytes(n.spilled_bytes)),
      el("td", { class: "num" }, fmtNum(n.running)),
      el("td", { class: "num" }, fmtNum(n.queued)),
      el("td", { title: fmtTime(n.start_time) }, fmtClockISO(n.start_time)),
      el("td", {}, el("a", { href: "#tasks?node=" + n.node_id }, "tasks")));
  });
  setRows($("nodes-table").tBodies[0], rows, 13, "no nodes");
}

function usageBar(used, cap) {
  const frac = cap ? Math.min(1, used / cap) : 0;
  const fill = el("span");
  fill.style.width = (100 * frac).toFixed(1) + "%";
  return el("span", {}, el("span", { class: "bar" + (frac > 0.8 ? " high" : "") }, fill),
    el("span", { class: "barlabel" }, `${fmtBytes(used)} / ${fmtBytes(cap)}`));
}

// drawChart draws series (each {name, color, values}, one value per
// sample, null where absent) as lines over the samples, with the y axis
// from 0 to the largest value.
function drawChart(box, legend, series, fmt, minMax) {
  const W = 560, H = 180, left = 64, right = 8, top = 8, bottom = 20;
  const n = state.samples.length;
  let maxV = 0;
  for (const s of series) for (const v of s.values) if (v !== null && v > maxV) maxV = v;
  const yMax = Math.max(maxV * 1.15, minMax);
  const x = i => left + (n <= 1 ? W - left - right : (i * (W - left - right)) / (n - 1));
  const y = v => top + (H - top - bottom) * (1 - v / yMax);
  const parts = [];
  for (const f of [0, 0.5, 1]) {
    parts.push(svg("line", { class: "axis", x1: left, x2: W - right, y1: y(yMax * f), y2: y(yMax * f) }));
    parts.push(svg("text", { class: "tick", x: left - 6, y: y(yMax * f) + 4, "text-anchor": "end" }, fmt(yMax * f)));
  }
  if (n > 0) {
    const span = (state.samples[n - 1].t - state.samples[0].t) / 1000;
    parts.push(svg("text", { class: "tick", x: left, y: H - 4 }, n > 1 ? `${Math.round(span)} s ago` : "now"));
    parts.push(svg("text", { class: "tick", x: x(n - 1), y: H - 4, "text-anchor": "end" }, "now"));
  }
  for (const s of series) {
    const pts = [];
    s.values.forEach((v, i) => { if (v !== null) pts.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`); });
    if (pts.length === 1) pts.unshift(pts[0].replace(/^[^,]+/, v => (Number(v) - 4).toFixed(1)));
    if (pts.length) parts.push(svg("polyline", { points: pts.join(" "), stroke: s.color, "data-series": s.name }));
  }
  box.replaceChildren(...parts);
  legend.replaceChildren(...series.map(s => {
    const last = [...s.values].reverse().find(v => v !== null);
    const sw = el("span", { class: "swatch" });
    sw.style.background = s.color;
    return el("span", {}, sw, `${s.name}: ${last === undefined ? "–" : fmt(last)}`);
  }));
}

// ---------- jobs ----------

async function loadJobs() {
  const v = await api("/api/jobs");
  state.jobs = v.jobs;
  state.jobsAt = Date.now();
  const rows = v.jobs.map(j => el("tr", { "data-job-id": j.job_id, "data-status": j.status },
    idCell(j.job_id),
    el("td", {}, badge(j.status),
      j.exit_code !== undefined && j.exit_code !== 0 ? el("span", { class: "muted small", title: j.message || "" }, ` exit ${j.exit_code}`) : null),
    el("td", { class: "wrap", title: j.worker_binary || "" }, j.entrypoint || "–"),
    el("td", {}, fmtTime(j.start_time)),
    el("td", { class: "num" }, fmtMs(j.duration_ms)),
    el("td", { class: "num" }, fmtNum(j.tasks_finished)),
    el("td", { class: "num" + (j.tasks_failed ? " bad" : "") }, fmtNum(j.tasks_failed)),
    el("td", {}, el("a", { href: "#tasks?job=" + (j.driver_job_id || j.job_id) }, "tasks"), " · ",
      el("a", { href: "#timeline?job=" + (j.driver_job_id || j.job_id) }, "timeline"),
      " · ", el("a", { href: "#actors?job=" + (j.driver_job_id || j.job_id) }, "actors"),
      j.submitted ? [" · ", el("a", { href: "#logs?job=" + j.job_id, class: "job-log" }, "log")] : [])));
  setRows($("jobs-table").tBodies[0], rows, 8, "no jobs yet");
}

// ---------- tasks ----------

function fillNodeSelects(nodes) {
  for (const [id, withAll] of [["filter-node", true], ["log-node", false]]) {
    const sel = $(id);
    const want = nodes.filter(n => n.state === "alive").map(n => n.node_id);
    const have = [...sel.options].map(o => o.value).filter(v => v);
    if (want.join() === have.join()) continue;
    const cur = sel.value;
    const opts = nodes.filter(n => n.state === "alive").map(n => el("option", { value: n.node_id }, nodeLabel(n)));
    sel.replaceChildren(...(withAll ? [el("option", { value: "" }, "all")] : []), ...opts);
    if ([...sel.options].some(o => o.value === cur)) sel.value = cur;
  }
}

function fillJobSelect() {
  const sel = $("filter-job");
  const want = state.jobs.map(j => j.job_id);
  const have = [...sel.options].map(o => o.value).filter(v => v);
  const cur = state.params.get("job") || "";
  if (want.join() !== have.join() || (cur && !want.includes(cur))) {
    const ids = cur && !want.includes(cur) ? [cur, ...want] : want;
    sel.replaceChildren(el("option", { value: "" }, "all"), ...ids.map(id => {
      const j = state.jobs.find(x => x.job_id === id);
      return el("option", { value: id }, short(id) + (j ? " · " + j.status : ""));
    }));
  }
  sel.value = cur;
}

function syncTaskFilter() {
  $("filter-node").value = state.params.get("node") || "";
  $("filter-state").value = state.params.get("state") || "";
  $("filter-name").value = state.params.get("name") || "";
}

function taskFilterChanged() {
  const p = new URLSearchParams();
  for (const [key, id] of [["job", "filter-job"], ["node", "filter-node"], ["state", "filter-state"], ["name", "filter-name"]]) {
    const v = $(id).value.trim();
    if (v) p.set(key, v);
  }
  const q = p.toString();
  location.hash = "#tasks" + (q ? "?" + q : "");
}

async function loadTasks() {
  if (Date.now() - state.jobsAt > 10000) {
    state.jobs = (await api("/api/jobs")).jobs;
    state.jobsAt = Date.now();
  }
  fillJobSelect();
  const q = new URLSearchParams(state.params);
  q.set("limit", "1000");
  const v = await api("/api/tasks?" + q.toString());
  $("count-queued").textContent = fmtNum(v.counts.queued);
  $("count-running").textContent = fmtNum(v.counts.running);
  $("count-finished").textContent = fmtNum(v.counts.finished);
  $("count-failed").textContent = fmtNum(v.counts.failed);
  $("task-matching").textContent = `${fmtNum(v.matching)} matching` + (v.truncated ? `, newest ${fmtNum(v.tasks.length)} shown` : "");
  const rows = v.tasks.map(t => el("tr", { "data-task-id": t.task_id, "data-state": t.state, "data-job-id": t.job_id || "" },
    idCell(t.task_id),
    el("td", {}, t.name),
    el("td", {}, badge(t.state)),
    idCell(t.job_id, t.job_id ? "#tasks?job=" + t.job_id : null),
    idCell(t.node_id, "#logs?node=" + t.node_id),
    idCell(t.worker_id),
    el("td", {}, fmtTime(t.start_time)),
    el("td", { class: "num" }, fmtMs(t.duration_ms)),
    el("td", {}, t.trace_id
      ? (t.trace_url ? el("a", { class: "trace-link", href: t.trace_url, target: "_blank", rel: "noopener", title: t.trace_id }, short(t.trace_id))
        : el("span", { class: "id trace-id", title: t.trace_id }, t.trace_id))
      : el("span", { class: "muted" }, "not traced")),
    el("td", { class: "wrap" }, errorCell(t))));
  setRows($("tasks-table").tBodies[0], rows, 10, "no task attempts match");
}

// errorCell is a failed attempt's error: its first line, opening to the
// whole message and the stack of the goroutine that failed.
function errorCell(t) {
  if (t.state !== "failed") return null;
  if (!t.error) return el("span", { class: "muted" }, "not kept");
  const first = t.error.split("\n")[0];
  return el("details", { class: "task-error" },
    el("summary", {}, first.length > 80 ? first.slice(0, 80) + "…" : first),
    el("pre", {}, t.error + (t.remote_stack ? "\n\n" + t.remote_stack : "")));
}

// ---------- actors ----------

async function loadActors() {
  const q = new URLSearchParams();
  if (state.params.get("job")) q.set("job", state.params.get("job"));
  const v = await api("/api/actors?" + q.toString());
  $("actor-counts").replaceChildren(...["alive", "restarting", "pending", "dead"].map(s =>
    el("div", { class: "card" + (s === "dead" && v.counts[s] ? " bad" : s === "alive" ? " ok" : "") },
      el("div", { class: "label" }, s), el("div", { class: "value", id: "actors-" + s }, fmtNum(v.counts[s] || 0)))));
  const rows = v.actors.map(a => el("tr", { "data-actor-id": a.actor_id, "data-state": a.state },
    idCell(a.actor_id),
    el("td", {}, a.class),
    el("td", {}, a.name ? (a.namespace ? a.namespace + "/" : "") + a.name : el("span", { class: "muted" }, "anonymous")),
    el("td", {}, badge(a.state)),
    el("td", { class: "num" }, a.max_restarts < 0 ? `${a.num_restarts} / ∞` : `${a.num_restarts} / ${a.max_restarts}`),
    idCell(a.node_id, a.node_id ? "#logs?node=" + a.node_id : null),
    idCell(a.job_id, a.job_id ? "#tasks?job=" + a.job_id : null),
    el("td", { class: "wrap" }, a.death_cause ? [badge(a.death_cause.code, "dead"), " ", a.death_cause.message] : "–")));
  setRows($("actors-table").tBodies[0], rows, 8, "no actors");
}

// ---------- placement groups ----------

async function loadGroups() {
  const v = await api("/api/placement-groups");
  $("group-counts").replaceChildren(...["created", "pending", "rescheduling", "removed"].map(s =>
    el("div", { class: "card" + (s === "created" ? " ok" : "") },
      el("div", { class: "label" }, s), el("div", { class: "value", id: "groups-" + s }, fmtNum(v.counts[s] || 0)))));
  const rows = v.groups.map(g => el("tr", { "data-group-id": g.placement_group_id, "data-state": g.state },
    idCell(g.placement_group_id),
    el("td", {}, g.name ? (g.namespace ? g.namespace + "/" : "") + g.name : el("span", { class: "muted" }, "anonymous")),
    el("td", {}, g.strategy),
    el("td", {}, badge(g.state, g.state === "created" ? "alive" : g.state === "removed" ? "dead" : "pending")),
    el("td", { class: "wrap" }, g.bundles.map((b, i) => el("div", {},
      Object.keys(b).sort().map(k => k + " " + b[k]).join(", ") + " → ",
      g.bundle_nodes[i] ? el("a", { href: "#logs?node=" + g.bundle_nodes[i] }, short(g.bundle_nodes[i])) : el("span", { class: "muted" }, "none")))),
    el("td", { class: "num" }, fmtNum(g.reschedules || 0)),
    el("td", { class: "wrap" }, g.infeasible ? [badge("infeasible", "dead"), " ", g.reason] : (g.reason || "–"))));
  setRows($("groups-table").tBodies[0], rows, 7, "no placement groups");
}

// ---------- memory ----------

function drawMemory() {
  const c = state.cluster;
  const live = c.nodes.filter(n => n.state === "alive" && n.reporting);
  const cells = m => [
    el("td", {}, usageBar(m.store_used_bytes, m.store_capacity_bytes)),
    el("td", { class: "num" }, fmtBytes(m.store_capacity_bytes)),
    el("td", { class: "num" }, fmtBytes(m.pinned_bytes)),
    el("td", { class: "num" }, fmtNum(m.objects)),
    el("td", { class: "num" }, fmtBytes(m.spilled_bytes)),
    el("td", { class: "num" }, fmtNum(m.spill_files)),
    el("td", { class: "num" }, fmtBytes(m.spilled_bytes_total)),
    el("td", { class: "num" }, fmtBytes(m.restored_bytes_total)),
    el("td", { class: "num" }, fmtNum(m.pulls)),
    el("td", { class: "num" }, fmtBytes(m.pulled_bytes))];
  setRows($("memory-table").tBodies[0], live.map(n => el("tr", { "data-node-id": n.node_id },
    idCell(n.node_id), el("td", {}, badge(n.role, n.role === "head" ? "head" : "")), ...cells(n))), 12, "no node reports");
  $("memory-table").tFoot.replaceChildren(
    el("tr", {}, el("td", {}, "cluster"), el("td", {}), ...cells(c.totals)),
    el("tr", {}, el("td", {}, "drivers' stores"), el("td", {}), ...cells(c.drivers)));
}

// ---------- timeline ----------

async function loadTimeline() {
  const q = new URLSearchParams();
  for (const k of ["job", "node"]) if (state.params.get(k)) q.set(k, state.params.get(k));
  const v = await api("/api/timeline?" + q.toString());
  drawTimeline(v);
}

// drawTimeline draws one lane per worker, grouped by node, and one bar
// per task attempt (coloured by task name, failed ones outlined).
function drawTimeline(v) {
  const box = $("timeline");
  const evs = v.events;
  $("timeline-info").textContent = evs.length
    ? `${fmtNum(evs.length)} task attempts over ${fmtMs((v.end_us - v.start_us) / 1000)}` + (v.truncated ? " (the newest)" : "")
    : "";
  if (!evs.length) {
    box.replaceChildren(el("p", { class: "muted" }, "No task attempts yet."));
    return;
  }
  const nodes = state.cluster ? state.cluster.nodes : [];
  const nodeName = id => { const n = nodes.find(x => x.node_id === id); return n ? nodeLabel(n) : short(id); };
  const lanes = new Map(); // node -> [workers]
  for (const e of evs) {
    if (!lanes.has(e.node_id)) lanes.set(e.node_id, []);
    const ws = lanes.get(e.node_id);
    if (!ws.includes(e.worker_id)) ws.push(e.worker_id);
  }
  // Nodes in the overview's order (the head first), workers by first task.
  const order = id => { const i = nodes.findIndex(x => x.node_id === id); return i < 0 ? nodes.length : i; };
  const sortedLanes = [...lanes].sort((a, b) => order(a[0]) - order(b[0]));
  const laneH = 22, nodeH = 22, labelW = 170, axisH = 24;
  const width = Math.max(box.clientWidth - 2, 700);
  const plotW = width - labelW - 16;
  const span = Math.max(v.end_us - v.start_us, 1);
  const names = [...new Set(evs.map(e => e.name))].sort();
  const nameColor = name => colorOf(name, names);
  const x = us => labelW + ((us - v.start_us) / span) * plotW;
  let yPos = axisH;
  const parts = [];
  const laneY = new Map();
  for (const [node, workers] of sortedLanes) {
    parts.push(svg("text", { class: "node-label", x: 6, y: yPos + 15 }, "node " + nodeName(node)));
    yPos += nodeH;
    for (const w of workers) {
      parts.push(svg("rect", { class: "lane", x: labelW, y: yPos + 1, width: plotW, height: laneH - 2 }));
      parts.push(svg("text", { class: "lane-label", x: 16, y: yPos + 15 }, "worker " + short(w)));
      laneY.set(node + "/" + w, yPos);
      yPos += laneH;
    }
  }
  const height = yPos + 6;
  for (let i = 0; i <= 5; i++) {
    const us = v.start_us + (span * i) / 5;
    parts.unshift(svg("line", { class: "gridline", x1: x(us), x2: x(us), y1: axisH - 4, y2: height }));
    parts.push(svg("text", { class: "tick", x: x(us), y: 14, "text-anchor": i === 0 ? "start" : i === 5 ? "end" : "middle" },
      i === 0 ? fmtClock(us) : "+" + fmtMs((us - v.start_us) / 1000)));
  }
  for (const e of evs) {
    const y0 = laneY.get(e.node_id + "/" + e.worker_id);
    const w = Math.max(x(e.end_us) - x(e.start_us), 2);
    const r = svg("rect", { class: "event" + (e.failed ? " failed" : ""), x: x(e.start_us), y: y0 + 3, width: w, height: laneH - 6,
      rx: 2, fill: nameColor(e.name), "data-task-id": e.task_id },
      svg("title", {}, `${e.name} ${e.failed ? "(failed) " : ""}${fmtMs((e.end_us - e.start_us) / 1000)}\ntask ${e.task_id}`));
    r.addEventListener("mouseenter", () => {
      $("timeline-detail").textContent = `${e.name} · ${e.failed ? "failed" : "finished"} · ${fmtMs((e.end_us - e.start_us) / 1000)} · ` +
        `started ${fmtClock(e.start_us)} · task ${e.task_id}` + (e.trace_id ? ` · trace ${e.trace_id}` : "");
    });
    parts.push(r);
  }
  const legend = el("div", { class: "legend timeline-legend" }, ...names.map(name => {
    const sw = el("span", { class: "swatch" });
    sw.style.background = nameColor(name);
    return el("span", {}, sw, name);
  }), evs.some(e => e.failed) ? el("span", {}, el("span", { class: "swatch failed" }), "failed") : null);
  box.replaceChildren(svg("svg", { width, height, viewBox: `0 0 ${width} ${height}` }, parts), legend);
}

// ---------- logs ----------

async function loadLogs() {
  const sel = $("log-node");
  const job = state.params.get("job");
  if (job) return loadJobLog(job);
  const want = state.params.get("node");
  if (want && [...sel.options].some(o => o.value === want)) sel.value = want;
  if (!sel.value) { $("log-text").textContent = "No live node."; return; }
  if (!$("log-follow").checked && $("log-text").dataset.node === sel.value && $("log-text").dataset.bytes === $("log-bytes").value) return;
  const v = await api(`/api/logs/${encodeURIComponent(sel.value)}?bytes=${encodeURIComponent($("log-bytes").value)}`);
  const pre = $("log-text");
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 20;
  pre.dataset.node = sel.value;
  delete pre.dataset.job;
  pre.dataset.bytes = $("log-bytes").value;
  pre.textContent = v.file ? v.text : "This node has no log file (it was not started by `atoll start` or with node.Config.LogFile).";
  $("log-info").textContent = v.file ? `${v.file} · ${fmtBytes(v.size_bytes)}` + (v.truncated ? " · showing its end" : "") : "";
  if (atEnd || $("log-follow").checked) pre.scrollTop = pre.scrollHeight;
}

// A submitted job's log (#logs?job=ID), read from the node that runs
// its driver.
async function loadJobLog(job) {
  const pre = $("log-text");
  if (!$("log-follow").checked && pre.dataset.job === job && pre.dataset.bytes === $("log-bytes").value) return;
  const v = await api(`/api/logs/job/${encodeURIComponent(job)}?bytes=${encodeURIComponent($("log-bytes").value)}`);
  const atEnd = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 20;
  pre.dataset.job = job;
  delete pre.dataset.node;
  pre.dataset.bytes = $("log-bytes").value;
  pre.textContent = v.text;
  $("log-info").textContent = `job ${job.slice(0, 8)} · ${fmtBytes(v.size_bytes)}` + (v.truncated ? " · showing its end" : "") + (v.final ? " · ended" : "");
  if (atEnd || $("log-follow").checked) pre.scrollTop = pre.scrollHeight;
}

function logChoiceChanged() {
  location.hash = "#logs?node=" + encodeURIComponent($("log-node").value);
}

// ---------- start ----------

window.addEventListener("hashchange", route);
document.addEventListener("DOMContentLoaded", () => {
  $("login").addEventListener("submit", login);
  for (const id of ["filter-job", "filter-node", "filter-state"]) $(id).addEventListener("change", taskFilterChanged);
  let typing;
  $("filter-name").addEventListener("input", () => { clearTimeout(typing); typing = setTimeout(taskFilterChanged, 300); });
  $("task-filter").addEventListener("submit", e => { e.preventDefault(); taskFilterChanged(); });
  $("log-node").addEventListener("change", logChoiceChanged);
  $("log-bytes").addEventListener("change", refresh);
  $("log-form").addEventListener("submit", e => e.preventDefault());
  route();
});
