// The fused-graph pane: a pan/zoom viewport over the SVG passlab draws (or the table
// without Graphviz), and the clicked kernel's TIR beside the code the target generated.

// Pan (drag) and zoom (wheel, buttons) for the SVG inside `view`; returns a cleanup.
function panZoom(view, svg, onClickNode) {
  let k = 1, x = 0, y = 0, drag = null, moved = false;
  svg.style.transformOrigin = "0 0";
  const apply = () => { svg.style.transform = `translate(${x}px, ${y}px) scale(${k})`; };
  // "all": the whole graph in view; otherwise fit the width, but start no smaller than
  // 0.75 so that labels stay readable (pan to see the rest)
  const fit = (mode) => {
    const w = svg.width.baseVal.value, gh = svg.height.baseVal.value;
    const vw = view.clientWidth, vh = view.clientHeight;
    if (!vw) return false;  // hidden: fit when shown
    const kw = w > 0 ? (vw - 8) / w : 1, kh = gh > 0 ? (vh - 8) / gh : 1;
    k = mode === "all" ? Math.min(1, kw, kh) : Math.min(1, Math.max(0.75, kw));
    x = 4; y = 4;
    apply();
    return true;
  };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.05, k * factor));
    x = cx - (cx - x) * (nk / k);
    y = cy - (cy - y) * (nk / k);
    k = nk;
    apply();
  };
  const onWheel = (e) => {
    e.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  };
  const onDown = (e) => {
    if (e.button !== 0) return;
    drag = { sx: e.clientX, sy: e.clientY, x, y };
    moved = false;
    view.classList.add("plx-dragging");
  };
  const onMove = (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.sx, dy = e.clientY - drag.sy;
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    x = drag.x + dx; y = drag.y + dy;
    apply();
  };
  const onUp = () => { drag = null; view.classList.remove("plx-dragging"); };
  const onClick = (e) => {
    if (moved) { moved = false; return; }  // the end of a drag is not a click
    const g = e.target.closest("g.node");
    const title = g && g.querySelector("title");
    if (title) onClickNode(title.textContent, g);
  };
  view.addEventListener("wheel", onWheel, { passive: false });
  view.addEventListener("mousedown", onDown);
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  svg.addEventListener("click", onClick);
  let fitted = false;
  requestAnimationFrame(() => { fitted = fit("width"); });
  const controls = {
    zoomIn: () => zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2),
    zoomOut: () => zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2),
    fit: () => fit("all"),
    fitOnce: () => { if (!fitted) fitted = fit("width"); },
    cleanup: () => {
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
    },
  };
  return controls;
}

function graphPane(ctx, pane) {
  const { model, on, send } = ctx;
  const graphView = h("div", { class: "plx-graph-view" });
  const graphTools = h("div", { class: "plx-graph-tools" });
  const kernelTitle = h("div", { class: "plx-kernel-title" });
  const kernelText = h("div", { class: "plx-kernel-text" });
  // the code the target generated for that kernel, beside its TIR
  const codeTitle = h("div", { class: "plx-code-title" });
  const codeText = h("div", { class: "plx-code-text" });
  const codeCol = h("div", { class: "plx-kernel-col plx-code" }, codeTitle, codeText);
  const kernel = h("div", { class: "plx-kernel" },
    h("div", { class: "plx-kernel-cols" },
      h("div", { class: "plx-kernel-col" }, kernelTitle, kernelText), codeCol));
  pane.append(graphTools, graphView, kernel);

  let pz = null;
  const render = () => {
    if (pz) { pz.cleanup(); pz = null; }
    graphView.innerHTML = model.get("graph_html");  // escaped by passlab.fused_graph
    graphTools.replaceChildren();
    const svg = graphView.querySelector("svg");
    const pick = (id, elNode) => {
      for (const n of graphView.querySelectorAll(".plx-picked")) n.classList.remove("plx-picked");
      if (elNode) elNode.classList.add("plx-picked");
      kernel.style.display = "";
      kernelTitle.textContent = `looking up ${id} ...`;
      kernelText.textContent = "";
      codeTitle.textContent = codeText.textContent = "";
      send({ node: id });
    };
    if (svg) {
      graphView.classList.add("plx-has-svg");
      pz = panZoom(graphView, svg, pick);
      for (const [text, fn] of [["+", pz.zoomIn], ["\u2212", pz.zoomOut], ["fit", pz.fit]]) {
        const b = h("button", { class: "plx-zoom", text });
        b.addEventListener("click", fn);
        graphTools.append(b);
      }
      graphTools.append(h("span", { class: "plx-hint",
        text: "drag to pan, wheel to zoom, click a kernel to see its code" }));
    } else {
      graphView.classList.remove("plx-has-svg");
      // without `dot` the graph is a table: the first cell of a row is the node id
      for (const tr of graphView.querySelectorAll("table tbody tr")) {
        tr.classList.add("plx-clickable");
        tr.addEventListener("click", () => pick(tr.cells[0].textContent, tr));
      }
      if (graphView.querySelector("table")) {
        graphTools.append(h("span", { class: "plx-hint", text: "click a row to see its kernel" }));
      }
    }
  };

  const renderKernel = () => {
    kernelTitle.textContent = model.get("kernel_title");
    kernelText.textContent = model.get("kernel_text");
    kernel.style.display = model.get("kernel_title") ? "" : "none";
    codeTitle.textContent = model.get("code_title");
    codeText.textContent = model.get("code_text");
    codeCol.style.display = model.get("code_text") ? "" : "none";
  };

  render();
  renderKernel();
  on("change:graph_html", render);
  on("change:kernel_title", renderKernel);
  on("change:kernel_text", renderKernel);
  on("change:code_text", renderKernel);
  ctx.onCleanup(() => { if (pz) pz.cleanup(); });
  return { onShow: () => { if (pz) pz.fitOnce(); } };
}
PANES.graph = graphPane;
