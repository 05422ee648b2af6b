// The drawn graph's layout as the user sees it, and continuity across a re-render: the
// graph is captured before another one is drawn (node centres, kernel names, edges, the
// view), and the new drawing is carried over from it (FLIP): an anchor node keeps its
// place on screen and the other nodes glide to theirs.

// Screen centres of the drawn nodes: node id -> {g, x, y}, read in one pass (one layout).
export function nodeCentres(svg) {
  const out = new Map();
  for (const g of svg.querySelectorAll("g.node")) {
    const t = g.firstElementChild && g.firstElementChild.tagName === "title"
      ? g.firstElementChild : g.querySelector("title");
    if (!t) continue;
    const r = g.getBoundingClientRect();
    out.set(t.textContent, { g, x: r.left + r.width / 2, y: r.top + r.height / 2 });
  }
  return out;
}

// The nodes of a new graph that were drawn before: new id -> old id, by id, else by kernel
// name (a variable a pass renamed, as FuseTIR turns lv1 into gv; as passlab marks them).
export function matchNodes(before, now, labelsBefore, labelsNow) {
  const byLabel = new Map();
  for (const id of before.keys()) {
    const label = labelsBefore[id];
    if (now.has(id) || !label) continue;
    if (!byLabel.has(label)) byLabel.set(label, []);
    byLabel.get(label).push(id);
  }
  const out = new Map();
  for (const id of now.keys()) {
    if (before.has(id)) { out.set(id, id); continue; }
    const free = byLabel.get(labelsNow[id]);
    if (free && free.length) out.set(id, free.shift());
  }
  return out;
}

// Screen pixels per user unit of the nodes' coordinates (the SVG's viewBox, Graphviz's
// scale on g.graph and the pan/zoom scale together).
export function svgUnit(svg) {
  const vb = svg.viewBox && svg.viewBox.baseVal;
  const r = svg.getBoundingClientRect();
  const base = vb && vb.width ? r.width / vb.width : r.width / (svg.width.baseVal.value || 1);
  const graph = svg.querySelector("g.graph");
  const m = graph && graph.transform.baseVal.consolidate();
  return base * (m ? Math.abs(m.matrix.a) || 1 : 1);
}

const FLIP_MS = 300, FADE_MS = 200;  // nodes glide, then edges fade in
const reducedMotion = () => window.matchMedia
  && window.matchMedia("(prefers-reduced-motion: reduce)").matches;

// The drawn graph as the user sees it (null when none is drawn or the pane is hidden):
// node centres, kernel names (`labels`), edges, the view's centre, the drawing and its
// zoom and pan (`pz`, the viewport of interaction.js).
export function captureGraph(graphView, pz, labels) {
  const svg = graphView.querySelector("svg");
  if (!svg || !pz || !graphView.clientWidth) return null;
  const v = graphView.getBoundingClientRect();
  const edges = new Set();
  for (const t of svg.querySelectorAll("g.edge > title")) edges.add(t.textContent);
  return { svg, view: pz.get(), nodes: nodeCentres(svg), labels, edges,
    cx: v.left + v.width / 2, cy: v.top + v.height / 2 };
}

// The node to hold in place: the picked one, else a focused one, else the unchanged
// node (drawn before, not marked new or rewritten) nearest the old view's centre.
function anchorOf(now, from, old, picked) {
  if (picked && now.has(picked) && from(picked)) return picked;
  for (const [id, n] of now) if (n.g.classList.contains("plx-focus") && from(id)) return id;
  for (const unchangedOnly of [true, false]) {
    let best = null, bestD = Infinity;
    for (const [id, n] of now) {
      const f = from(id);
      if (!f || (unchangedOnly && (n.g.classList.contains("plx-new")
        || n.g.classList.contains("plx-rewritten")))) continue;
      const d = (f.x - old.cx) ** 2 + (f.y - old.cy) ** 2;
      if (d < bestD) { best = id; bestD = d; }
    }
    if (best !== null) return best;
  }
  return null;
}

// Continuity across a re-render (FLIP): the view pans so that the anchor node keeps its
// place on screen (zoom is kept); nodes drawn before glide from their old places, new
// ones fade in, and edges that are new or moved fade in once the nodes have settled.
// An unchanged graph does not move at all. All positions are read before any write.
// `old` is captureGraph's, `labels` the new drawing's kernel names, `picked` the picked
// node, `anchored` false when the view was just centred on a focus. Returns how many
// nodes glide or fade in and how long the animation lasts (ms, 0 for none).
export function carryOver(old, svg, labels, pz, picked, anchored) {
  const now = nodeCentres(svg);
  const unit = svgUnit(svg);
  const match = matchNodes(old.nodes, now, old.labels, labels);
  const from = (id) => (match.has(id) ? old.nodes.get(match.get(id)) : null);
  let dx = 0, dy = 0;
  const a = anchored ? anchorOf(now, from, old, picked) : null;
  const still = reducedMotion();
  if (a !== null) {
    dx = from(a).x - now.get(a).x;
    dy = from(a).y - now.get(a).y;
    if (Math.abs(dx) + Math.abs(dy) > 0.01) pz.panBy(dx, dy);
  }
  const moved = new Set();
  for (const [id, n] of now) {
    const f = from(id);
    if (!f) {
      moved.add(id);
      if (!still) n.g.animate([{ opacity: 0 }, { opacity: 1 }], { duration: FLIP_MS, easing: "ease-in" });
      continue;
    }
    const mx = f.x - n.x - dx, my = f.y - n.y - dy;
    if (Math.abs(mx) < 0.5 && Math.abs(my) < 0.5) continue;
    moved.add(id);
    if (still) continue;
    n.g.animate([{ transform: `translate(${mx / unit}px, ${my / unit}px)` }, { transform: "none" }],
      { duration: FLIP_MS, easing: "ease-in-out" });
  }
  const fade = [];
  for (const t of svg.querySelectorAll("g.edge > title")) {
    const text = t.textContent, i = text.indexOf("->");
    const src = text.slice(0, i), dst = text.slice(i + 2);
    if (i < 0 || moved.has(src) || moved.has(dst)
      || !old.edges.has(`${match.get(src)}->${match.get(dst)}`)) fade.push(t.parentNode);
  }
  if (moved.size) fade.push(...svg.querySelectorAll("g.cluster"));
  for (const el of still ? [] : fade) {
    el.animate([{ opacity: 0 }, { opacity: 1 }], { duration: FADE_MS, delay: FLIP_MS, fill: "backwards" });
  }
  return { moved: moved.size, ms: moved.size || fade.length ? FLIP_MS + FADE_MS : 0 };
}
