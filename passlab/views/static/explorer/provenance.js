// The provenance pane: the input graph beside the fused graph, linked op <-> kernel.
// Python puts the links in data-* attributes (passlab/analysis/_provenance_view.py):
// operators and op-table rows carry data-op and data-kernels (a JSON list), kernels carry
// data-kernel, data-ops and data-node. Hover shows the links; a click on an operator pins
// them; a click on a kernel opens it in the fused-graph pane (the `focus` trait).
// Both graphs are grouped by the model's node paths, as the graph pane's: a closed group
// is one box (data-group, with data-group-ops and data-group-kernels: what it holds, so
// that it lights up with them); a click on it opens it in both graphs, a click on an open
// group's frame closes it (the `provenance_open` trait; Python lays the group out then).

import { h } from "./core.js";
import { toggledGroups } from "./graph/groups.js";
import { panZoom } from "./graph/interaction.js";

function parseList(text) {
  try { const v = JSON.parse(text || "[]"); return Array.isArray(v) ? v : []; } catch (e) { return []; }
}

// the JSON list in `el`'s data-* attribute `key` (data-group-ops: "groupOps"), parsed
// once per element and text: a hover reads every group's (bad JSON: [])
const parsedLists = new WeakMap();
function provList(el, key) {
  const text = el.dataset[key];
  let lists = parsedLists.get(el);
  if (!lists) parsedLists.set(el, lists = new Map());
  const kept = lists.get(key);
  if (kept && kept.text === text) return kept.list;
  const list = parseList(text);
  lists.set(key, { text, list });
  return list;
}

// mark what `el` links to (itself included) in `root`; `el` null clears
function provHighlight(root, el) {
  for (const n of root.querySelectorAll(".passlab-prov-hl")) n.classList.remove("passlab-prov-hl");
  for (const box of root.querySelectorAll(".passlab-prov")) box.classList.toggle("passlab-prov-active", !!el);
  if (!el) return;
  const isGroup = el.dataset.group !== undefined;
  const isKernel = el.dataset.kernel !== undefined;
  const ops = isGroup ? provList(el, "groupOps") : isKernel ? provList(el, "ops") : [el.dataset.op];
  const kernels = isGroup ? provList(el, "groupKernels")
    : isKernel ? [el.dataset.kernel] : provList(el, "kernels");
  for (const n of root.querySelectorAll("[data-op]")) {
    if (ops.includes(n.dataset.op)) n.classList.add("passlab-prov-hl");
  }
  for (const n of root.querySelectorAll("[data-kernel]")) {
    if (kernels.includes(n.dataset.kernel)) n.classList.add("passlab-prov-hl");
  }
  // a closed group lights up with what it holds
  const opSet = new Set(ops), kernelSet = new Set(kernels);
  for (const n of root.querySelectorAll("[data-group]")) {
    if (n === el || provList(n, "groupOps").some((o) => opSet.has(o))
        || provList(n, "groupKernels").some((k) => kernelSet.has(k))) {
      n.classList.add("passlab-prov-hl");
    }
  }
}

export function provenancePane(ctx, pane) {
  const { model, on, send } = ctx;
  const tools = h("div", { class: "plx-graph-tools" }, h("span", { class: "plx-hint",
    text: "click an operator to pin its links, a kernel to open it in the fused graph" }));
  const body = h("div", { class: "plx-prov-body" });
  pane.append(tools, body);
  let pinned = null, shown = null;
  const show = (el) => { if (el !== shown) { shown = el; provHighlight(body, el); } };
  const linked = (ev) => (ev.target.closest ? ev.target.closest("[data-op], [data-kernel]") : null);
  const hovered = (ev) => (ev.target.closest ? ev.target.closest("[data-op], [data-kernel], [data-group]") : null);

  body.addEventListener("mouseover", (ev) => show(hovered(ev) || pinned));
  body.addEventListener("mouseleave", () => show(pinned));
  body.addEventListener("click", (ev) => {
    const el = linked(ev);
    if (!el) return;
    if (el.dataset.kernel !== undefined) {
      // every call of this kernel, by graph node id, in the graph after the step drawn here
      const kernel = el.dataset.kernel;
      const ids = Array.from(body.querySelectorAll(".passlab-prov-fused [data-kernel]"))
        .filter((n) => n.dataset.kernel === kernel).map((n) => n.dataset.node);
      const root = body.querySelector(".passlab-prov[data-step]");
      const step = root ? Number(root.dataset.step) : model.get("selected");
      ctx.busy();
      const changes = { focus: ids, tab: "graph" };
      if (step !== model.get("selected")) changes.selected = step;
      send(changes);
      return;
    }
    pinned = pinned && pinned.dataset.op === el.dataset.op ? null : el;
    for (const n of body.querySelectorAll(".passlab-prov-pinned")) n.classList.remove("passlab-prov-pinned");
    if (pinned) pinned.classList.add("passlab-prov-pinned");
    shown = undefined;
    show(pinned || el);
  });

  // the op table's search: rows whose ops, kernels or source names hold every word
  body.addEventListener("input", (ev) => {
    if (!ev.target.classList || !ev.target.classList.contains("passlab-prov-search")) return;
    const words = ev.target.value.trim().toLowerCase().split(/\s+/).filter(Boolean);
    let n = 0;
    for (const tr of body.querySelectorAll(".passlab-prov-table tr[data-search]")) {
      const hit = words.every((w) => tr.dataset.search.includes(w));
      tr.hidden = !hit;
      n += hit ? 1 : 0;
    }
    ev.target.dataset.shown = String(n);
  });

  // a click on a closed group's box opens it, on an open group's frame closes it (in both
  // graphs: the paths are the model's); the drawing says what it has open (data-open)
  const toggle = (id) => {
    const root = body.querySelector(".passlab-prov[data-open]");
    const groups = toggledGroups(id, root ? parseList(root.dataset.open) : []);
    if (!groups) return;  // an operator or a kernel: the click handler above
    ctx.busy();
    send({ provenance_open: groups });
  };

  // each picture in a pan/zoom viewport, as the fused-graph pane's (opened fitted to the
  // width at a readable scale; drag to pan, wheel to zoom)
  let zooms = [];
  const render = () => {
    pinned = shown = null;
    for (const z of zooms) z.cleanup();
    zooms = [];
    body.innerHTML = model.get("provenance_html");  // escaped by passlab
    for (const box of body.querySelectorAll(".passlab-prov-box")) {
      const svg = box.querySelector("svg");
      if (!svg) continue;
      box.classList.add("plx-prov-zoom");
      box.dataset.plxScroll = "pan";  // a pan/zoom viewport: the picture is larger by design
      zooms.push(panZoom(box, svg, null, toggle, () => {}));
    }
  };
  render();
  on("change:provenance_html", render);
  ctx.onCleanup(() => { for (const z of zooms) z.cleanup(); });
  return { onShow: () => { for (const z of zooms) z.place(); } };
}
