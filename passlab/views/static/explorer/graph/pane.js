// The fused-graph pane, assembled: the drawing options (overlay.js) and the change marks'
// legend above a pan/zoom viewport (interaction.js) over the SVG passlab draws (or the
// table without Graphviz), the picked and focused nodes marked (marks.js), and the
// clicked kernel's panel below (kernel.js). Zoom and pan survive a new step (`view`
// keeps them across renders), and the graph stays put (layout.js's carryOver).

import { h } from "../core.js";
import { MINIMAP_NODES, minimap, panZoom } from "./interaction.js";
import { kernelPanel } from "./kernel.js";
import { captureGraph, carryOver } from "./layout.js";
import { isOtherCluster, toggledGroups } from "./groups.js";
import { graphMarks } from "./marks.js";
import { graphOptions } from "./overlay.js";

export function graphPane(ctx, pane) {
  const { model, on, send } = ctx;
  const graphHead = h("div", { class: "plx-graph-headbox" });
  // a pan/zoom viewport: the drawing is wider and taller than its box by design
  const graphView = h("div", { class: "plx-graph-view", "data-plx-scroll": "pan" });
  const graphBox = h("div", { class: "plx-graph-box" }, graphView);
  const graphTools = h("div", { class: "plx-graph-tools" });
  let pz = null, mini = null;
  let view = null;  // {k, x, y}: kept across renders (steps, parameter modes, overlays)
  const kernel = kernelPanel(ctx, pane, () => { if (pz) pz.place(); });
  pane.append(graphTools, graphHead, graphBox, kernel.el);
  const marks = graphMarks(model, graphView, () => pz);

  // The graph is captured when the user asks for another one (a step, the weights mode,
  // the overlay): the answer can move the whole pane before the graph is redrawn (a
  // longer Explain strip above it), and the anchor holds a node where the user saw it.
  // Not while nodes glide; used if the same drawing is shown at the same zoom and pan.
  let asked = null, settled = 0;
  const capture = () => captureGraph(graphView, pz, marks.labels());
  const ask = () => { asked = performance.now() >= settled ? capture() : null; };
  const snapshot = () => {
    const a = asked, svg = graphView.querySelector("svg");
    asked = null;
    const now = pz && pz.get();
    if (a && now && a.svg === svg && ["k", "x", "y"].every((key) => a.view[key] === now[key])) return a;
    return capture();
  };

  const render = () => {
    const t0 = performance.now();  // the swap's time (to the transition's start): data-render-ms
    const old = snapshot();
    if (pz) { view = pz.get(); pz.cleanup(); pz = null; }
    const oldMini = mini;
    mini = null;
    graphView.innerHTML = model.get("graph_html");  // escaped by passlab
    graphHead.replaceChildren(...graphView.querySelectorAll(".plx-graph-head"));
    // the notes keep one line each (graph.css), whole on hover
    for (const line of graphHead.querySelectorAll(".passlab-note, .plx-graph-groups")) {
      line.title = line.textContent;
    }
    graphTools.replaceChildren();
    const svg = graphView.querySelector("svg");
    // the groups drawn open: graph_open, or the first view's, which the drawing names
    const openNow = () => {
      const opened = model.get("graph_open");
      if (opened) return opened;
      const meta = graphView.querySelector(".plx-graph-meta");
      try { return meta ? JSON.parse(meta.dataset.open || "[]") : []; } catch { return []; }
    };
    const pick = (id, elNode) => {
      const groups = toggledGroups(id, openNow());
      if (groups) { ask(); send({ graph_open: groups }); return; }  // a group: open/close
      if (isOtherCluster(id)) return;
      for (const n of graphView.querySelectorAll(".plx-picked")) n.classList.remove("plx-picked");
      if (elNode) elNode.classList.add("plx-picked");
      if (id === model.get("node")) { kernel.render(); return; }  // shown already: no answer comes
      kernel.lookingUp(id);
      send({ node: id });
    };
    if (svg) {
      graphView.classList.add("plx-has-svg");
      const nodes = svg.querySelectorAll("g.node").length;
      pz = panZoom(graphView, svg, view, pick, (s) => { view = s; if (mini) mini.update(s); });
      // the minimap copies the drawing: made after the swap (the old one shows until then)
      requestAnimationFrame(() => {
        if (oldMini) oldMini.cleanup();
        if (nodes <= MINIMAP_NODES || !svg.isConnected || !pz) return;
        mini = minimap(graphBox, graphView, svg, pz);
        mini.update(pz.get());
      });
      for (const [text, fn, cls, title] of [["+", pz.zoomIn, "plx-zoom-in", "zoom in"],
        ["\u2212", pz.zoomOut, "plx-zoom-out", "zoom out"],
        ["fit", pz.fit, "plx-zoom-fit", "the whole graph, or its top at a readable scale when the "
          + "whole would be too small to read (the minimap shows the rest)"]]) {
        const b = h("button", { class: `plx-zoom ${cls}`, text, title });
        b.addEventListener("click", fn);
        graphTools.append(b);
      }
    } else {
      if (oldMini) oldMini.cleanup();
      graphView.classList.remove("plx-has-svg");
      // without `dot` the graph is a table: the first cell of a row is the node id
      for (const tr of graphView.querySelectorAll("table tbody tr")) {
        tr.classList.add("plx-clickable");
        tr.addEventListener("click", () => pick(tr.cells[0].textContent, tr));
      }
    }
    if (svg || graphView.querySelector("table")) graphTools.append(...graphOptions(ctx, svg));
    marks.markPicked();
    const centred = marks.markFocus(!old);
    if (svg && old) {
      pz.place();  // the kept zoom and pan, now
      const spent = performance.now() - t0;
      // the carry-over measures the new drawing once every change of this message is
      // drawn (the Explain strip above may grow), still before the browser paints
      queueMicrotask(() => {
        if (!svg.isConnected || !pz) return;
        const t1 = performance.now();
        const carried = carryOver(old, svg, marks.labels(), pz, model.get("node"), !centred);
        if (carried.ms) settled = performance.now() + carried.ms;
        graphView.dataset.moved = String(carried.moved);
        // this pane's own time (not the other panes' redraws in between)
        graphView.dataset.renderMs = (spent + performance.now() - t1).toFixed(1);
      });
    } else {
      delete graphView.dataset.moved;
      graphView.dataset.renderMs = (performance.now() - t0).toFixed(1);
    }
  };

  render();
  kernel.render();
  on("change:graph_html", render);
  on("change:node", marks.markPicked);
  on("change:focus", () => marks.markFocus(true));
  for (const name of ["selected", "graph_params", "graph_overlay", "graph_open"]) on(`change:${name}`, ask);
  for (const name of ["kernel_title", "kernel_text", "kernel_text_html", "kernel_html", "code_text"]) {
    on(`change:${name}`, kernel.render);
  }
  ctx.onCleanup(() => { if (pz) pz.cleanup(); if (mini) mini.cleanup(); });
  return { onShow: () => { if (pz) pz.place(); marks.markFocus(true); } };
}
