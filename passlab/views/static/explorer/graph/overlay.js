// The fused graph's drawing options above it: how weights are drawn and the overlay
// (colour the kernels by bytes or FLOPs, as passlab's analysis/graph.py computes them).
// Each choice is a trait Python redraws the graph for (graph_params, graph_overlay).

import { h } from "../core.js";

function graphSelect(label, cls, options, value, onChange) {
  const sel = h("select", { class: cls, "aria-label": label });
  for (const [v, text] of options) sel.append(h("option", { value: v, text }));
  sel.value = value;
  sel.addEventListener("change", () => onChange(sel.value));
  return h("label", { class: "plx-graph-opt" }, h("span", { text: `${label}:` }), sel);
}

// the weights and "colour by" selects and the hint, for a drawn graph (`svg`) or its table
export function graphOptions(ctx, svg) {
  const { model, send } = ctx;
  return [
    graphSelect("weights", "plx-graph-params",
      [["collapse", "fold into consumers"], ["show", "show"], ["hide", "hide"]],
      model.get("graph_params"), (v) => { ctx.busy(); send({ graph_params: v }); }),
    graphSelect("colour by", "plx-graph-overlay", [["none", "none"], ["bytes", "bytes"], ["flops", "FLOPs"],
      // "time": the kernels' times per run, once the build is profiled (the Profile tab)
      ...(model.get("has_profile") || model.get("graph_overlay") === "time" ? [["time", "time"]] : [])],
      model.get("graph_overlay"), (v) => { ctx.busy(); send({ graph_overlay: v }); }),
    h("span", { class: "plx-hint", text: svg ? "drag to pan, wheel to zoom, click a kernel"
      : "click a row to see its kernel" }),
  ];
}
