// The compare view: two runs of one suite, B / A per series, from window.COMPARE (a
// <script> file next to the page: no fetch, works from file://). The runs can be chosen in
// the address (#a=RUN&b=RUN), as a series chart links here. Labels go in as text.
(function () {
  "use strict";
  const data = window.COMPARE;
  const pickA = document.getElementById("run-a");
  const pickB = document.getElementById("run-b");
  const table = document.getElementById("compare");
  data.runs.forEach(function (run, i) {
    [pickA, pickB].forEach(function (pick) {
      const option = document.createElement("option");
      option.value = String(i);
      option.textContent = run;
      pick.appendChild(option);
    });
  });
  const wanted = new URLSearchParams(location.hash.slice(1));
  function chosen(name, fallback) {
    const i = data.runs.indexOf(wanted.get(name));
    return String(i >= 0 ? i : fallback);
  }
  pickA.value = chosen("a", Math.max(0, data.runs.length - 2));
  pickB.value = chosen("b", Math.max(0, data.runs.length - 1));
  function row(cells, header) {
    const tr = document.createElement("tr");
    cells.forEach(function (text) {
      const cell = document.createElement(header ? "th" : "td");
      cell.textContent = text;
      tr.appendChild(cell);
    });
    return tr;
  }
  function render() {
    const a = Number(pickA.value);
    const b = Number(pickB.value);
    table.replaceChildren(row(["series", "A", "B", "B / A", "unit"], true));
    data.series.forEach(function (s) {
      const va = s.values[a];
      const vb = s.values[b];
      const ratio = va && vb !== null ? (vb / va).toFixed(3) + "×" : "-";
      const show = function (v) { return v === null ? "-" : v.toPrecision(4); };
      table.appendChild(row([s.label, show(va), show(vb), ratio, s.unit]));
    });
    document.body.dataset.compared = data.runs[a] + " " + data.runs[b];
  }
  pickA.addEventListener("change", render);
  pickB.addEventListener("change", render);
  render();
})();
