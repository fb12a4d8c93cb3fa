// A suite's heat grid (strategy x scenario and parameters) of one metric at a time, from
// window.SUITE (a <script> file beside the page). Each cell is coloured by its change since
// the previous run or by its ratio to the baseline, in units of the series' noise floor; a
// change since the previous run smaller than the series' minimum detectable change is not
// coloured. Figures come written as the tables write them. Names go in as text.
(function () {
  "use strict";
  const data = window.SUITE;
  const metricPick = document.getElementById("metric");
  const againstPick = document.getElementById("against");
  const strategyPick = document.getElementById("f-strategy");
  const scenarioPick = document.getElementById("f-scenario");
  const paramsBox = document.getElementById("f-params");
  const table = document.getElementById("grid");
  const empty = document.getElementById("grid-empty");
  const ALL = "\u0000all";

  function options(select, values, all) {
    if (all) values = [ALL].concat(values);
    values.forEach(function (v) {
      const option = document.createElement("option");
      option.value = v;
      option.textContent = v === ALL ? "all" : v;
      select.appendChild(option);
    });
  }
  options(metricPick, data.metrics.map(function (m) { return m.name; }), false);
  metricPick.value = data.headline;
  options(strategyPick, data.strategies, true);
  const scenarios = Array.from(new Set(data.columns.map(function (c) { return c.scenario; })));
  options(scenarioPick, scenarios.sort(), true);
  // One filter per parameter, with the values the columns have.
  const paramValues = {};
  data.columns.forEach(function (c) {
    Object.keys(c.params).forEach(function (k) {
      (paramValues[k] = paramValues[k] || new Set()).add(String(c.params[k]));
    });
  });
  const paramPicks = {};
  Object.keys(paramValues).sort().forEach(function (k) {
    const label = document.createElement("label");
    label.textContent = k + " ";
    const select = document.createElement("select");
    select.dataset.param = k;
    const values = Array.from(paramValues[k]);
    values.sort(function (a, b) { return (Number(a) - Number(b)) || a.localeCompare(b); });
    options(select, values, true);
    label.appendChild(select);
    paramsBox.appendChild(label);
    paramPicks[k] = select;
  });

  function metricOf(name) {
    return data.metrics.find(function (m) { return m.name === name; }) || {};
  }
  // "worse", "better", "moved" (no direction), "same" (within the noise, or smaller than the
  // minimum detectable change `least`, null: none applies) or "none".
  function tone(change, noise, better, within, least) {
    if (change === null || !isFinite(change)) return "none";
    if (within || Math.abs(change) <= noise) return "same";
    if (least !== null && Math.abs(change) < least) return "same";
    if (better !== "higher" && better !== "lower") return "moved";
    const worse = better === "higher" ? change < 0 : change > 0;
    return worse ? "worse" : "better";
  }
  const RGB = { worse: "220,38,38", better: "22,163,74", moved: "147,51,234" };
  function colour(kind, change, noise) {
    if (!RGB[kind]) return "";
    // Just past the noise: pale; four times the noise or more: deep.
    const depth = Math.min(1, (Math.abs(change) / noise - 1) / 3);
    return "rgba(" + RGB[kind] + "," + (0.2 + 0.55 * depth).toFixed(2) + ")";
  }
  function percent(v) {
    return (v >= 0 ? "+" : "") + (v * 100).toFixed(1) + "%";
  }
  function line(text, css) {
    const div = document.createElement("div");
    div.textContent = text;
    if (css) div.className = css;
    return div;
  }
  function shownColumns() {
    return data.columns
      .map(function (c, i) { return { c: c, i: i }; })
      .filter(function (x) {
        if (scenarioPick.value !== ALL && x.c.scenario !== scenarioPick.value) return false;
        return Object.keys(paramPicks).every(function (k) {
          const want = paramPicks[k].value;
          return want === ALL || String(x.c.params[k]) === want;
        });
      });
  }

  function render() {
    const metric = metricOf(metricPick.value);
    const against = againstPick.value;
    const cells = {};
    data.cells.forEach(function (c) {
      if (c.metric === metric.name) cells[c.strategy + "\u0000" + c.column] = c;
    });
    const columns = shownColumns();
    const strategies = data.strategies.filter(function (s) {
      return strategyPick.value === ALL || s === strategyPick.value;
    });
    const head = document.createElement("tr");
    const corner = document.createElement("th");
    corner.textContent = "strategy \\ " + metric.name + (metric.unit ? " (" + metric.unit + ")" : "");
    head.appendChild(corner);
    columns.forEach(function (x) {
      const th = document.createElement("th");
      th.appendChild(line(x.c.scenario));
      const params = Object.keys(x.c.params).map(function (k) { return k + "=" + x.c.params[k]; });
      th.appendChild(line(params.join(" ") || "-"));
      head.appendChild(th);
    });
    const rows = [head];
    strategies.forEach(function (strategy) {
      const tr = document.createElement("tr");
      const th = document.createElement("th");
      th.textContent = strategy + (strategy === data.baseline ? " (baseline)" : "");
      tr.appendChild(th);
      columns.forEach(function (x) {
        const td = document.createElement("td");
        const c = cells[strategy + "\u0000" + x.i];
        if (!c) {
          td.textContent = "-";
          tr.appendChild(td);
          return;
        }
        const sincePrevious = c.previous ? c.latest / c.previous - 1 : null;
        const toBase = c.base ? c.latest / c.base : null;
        const change = against === "baseline" ? (toBase === null ? null : toBase - 1) : sincePrevious;
        const within = against === "baseline" ? c.base_within : c.previous_within;
        const least = against === "baseline" ? null : c.least;
        const kind = tone(change, c.noise, metric.better, within, least);
        const a = document.createElement("a");
        a.href = "series/" + c.id + ".html";
        a.className = "cell";
        td.dataset.tone = kind;
        td.dataset.series = String(c.id);
        td.style.backgroundColor = colour(kind, change, c.noise);
        a.appendChild(line(c.latest_text, "value"));
        a.appendChild(line(sincePrevious === null ? "first run" : percent(sincePrevious) + " since previous"));
        // A strategy compared with its twin (the suite's compare_with) names it.
        const twin = c.base_strategy && c.base_strategy !== data.baseline ? c.base_strategy : null;
        const baseWord = twin === null ? "baseline" : twin + " (twin)";
        a.appendChild(line(toBase === null ? "no " + baseWord : toBase.toFixed(2) + "\u00d7 " + baseWord));
        a.appendChild(line(c.detects, "detects"));
        if (c.stale) a.appendChild(line("missing in the latest run", "stale"));
        const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
        svg.setAttribute("class", "spark");
        svg.setAttribute("width", "110");
        svg.setAttribute("height", "24");
        a.appendChild(svg);
        window.Dashboard.spark(svg, c.spark, null);
        td.title = "noise floor " + (c.noise * 100).toFixed(1) + "%" +
          "; " + c.detects + " (the minimum detectable change before the latest run)" +
          (within ? "; each median inside the other run's interval" : "");
        td.appendChild(a);
        tr.appendChild(td);
      });
      rows.push(tr);
    });
    table.replaceChildren.apply(table, rows);
    empty.hidden = strategies.length > 0 && columns.length > 0;
    document.body.dataset.rendered = metric.name + "/" + against;
  }
  [metricPick, againstPick, strategyPick, scenarioPick].concat(Object.values(paramPicks))
    .forEach(function (select) { select.addEventListener("change", render); });
  render();
})();
