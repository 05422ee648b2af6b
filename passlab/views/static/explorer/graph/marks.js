// Marks on the drawn graph that follow the model: the picked node (`node`, whose kernel
// the panel shows) and the focus (`focus`: nodes another pane pointed at). Change marks
// (new, rewritten) come drawn by Python as classes on the nodes.

// The marks of the graph drawn in `graphView`; markFocus centres the viewport (`pz()`,
// null without one) on the first focused node.
export function graphMarks(model, graphView, pz) {
  const labels = () => {  // node id -> kernel name, from the pane's data-nodes
    const meta = graphView.querySelector(".plx-graph-meta");
    try { return meta ? JSON.parse(meta.dataset.nodes) : {}; } catch { return {}; }
  };
  const nodeEls = () => {
    const out = new Map();
    for (const g of graphView.querySelectorAll("g.node")) {
      const t = g.querySelector("title");
      if (t) out.set(t.textContent, g);
    }
    for (const tr of graphView.querySelectorAll("table tbody tr")) out.set(tr.cells[0].textContent, tr);
    return out;
  };
  const markPicked = () => {
    const id = model.get("node");
    for (const n of graphView.querySelectorAll(".plx-picked")) n.classList.remove("plx-picked");
    const el = id ? nodeEls().get(id) : null;
    if (el) el.classList.add("plx-picked");
  };
  // `focus`: node ids, Relax variable names (an id without its "#2" suffix) or kernel names.
  // The view centres on the first hit when `centre`, or when the focus is not the one it
  // last centred on (a re-render for another step keeps the view instead); true if it did.
  let focusShown = "[]";
  const markFocus = (centre) => {
    for (const n of graphView.querySelectorAll(".plx-focus")) n.classList.remove("plx-focus");
    const key = JSON.stringify(model.get("focus") || []);
    centre = centre || key !== focusShown;
    focusShown = key;
    const want = new Set(model.get("focus") || []);
    if (!want.size) return false;
    const names = labels();
    const hits = [];
    for (const [id, el] of nodeEls()) {
      if (want.has(id) || want.has(id.replace(/#\d+$/, "")) || want.has(names[id])) {
        el.classList.add("plx-focus");
        hits.push(el);
      }
    }
    if (!hits.length || !centre) return false;
    const view = pz();
    if (view && graphView.clientWidth) view.centreOnEl(hits[0]);  // into view
    else hits[0].scrollIntoView({ block: "center" });
    return true;
  };
  return { labels, markPicked, markFocus };
}
