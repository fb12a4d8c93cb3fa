// Shared by the pages: sparklines drawn from their data (an <svg class="spark"> with
// data-values, a JSON list of medians, and data-mark, the index of a run to mark).
(function () {
  "use strict";
  const NS = "http://www.w3.org/2000/svg";
  function spark(svg, values, mark) {
    const width = Number(svg.getAttribute("width"));
    const height = Number(svg.getAttribute("height"));
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    const shown = values.filter(function (v) { return v !== null; });
    if (!shown.length) return;
    const low = Math.min.apply(null, shown);
    const high = Math.max.apply(null, shown);
    const span = high - low || Math.abs(high) * 0.01 || 1;
    const step = (width - 4) / Math.max(1, values.length - 1);
    const x = function (i) { return 2 + i * step; };
    const y = function (v) { return height - 3 - ((v - low) / span) * (height - 6); };
    const coords = [];
    values.forEach(function (v, i) {
      if (v !== null) coords.push(x(i).toFixed(1) + "," + y(v).toFixed(1));
    });
    const line = document.createElementNS(NS, "polyline");
    line.setAttribute("points", coords.join(" "));
    line.setAttribute("class", "spark-line");
    svg.replaceChildren(line);
    if (mark !== null && mark >= 0 && mark < values.length) {
      const tick = document.createElementNS(NS, "line");
      tick.setAttribute("x1", x(mark));
      tick.setAttribute("x2", x(mark));
      tick.setAttribute("y1", 0);
      tick.setAttribute("y2", height);
      tick.setAttribute("class", "spark-mark");
      svg.appendChild(tick);
    }
  }
  window.Dashboard = { spark: spark };
  document.querySelectorAll("svg.spark[data-values]").forEach(function (svg) {
    const mark = svg.dataset.mark === undefined ? null : Number(svg.dataset.mark);
    spark(svg, JSON.parse(svg.dataset.values), mark);
  });
})();
