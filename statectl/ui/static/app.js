// statectl ui: polls the dashboard's JSON API (/api/...) once a second and draws what it says.
// Text goes in with textContent only: job names, errors and paths come from files.
(function () {
  "use strict";

  const POLL_MS = 1000;
  const KEEP_POINTS = 5000; // the newest points drawn (the API sends at most as many at once)
  const C = window.Charts;
  const CHARTS = [
    { id: "records_behind", title: "Lag (records)", series: [{ key: "records_behind", label: "records behind", cls: "s1" }] },
    { id: "lag_seconds", title: "Lag (seconds)", format: C.seconds, series: [{ key: "lag_seconds", label: "seconds behind", cls: "s2" }] },
    {
      id: "throughput", title: "Throughput (rows/s)", series: [
        { key: "input_rows_per_second", label: "input", cls: "s3" },
        { key: "processed_rows_per_second", label: "processed", cls: "s4" }],
    },
    { id: "batch_duration", title: "Batch duration", format: C.millis, series: [{ key: "batch_duration_ms", label: "batch", cls: "s5" }] },
    { id: "state_rows", title: "State rows", series: [{ key: "state_rows_total", label: "rows in state", cls: "s6" }] },
    { id: "state_memory", title: "State memory", format: C.bytes, series: [{ key: "state_memory_bytes", label: "memory", cls: "s7" }] },
  ];

  const view = { jobs: [], selected: null, points: [], next: 0, generation: null, drawnPoints: -1, busy: false,
    advice: null, adviceSaid: null };
  const $ = (id) => document.getElementById(id);

  function el(tag, text, cls) {
    const e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }

  function when(t) {
    return t ? new Date(t * 1000).toLocaleString() : "–";
  }

  async function api(path) {
    const res = await fetch(path, { credentials: "same-origin", headers: { Accept: "application/json" } });
    const body = await res.json().catch(() => ({}));
    if (!res.ok) {
      const err = new Error(body.error || res.status + " " + res.statusText);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function status(text, bad) {
    const s = $("status");
    s.textContent = text;
    s.className = bad ? "problem" : "dim";
  }

  // ---------------------------------------------------------------- the job list
  function stateBadge(state) {
    return el("span", state, "state state-" + String(state || "none").toLowerCase());
  }

  function drawJobs(body) {
    view.jobs = body.jobs;
    const project = body.project || {};
    $("project").textContent = project.file ? project.file + (project.context ? " · context " + project.context : "") : "";
    const tbody = $("jobs").tBodies[0];
    tbody.textContent = "";
    $("no-jobs").hidden = body.jobs.length > 0;
    for (const job of body.jobs) {
      const tr = document.createElement("tr");
      tr.dataset.job = job.name;
      if (job.name === view.selected) tr.className = "selected";
      const link = el("a", job.name);
      link.href = "#job=" + encodeURIComponent(job.name);
      const name = el("td");
      name.appendChild(link);
      tr.appendChild(name);
      const st = el("td");
      st.appendChild(stateBadge(job.state));
      tr.appendChild(st);
      tr.appendChild(el("td", job.last_batch ?? "–", "num"));
      tr.appendChild(el("td", C.num(job.records_behind), "num lag-records"));
      tr.appendChild(el("td", C.seconds(job.lag_seconds), "num lag-seconds"));
      tr.appendChild(el("td", C.num(job.processed_rows_per_second), "num"));
      tbody.appendChild(tr);
    }
    if (!view.selected && body.jobs.length) select(body.jobs[0].name);
  }

  // ---------------------------------------------------------------- one job
  function card(label, value, id) {
    const c = el("div", null, "card");
    c.appendChild(el("div", label, "label"));
    const v = el("div", value, "value");
    v.id = id;
    c.appendChild(v);
    return c;
  }

  function drawJob(job) {
    $("job").hidden = false;
    $("job-name").textContent = job.name;
    const paths = [];
    if (job.job && job.job !== job.name) paths.push("job " + job.job);
    if (job.config) paths.push("config " + job.config);
    if (job.checkpoint) paths.push("checkpoint " + job.checkpoint);
    paths.push("events " + job.events_file);
    if (job.bootstrap_servers) paths.push("Kafka " + job.bootstrap_servers);
    $("job-paths").textContent = paths.join(" · ");
    const problems = [job.problem, job.checkpoint_error, job.events.error].filter(Boolean);
    $("job-problem").hidden = !problems.length;
    $("job-problem").textContent = problems.join("; ");

    const cards = $("cards");
    cards.textContent = "";
    const st = card("state", "", "card-state");
    st.querySelector(".value").appendChild(stateBadge(job.state));
    if (job.pid) st.appendChild(el("div", "pid " + job.pid, "dim"));
    cards.appendChild(st);
    cards.appendChild(card("last batch", job.last_batch ?? "–", "card-batch"));
    cards.appendChild(card("lag (records)", C.num(job.records_behind), "card-lag-records"));
    cards.appendChild(card("lag (seconds)", C.seconds(job.lag_seconds), "card-lag-seconds"));
    cards.appendChild(card("processed rows/s", C.num(job.processed_rows_per_second), "card-rate"));
    cards.appendChild(card("last batch took", C.millis(job.batch_duration_ms), "card-duration"));
    cards.appendChild(card("state rows", C.num(job.state_rows_total), "card-state-rows"));
    if (job.error) {
      const e = card("error", "", "card-error");
      e.querySelector(".value").appendChild(el("span", job.error, "problem"));
      e.classList.add("wide");
      cards.appendChild(e);
    }
    drawAdvice(job.state_advice);
    drawRestore(job);
    drawRuns(job.runs || []);
    const inspectable = Boolean(job.checkpoint_exists);
    $("inspect").disabled = !inspectable;
    if (!inspectable && !$("checkpoint").childElementCount) {
      $("inspect-status").textContent = job.checkpoint ? "no checkpoint at " + job.checkpoint + " yet" : "no checkpoint known (no job config)";
    } else if (inspectable && $("inspect-status").textContent.startsWith("no checkpoint")) {
      $("inspect-status").textContent = ""; // the run made it since
    }
    const ev = job.events;
    const p = $("events-problems");
    p.hidden = !ev.skipped_lines && !ev.skipped_bytes && ev.exists;
    const notes = [];
    if (ev.skipped_bytes) notes.push("the events file's first " + C.bytes(ev.skipped_bytes) + " not read (a large file: its newest part is)");
    if (ev.skipped_lines) notes.push(ev.skipped_lines + " line(s) of the events file skipped: " + (ev.problems || []).slice(0, 3).join("; "));
    p.textContent = !ev.exists ? "No events file yet (" + job.events_file + "): the charts fill in when a run writes one."
      : notes.join("; ");
  }

  // statectl advise's verdict: a banner per warning (with its fix), the projection on the state chart
  function drawAdvice(advice) {
    const said = JSON.stringify(advice || null);
    if (said === view.adviceSaid) return;
    view.adviceSaid = said;
    view.advice = advice || null;
    const box = $("state-advice");
    box.textContent = "";
    const findings = (advice && advice.findings) || [];
    box.hidden = !findings.length;
    for (const f of findings) {
      const p = el("p", null, "advice-" + f.severity);
      p.appendChild(el("strong", f.severity + " " + f.code + ": "));
      p.appendChild(document.createTextNode(f.message));
      if (f.fix) p.appendChild(el("span", " fix: " + f.fix, "dim"));
      box.appendChild(p);
    }
    view.drawnPoints = -1; // the state chart's projection changed
  }

  function bar(label, done, total, cls) {
    const row = el("div", null, "bar " + cls);
    row.appendChild(el("span", label, "label"));
    const prog = document.createElement("progress");
    if (total !== null && total !== undefined) {
      prog.max = Math.max(total, 1);
      prog.value = total === 0 ? 1 : Math.min(done || 0, total); // nothing to do is done
    }
    row.appendChild(prog);
    row.appendChild(el("span", total === null || total === undefined ? "–" : (done || 0) + " / " + total, "count"));
    return row;
  }

  function drawRestore(job) {
    const box = $("restore-ops");
    box.textContent = "";
    const ops = job.restores || [];
    $("restore").hidden = ops.length === 0;
    $("restore").classList.toggle("active", job.state === "RESTORING");
    for (const op of ops) {
      const div = el("div", null, "restore-op");
      div.dataset.operator = op.operator_id;
      const head = "operator " + op.operator_id + (op.operator ? " · " + op.operator : "") +
        (op.finished ? " · restored in " + C.millis(op.duration_ms) + (op.replay_files !== null ? ", " + op.replay_files + " changelog file(s) replayed" : "")
          : " · restoring…");
      div.appendChild(el("div", head, "restore-head"));
      div.appendChild(bar("stores loaded", op.finished ? op.stores_total : op.stores_loaded, op.stores_total, "stores"));
      div.appendChild(bar("changelog files replayed", op.finished ? (op.replay_files ?? op.files_replayed) : op.files_replayed,
        op.files_to_replay, "files"));
      div.appendChild(bar("tasks done", op.tasks_done, op.tasks_total, "tasks"));
      div.appendChild(el("div", "plan: " + C.bytes(op.snapshot_bytes) + " of snapshots, " + C.bytes(op.replay_bytes) + " of changelogs", "dim"));
      for (const note of op.notes || []) div.appendChild(el("div", note, "dim"));
      box.appendChild(div);
    }
  }

  function drawRuns(runs) {
    const tbody = $("runs").tBodies[0];
    tbody.textContent = "";
    for (const run of runs.slice().reverse()) {
      const tr = document.createElement("tr");
      tr.appendChild(el("td", (run.run_id || "–").slice(0, 8), "mono"));
      tr.appendChild(el("td", when(run.started)));
      const st = el("td");
      st.appendChild(stateBadge(run.state));
      tr.appendChild(st);
      tr.appendChild(el("td", run.trigger || "–"));
      tr.appendChild(el("td", run.batches, "num"));
      tr.appendChild(el("td", run.last_batch ?? "–", "num"));
      tr.appendChild(el("td", run.error || "", "problem"));
      tbody.appendChild(tr);
    }
  }

  function drawCharts() {
    if (view.drawnPoints === view.points.length) return;
    view.drawnPoints = view.points.length;
    const host = $("charts");
    const boxes = CHARTS.map((spec) => {
      let box = host.querySelector('[data-box="' + spec.id + '"]');
      if (!box) {
        box = el("div", null, "chart-box");
        box.dataset.box = spec.id;
        host.appendChild(box);
      }
      return [box, spec];
    });
    for (const [box, spec] of boxes) {
      C.draw(box, spec, view.points);
      const advice = view.advice;
      if (spec.id === "state_rows" && advice && advice.trend) {
        const rate = advice.rows_per_hour ? ", " + C.num(Math.round(advice.rows_per_hour)) + " rows an hour" : "";
        const text = "trend: " + advice.trend + rate + (advice.projection ? "; " + advice.projection.text : "");
        box.appendChild(el("p", text, "projection " + (advice.warned ? "problem" : "dim")));
      }
    }
  }

  // ---------------------------------------------------------------- the checkpoint report
  const LABELS = {
    batches: "batches", sources: "sources", operators: "stateful operators", restore_plan: "restore plan",
    conf: "confs pinned in the offset log", totals: "files and bytes", verdict_for: "verdict for",
  };

  function leaf(key, value) {
    const li = el("li");
    li.appendChild(el("span", key, "key"));
    li.appendChild(el("span", value === null ? "null" : typeof value === "object" ? JSON.stringify(value) : String(value), "val"));
    return li;
  }

  function tree(key, value, open, depth) {
    if (value === null || typeof value !== "object") return leaf(key, value);
    const entries = Array.isArray(value) ? value.map((v, i) => [label(v, i), v]) : Object.entries(value);
    if (!entries.length) return leaf(key, Array.isArray(value) ? "[]" : "{}");
    const li = el("li");
    const det = document.createElement("details");
    det.open = open;
    const sum = el("summary", key + (Array.isArray(value) ? " (" + value.length + ")" : ""));
    det.appendChild(sum);
    const ul = el("ul");
    for (const [k, v] of entries) ul.appendChild(tree(k, v, depth < 1, depth + 1));
    det.appendChild(ul);
    li.appendChild(det);
    return li;
  }

  function label(item, i) {
    if (item && typeof item === "object") {
      if (item.operator_id !== undefined && item.name !== undefined) return "operator " + item.operator_id + " · " + item.name;
      if (item.partition !== undefined) return "partition " + item.partition + (item.store ? " · " + item.store : "");
      if (item.path !== undefined && item.kind !== undefined) return item.path + " · " + item.kind;
      if (item.name !== undefined) return String(item.name);
    }
    return String(i);
  }

  function drawCheckpoint(report) {
    const box = $("checkpoint");
    box.textContent = "";
    const verdict = el("p", report.healthy ? "healthy" : "unhealthy", report.healthy ? "ok" : "problem");
    verdict.id = "checkpoint-verdict";
    box.appendChild(verdict);
    const ul = el("ul", null, "tree");
    ul.id = "checkpoint-tree";
    const root = {};
    for (const k of ["query_id", "provider", "format_version", "changelog_checkpointing", "batches", "sources", "operators", "restore_plan", "totals", "verdict_for", "conf"]) {
      if (k in report) root[LABELS[k] || k] = report[k];
    }
    ul.appendChild(tree(report.checkpoint, root, true, 0));
    box.appendChild(ul);
    const table = el("table");
    table.id = "findings";
    const head = el("tr");
    for (const h of ["severity", "code", "finding", "path"]) head.appendChild(el("th", h));
    table.appendChild(el("thead")).appendChild(head);
    const body = el("tbody");
    for (const f of report.findings || []) {
      const tr = el("tr", null, "finding finding-" + f.severity);
      tr.appendChild(el("td", f.severity, "sev-" + f.severity));
      tr.appendChild(el("td", f.code, "mono"));
      tr.appendChild(el("td", f.message));
      tr.appendChild(el("td", f.path || "", "mono"));
      body.appendChild(tr);
    }
    if (!(report.findings || []).length) {
      const tr = el("tr");
      const td = el("td", "no findings", "dim");
      td.colSpan = 4;
      tr.appendChild(td);
      body.appendChild(tr);
    }
    table.appendChild(body);
    box.appendChild(el("h4", "Findings"));
    box.appendChild(table);
  }

  async function inspect() {
    if (!view.selected) return;
    const name = view.selected;
    $("inspect-status").textContent = "reading the checkpoint…";
    try {
      const report = await api("/api/jobs/" + encodeURIComponent(name) + "/checkpoint");
      if (name !== view.selected) return;
      drawCheckpoint(report);
      $("inspect-status").textContent = "read " + new Date().toLocaleTimeString();
    } catch (e) {
      $("checkpoint").textContent = "";
      $("inspect-status").textContent = e.message;
    }
  }

  // ---------------------------------------------------------------- polling
  function select(name) {
    if (name === view.selected) return;
    view.selected = name;
    view.points = [];
    view.next = 0;
    view.generation = null;
    view.drawnPoints = -1;
    view.adviceSaid = null;
    $("checkpoint").textContent = "";
    $("inspect-status").textContent = "";
    for (const tr of $("jobs").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.job === name);
    if (location.hash !== "#job=" + encodeURIComponent(name)) history.replaceState(null, "", "#job=" + encodeURIComponent(name));
    tick();
  }

  async function loadSelected() {
    const name = view.selected;
    const base = "/api/jobs/" + encodeURIComponent(name);
    const [job, series] = await Promise.all([api(base), api(base + "/series?from=" + view.next)]);
    if (name !== view.selected) return;
    if (view.generation !== null && series.generation !== view.generation) {
      // The events file was replaced: start over.
      view.points = [];
      view.generation = series.generation;
      view.next = 0;
      view.drawnPoints = -1;
      return loadSelected();
    }
    view.generation = series.generation;
    if (series.from !== view.next) view.points = []; // more than the API sends at once: its newest
    view.points = view.points.concat(series.points);
    if (view.points.length > KEEP_POINTS) view.points = view.points.slice(-KEEP_POINTS); // a page open for days
    view.next = series.next;
    drawJob(job);
    drawCharts();
  }

  async function tick() {
    if (view.busy) return;
    view.busy = true;
    try {
      drawJobs(await api("/api/jobs"));
      if (view.selected) await loadSelected();
      status("updated " + new Date().toLocaleTimeString());
    } catch (e) {
      status(e.status === 401 || e.status === 403 ? "refused (" + e.status + "): open the URL statectl ui printed" : "not reachable: " + e.message, true);
    } finally {
      view.busy = false;
    }
  }

  function fromHash() {
    const m = /^#job=(.+)$/.exec(location.hash);
    if (!m) return;
    let name;
    try {
      name = decodeURIComponent(m[1]);
    } catch (e) {
      return; // a hand-typed #job=%zz: no such job, nothing selected
    }
    select(name);
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("inspect").addEventListener("click", inspect);
    window.addEventListener("hashchange", fromHash);
    fromHash();
    tick();
    setInterval(tick, POLL_MS);
  });
})();
