// statectl's line charts: plain SVG, no library. Each drawn series keeps the numbers it was drawn
// from in data-points ([[time, value], ...]) so a test or a curious user can read them back.
(function () {
  "use strict";

  const NS = "http://www.w3.org/2000/svg";
  const W = 640, H = 190, M = { l: 64, r: 14, t: 12, b: 26 };

  function node(name, attrs, parent) {
    const e = document.createElementNS(NS, name);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
    if (parent) parent.appendChild(e);
    return e;
  }

  function niceStep(range, ticks) {
    const raw = range / Math.max(1, ticks);
    const mag = Math.pow(10, Math.floor(Math.log10(raw)));
    const norm = raw / mag;
    return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
  }

  function num(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(a >= 1e10 ? 0 : 1) + "G";
    if (a >= 1e6) return (v / 1e6).toFixed(a >= 1e7 ? 0 : 1) + "M";
    if (a >= 1e4) return (v / 1e3).toFixed(a >= 1e5 ? 0 : 1) + "k";
    if (Number.isInteger(v)) return String(v);
    return v.toFixed(a >= 100 ? 0 : a >= 10 ? 1 : 2);
  }

  function bytes(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let i = 0;
    while (Math.abs(v) >= 1024 && i < units.length - 1) { v /= 1024; i++; }
    return (i === 0 ? String(Math.round(v)) : v.toFixed(Math.abs(v) >= 100 ? 0 : 1)) + " " + units[i];
  }

  function millis(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    return v >= 10000 ? (v / 1000).toFixed(0) + " s" : v >= 1000 ? (v / 1000).toFixed(1) + " s" : Math.round(v) + " ms";
  }

  function seconds(v) {
    if (v === null || v === undefined || !isFinite(v)) return "–";
    if (v >= 3600) return (v / 3600).toFixed(1) + " h";
    if (v >= 60) return (v / 60).toFixed(1) + " min";
    return (v >= 10 ? v.toFixed(0) : v.toFixed(1)) + " s";
  }

  function clock(t) {
    const d = new Date(t * 1000);
    const p = (n) => String(n).padStart(2, "0");
    return p(d.getHours()) + ":" + p(d.getMinutes()) + ":" + p(d.getSeconds());
  }

  // draw(host, spec, points): spec = {id, title, format, series: [{key, label, cls}]};
  // points: [{time, run_id, <key>: number|null, ...}] in time order.
  function draw(host, spec, points) {
    host.textContent = "";
    const figure = document.createElement("figure");
    figure.className = "chart";
    figure.dataset.chart = spec.id;
    const caption = document.createElement("figcaption");
    caption.textContent = spec.title;
    const legend = document.createElement("span");
    legend.className = "legend";
    for (const s of spec.series) {
      const item = document.createElement("span");
      item.className = "key";
      const swatch = document.createElement("span");
      swatch.className = "swatch " + s.cls;
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(s.label));
      legend.appendChild(item);
    }
    caption.appendChild(legend);
    figure.appendChild(caption);
    const svg = node("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": spec.title });
    figure.appendChild(svg);
    host.appendChild(figure);

    const drawn = spec.series.map((s) => ({
      s, pts: points.filter((p) => p[s.key] !== null && p[s.key] !== undefined && p.time !== null)
        .map((p) => [p.time, p[s.key], p.run_id]),
    }));
    const all = drawn.flatMap((d) => d.pts);
    if (!all.length) {
      const t = node("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "empty" }, svg);
      t.textContent = "no data yet";
      for (const d of drawn) node("path", { d: "", class: "series " + d.s.cls, "data-key": d.s.key, "data-points": "[]" }, svg);
      return figure;
    }
    // Loops, not Math.min(...array): spreading a long array overflows the call stack.
    let t0 = Infinity, t1 = -Infinity, vmax = 0;
    for (const p of all) {
      if (p[0] < t0) t0 = p[0];
      if (p[0] > t1) t1 = p[0];
      if (p[1] > vmax) vmax = p[1];
    }
    if (t1 === t0) { t0 -= 1; t1 += 1; }
    const step = niceStep(vmax || 1, 4);
    const top = Math.max(step, Math.ceil((vmax || 1) / step) * step);
    const x = (t) => M.l + ((t - t0) / (t1 - t0)) * (W - M.l - M.r);
    const y = (v) => H - M.b - (v / top) * (H - M.t - M.b);

    const grid = node("g", { class: "grid" }, svg);
    for (let v = 0; v <= top + step / 2; v += step) {
      node("line", { x1: M.l, x2: W - M.r, y1: y(v), y2: y(v) }, grid);
      const label = node("text", { x: M.l - 6, y: y(v) + 4, "text-anchor": "end" }, grid);
      label.textContent = (spec.format || num)(v);
    }
    for (let i = 0; i <= 4; i++) {
      const t = t0 + ((t1 - t0) * i) / 4;
      const label = node("text", { x: x(t), y: H - 6, "text-anchor": i === 0 ? "start" : i === 4 ? "end" : "middle" }, grid);
      label.textContent = clock(t);
    }

    for (const d of drawn) {
      // A new run or a missing value starts a new segment: no line across a restart.
      let path = "", prevRun, segment = [];
      const lone = [];
      d.pts.forEach((p, i) => {
        const starts = i === 0 || p[2] !== prevRun;
        if (starts) { if (segment.length === 1) lone.push(segment[0]); segment = []; }
        segment.push(p);
        path += (starts ? "M" : "L") + x(p[0]).toFixed(1) + "," + y(p[1]).toFixed(1);
        prevRun = p[2];
      });
      if (segment.length === 1) lone.push(segment[0]);
      node("path", {
        d: path, class: "series " + d.s.cls, "data-key": d.s.key,
        "data-points": JSON.stringify(d.pts.map((p) => [p[0], p[1]])),
      }, svg);
      // A run of one batch is a dot: a path of one point draws nothing.
      for (const p of lone) node("circle", { cx: x(p[0]), cy: y(p[1]), r: 3, class: "dot " + d.s.cls }, svg);
    }

    // Hover: the values nearest the pointer.
    const cursor = node("line", { y1: M.t, y2: H - M.b, class: "cursor", visibility: "hidden" }, svg);
    const readout = node("text", { y: M.t + 10, class: "readout", visibility: "hidden" }, svg);
    svg.addEventListener("mousemove", (ev) => {
      const box = svg.getBoundingClientRect();
      const px = ((ev.clientX - box.left) / box.width) * W;
      const t = t0 + ((px - M.l) / (W - M.l - M.r)) * (t1 - t0);
      let best = null;
      for (const p of points) if (p.time !== null && (best === null || Math.abs(p.time - t) < Math.abs(best.time - t))) best = p;
      if (!best) return;
      cursor.setAttribute("x1", x(best.time));
      cursor.setAttribute("x2", x(best.time));
      cursor.setAttribute("visibility", "visible");
      const parts = spec.series.map((s) => s.label + " " + (spec.format || num)(best[s.key]));
      readout.textContent = clock(best.time) + (best.batch_id !== null && best.batch_id !== undefined ? " batch " + best.batch_id : "") + "  " + parts.join("  ");
      const right = x(best.time) > W / 2;
      readout.setAttribute("x", right ? x(best.time) - 6 : x(best.time) + 6);
      readout.setAttribute("text-anchor", right ? "end" : "start");
      readout.setAttribute("visibility", "visible");
    });
    svg.addEventListener("mouseleave", () => {
      cursor.setAttribute("visibility", "hidden");
      readout.setAttribute("visibility", "hidden");
    });
    return figure;
  }

  window.Charts = { draw, num, bytes, millis, seconds, clock };
})();
