// The graph page's drawing: the nodes and lines the page lists in its tables, drawn with the
// vendored cytoscape.js (static/cytoscape.min.js, scripts/vendor_cytoscape.sh). The data is
// the page's JSON block (#graph-data), never inline script. A click (or tap) on a node opens
// its page; the tables below stay the keyboard's and the screen reader's way through.
"use strict";

(function () {
  function draw() {
    const box = document.getElementById("graph-canvas");
    const source = document.getElementById("graph-data");
    if (!box || !source || typeof window.cytoscape !== "function") return;
    const data = JSON.parse(source.textContent || "{}");
    const elements = data.elements || [];
    box.hidden = false;
    const many = elements.length > 600;
    const cy = window.cytoscape({
      container: box,
      elements: elements,
      minZoom: 0.1,
      maxZoom: 4,
      wheelSensitivity: 0.3,
      style: [
        { selector: "node", style: {
          "label": "data(label)", "font-size": 10, "text-wrap": "ellipsis", "text-max-width": 140,
          "text-valign": "bottom", "text-margin-y": 3, "color": "#1d2733",
          "width": 14, "height": 14, "background-color": "#5b6b7d" } },
        { selector: "node[kind = 'item']", style: {
          "shape": "round-rectangle", "width": 22, "height": 16, "background-color": "#1f6feb" } },
        { selector: "node[?centre]", style: {
          "border-width": 3, "border-color": "#f5a623", "width": 26, "height": 26 } },
        { selector: "edge", style: {
          "width": 1, "line-color": "#c3ccd6", "curve-style": "haystack" } },
        { selector: "edge[kind = 'relationship']", style: {
          "width": 2.5, "line-color": "#1f6feb", "curve-style": "bezier",
          "label": "data(label)", "font-size": 8, "color": "#4a5968", "text-rotation": "autorotate" } },
        { selector: "edge[review = 'unreviewed']", style: { "line-style": "dashed" } },
        { selector: "edge[review = 'rejected']", style: { "line-color": "#c0392b" } },
      ],
      // A circle first (deterministic), which the force-directed layout then spreads out:
      // started from one point, cose leaves the well-connected core piled up.
      layout: { name: "circle", animate: false },
    });
    if (!many) {
      cy.layout({ name: "cose", animate: false, randomize: false, nodeRepulsion: function () { return 400000; },
        idealEdgeLength: function () { return 80; }, nodeOverlap: 20, gravity: 0.5, numIter: 1500 }).run();
    } else {
      cy.layout({ name: "concentric", animate: false, minNodeSpacing: 4,
        concentric: function (n) { return n.degree(); }, levelWidth: function () { return 4; } }).run();
    }
    cy.on("tap", "node", function (event) {
      const url = event.target.data("url");
      if (typeof url === "string" && url.charAt(0) === "/") window.location.assign(url);
    });
    cy.on("mouseover", "node", function () { box.classList.add("pointing"); });
    cy.on("mouseout", "node", function () { box.classList.remove("pointing"); });
    box.dataset.drawn = String(cy.nodes().length);
    // A handle for the console and the browser test (tests/browser/test_graph.py).
    window.relataGraph = cy;
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", draw);
  else draw();
})();
