// A series' chart with uPlot: the median of each run with its interval band, its change
// points and kernel or toolchain changes as vertical lines, a tooltip that follows the
// cursor (value, interval, run, commit, machine), drag to zoom, and a click that picks a run:
// its report and links to compare it. Data: the chart element's data-series and window.RUNS
// (the suite's runs, a <script> file). Names go in as text.
(function () {
  "use strict";
  const box = document.getElementById("chart");
  const tip = document.getElementById("tip");
  const picked = document.getElementById("picked");
  const s = JSON.parse(box.dataset.series);
  const runs = window.RUNS.runs;
  const xs = s.points.map(function (_, i) { return i; });
  const median = s.points.map(function (p) { return p[1]; });
  const low = s.points.map(function (p) { return p[2]; });
  const high = s.points.map(function (p) { return p[3]; });
  const MARK = { regression: "#dc2626", improvement: "#16a34a", change: "#9333ea", annotation: "#6b7280" };
  const marksAt = {};
  s.marks.forEach(function (m) { (marksAt[m[0]] = marksAt[m[0]] || []).push(m); });

  function runAt(i) { return runs[s.points[i][0]]; }
  // Runs are labelled by day, or by day and time when a day has more than one (a night's
  // reruns, a day of QUICK benches): equal labels side by side say nothing.
  const days = s.points.map(function (_, i) { return runAt(i).date.slice(0, 10); });
  const dayRepeats = new Set(days).size < days.length;
  function axisLabel(run) {
    return dayRepeats ? run.date.slice(5, 16).replace("T", " ") : run.date.slice(0, 10);
  }
  function figure(v) { return v === null || v === undefined ? "-" : Number(v.toPrecision(5)).toString(); }

  function drawMarks(u) {
    const ctx = u.ctx;
    ctx.save();
    s.marks.forEach(function (m) {
      const x = Math.round(u.valToPos(m[0], "x", true));
      if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) return;
      ctx.strokeStyle = MARK[m[1]] || "#000";
      ctx.lineWidth = m[1] === "annotation" ? 1 : 2 * devicePixelRatio;
      ctx.setLineDash(m[1] === "annotation" ? [4 * devicePixelRatio, 3 * devicePixelRatio] : []);
      ctx.beginPath();
      ctx.moveTo(x, u.bbox.top);
      ctx.lineTo(x, u.bbox.top + u.bbox.height);
      ctx.stroke();
    });
    ctx.restore();
  }

  function row(text, css) {
    const div = document.createElement("div");
    div.textContent = text;
    if (css) div.className = css;
    return div;
  }

  function showTip(u) {
    const i = u.cursor.idx;
    if (i === null || i === undefined || u.cursor.left < 0) {
      tip.hidden = true;
      return;
    }
    const run = runAt(i);
    const lines = [
      row(figure(median[i]) + (s.unit ? " " + s.unit : ""), "tip-value"),
      row("interval " + figure(low[i]) + " \u2013 " + figure(high[i])),
      row("run " + run.id),
      row("commit " + run.commit),
      row("machine " + s.machine),
      row(run.date + (run.kernel ? " \u00b7 kernel " + run.kernel : "")),
    ];
    (marksAt[i] || []).forEach(function (m) { lines.push(row(m[2], "tip-" + m[1])); });
    tip.replaceChildren.apply(tip, lines);
    tip.hidden = false;
    tip.dataset.index = String(i);
    // Beside the cursor, on the side with room.
    const left = u.over.offsetLeft + u.cursor.left;
    const right = left + 16 + tip.offsetWidth > box.clientWidth;
    tip.style.left = (right ? left - tip.offsetWidth - 16 : left + 16) + "px";
    tip.style.top = (u.over.offsetTop + Math.max(0, u.cursor.top - 20)) + "px";
  }

  function link(text, href) {
    const a = document.createElement("a");
    a.textContent = text;
    a.href = href;
    return a;
  }
  function compareHref(a, b) {
    return window.RUNS.compare + "#a=" + encodeURIComponent(a.id) + "&b=" + encodeURIComponent(b.id);
  }
  let previousPick = null;
  function pick(i) {
    const run = runAt(i);
    const parts = [row("run " + run.id + " (commit " + run.commit + "): " + figure(median[i]) + " " + s.unit)];
    const links = document.createElement("div");
    links.appendChild(link("its report", run.report));
    if (i > 0) {
      links.appendChild(document.createTextNode(" \u00b7 "));
      links.appendChild(link("compare with the run before", compareHref(runAt(i - 1), run)));
    }
    if (previousPick !== null && previousPick !== i) {
      links.appendChild(document.createTextNode(" \u00b7 "));
      links.appendChild(link("compare with " + runAt(previousPick).id, compareHref(runAt(previousPick), run)));
    }
    parts.push(links);
    picked.replaceChildren.apply(picked, parts);
    picked.dataset.index = String(i);
    previousPick = i;
  }

  const width = Math.max(320, Math.min(1100, box.clientWidth || 900));
  const opts = {
    width: width,
    height: 320,
    scales: { x: { time: false } },
    legend: { show: false },
    cursor: { drag: { x: true, y: false, setScale: true }, points: { size: 8 } },
    // Room on the right for the last run's label, which is centred on the plot's edge.
    padding: [12, 44, 0, 0],
    axes: [
      {
        // Ticks on runs only (the x scale is the run's index), far enough apart for a label.
        incrs: [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000],
        space: 96,
        values: function (u, ticks) {
          return ticks.map(function (t) {
            return Number.isInteger(t) && s.points[t] ? axisLabel(runAt(t)) : "";
          });
        },
      },
      { label: s.unit, size: 70 },
    ],
    series: [
      { label: "run" },
      { label: "median", stroke: "#2563eb", width: 1.5, points: { show: s.points.length <= 120 } },
      { label: "low", stroke: "rgba(37,99,235,0.25)", width: 1, points: { show: false } },
      { label: "high", stroke: "rgba(37,99,235,0.25)", width: 1, points: { show: false } },
    ],
    bands: [{ series: [3, 2], fill: "rgba(59,130,246,0.18)" }],
    hooks: { draw: [drawMarks], setCursor: [showTip] },
  };
  const plot = new uPlot(opts, [xs, median, low, high], box);
  plot.over.addEventListener("mouseleave", function () { tip.hidden = true; });
  // A click picks the run under the cursor; a drag (a zoom) is not a click.
  let downAt = null;
  plot.over.addEventListener("mousedown", function (ev) { downAt = [ev.clientX, ev.clientY]; });
  plot.over.addEventListener("click", function (ev) {
    const moved = downAt && Math.abs(ev.clientX - downAt[0]) + Math.abs(ev.clientY - downAt[1]) > 3;
    if (!moved && plot.cursor.idx !== null && plot.cursor.idx !== undefined) pick(plot.cursor.idx);
  });
  document.getElementById("reset").addEventListener("click", function () {
    plot.setScale("x", { min: 0, max: xs.length - 1 });
  });
  window.dashboardChart = plot;
  document.body.dataset.charted = "yes";
})();
