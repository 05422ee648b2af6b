// passlab Explorer front end (anywidget ES module).
// Python owns the state; this module renders the synced traits and sends the user's
// choices back (model.set + save_changes). Labels from IR are set with textContent; the
// pane HTML comes from Python already escaped.

const TABS = [
  ["diff", "Diff"], ["graph", "Fused graph"], ["buffers", "Buffers"],
  ["compare", "Compare"], ["pipeline", "Pipeline"],
];

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") el.className = v;
    else if (k === "text") el.textContent = v;
    else el.setAttribute(k, v);
  }
  for (const c of children) if (c) el.append(c);
  return el;
}

function stepText(row) {
  return `#${row.i} ${row.label}`;
}

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

function render({ model, el }) {
  const off = [];  // [event, handler] pairs to remove on cleanup
  const on = (ev, fn) => { model.on(ev, fn); off.push([ev, fn]); };
  const send = (changes) => {
    for (const [k, v] of Object.entries(changes)) model.set(k, v);
    model.save_changes();
  };

  // dim the panes until the kernel answers (`rendered` changes); give up after 20 s,
  // e.g. in a static page without a kernel
  let paneBox = null, busyTimer = null, quietTimer = null;
  const noKernel = h("div", { class: "plx-no-kernel", hidden: "" });
  noKernel.textContent = "No answer from a kernel yet. In an exported page there is none: " +
    "only the view saved with the notebook can be shown; run the notebook to explore other passes.";
  const idle = () => {
    clearTimeout(busyTimer); clearTimeout(quietTimer);
    if (paneBox) paneBox.classList.remove("plx-busy");
  };
  const busy = () => {
    if (!paneBox) return;
    paneBox.classList.add("plx-busy");
    clearTimeout(busyTimer); clearTimeout(quietTimer);
    quietTimer = setTimeout(() => { noKernel.hidden = false; }, 5000);
    busyTimer = setTimeout(idle, 20000);
  };

  // ------------------------------------------------------------------ skeleton
  const root = h("div", { class: "plx" });
  const summary = h("div", { class: "plx-summary" });
  const failure = h("div", { class: "plx-failure" });
  const search = h("input", { type: "search", placeholder: "search passes", class: "plx-search",
                              "aria-label": "search passes" });
  const stageSel = h("select", { class: "plx-stage", "aria-label": "stage" });
  const changedBox = h("input", { type: "checkbox", class: "plx-changed-only" });
  const innerBox = h("input", { type: "checkbox", class: "plx-show-inner" });
  const count = h("span", { class: "plx-count" });
  const toolbar = h("div", { class: "plx-toolbar" }, search, stageSel,
    h("label", {}, changedBox, document.createTextNode(" changed only")),
    h("label", {}, innerBox, document.createTextNode(" inner passes")), count);
  const list = h("div", { class: "plx-list", tabindex: "0", role: "listbox",
                          "aria-label": "passes", "data-lm-suppress-shortcuts": "true" });
  const tabs = h("div", { class: "plx-tabs", role: "tablist" });
  const tabButtons = {};
  for (const [name, text] of TABS) {
    const b = h("button", { class: "plx-tab", "data-tab": name, role: "tab", text });
    b.addEventListener("click", () => {
      if (model.get("tab") !== name) { busy(); send({ tab: name }); }
    });
    tabButtons[name] = b;
    tabs.append(b);
  }
  const modeSel = h("select", { class: "plx-mode", "aria-label": "diff layout" });
  for (const m of ["unified", "side-by-side"]) modeSel.append(h("option", { value: m, text: m }));
  modeSel.addEventListener("change", () => { busy(); send({ diff_mode: modeSel.value }); });
  tabs.append(modeSel);

  const panes = {};
  for (const [name] of TABS) panes[name] = h("div", { class: `plx-pane plx-pane-${name}`, "data-pane": name });
  // diffs print the first few functions; the pane's "show all" button asks for the rest
  for (const name of ["diff", "compare"]) {
    panes[name].addEventListener("click", (ev) => {
      if (ev.target.closest && ev.target.closest(".plx-show-all")) { busy(); send({ diff_all: true }); }
    });
  }
  // graph: a pan/zoom viewport plus the clicked kernel's text
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
  panes.graph.append(graphTools, graphView, kernel);
  // compare: choose A and B
  const selA = h("select", { class: "plx-compare-a", "aria-label": "compare from" });
  const selB = h("select", { class: "plx-compare-b", "aria-label": "compare to" });
  const swap = h("button", { class: "plx-swap", text: "swap" });
  const compareBody = h("div", { class: "plx-compare-body" });
  panes.compare.append(h("div", { class: "plx-compare-tools" },
    document.createTextNode("A "), selA, document.createTextNode(" → B "), selB, swap), compareBody);
  selA.addEventListener("change", () => { busy(); send({ compare_a: Number(selA.value) }); });
  selB.addEventListener("change", () => { busy(); send({ compare_b: Number(selB.value) }); });
  swap.addEventListener("click", () => {
    if (model.get("compare_a") === model.get("compare_b")) return;
    busy();
    send({ compare_a: model.get("compare_b"), compare_b: model.get("compare_a") });
  });

  // buffers: a slider per symbolic dimension (Python redraws with bounds={n: value})
  const boundsBar = h("div", { class: "plx-bounds" });
  const buffersBody = h("div", { class: "plx-buffers-body" });
  panes.buffers.append(boundsBar, buffersBody);
  let boundsTimer = null;
  const renderBounds = () => {
    const symbols = model.get("symbols") || [];
    const bounds = model.get("bounds") || {};
    boundsBar.replaceChildren();
    boundsBar.style.display = symbols.length ? "" : "none";
    for (const name of symbols) {
      const set = Object.prototype.hasOwnProperty.call(bounds, name);
      const slider = h("input", { type: "range", min: "1", max: "2048", step: "1",
        class: "plx-bound", "data-symbol": name, "aria-label": `bound for ${name}`,
        value: String(set ? bounds[name] : 128) });
      const value = h("span", { class: "plx-bound-value",
        text: set ? `${name} = ${bounds[name]}` : `${name} unbounded: lower bound drawn; move to set ${name}` });
      slider.addEventListener("input", () => {
        value.textContent = `${name} = ${slider.value}`;
        clearTimeout(boundsTimer);
        boundsTimer = setTimeout(() => {
          busy();
          send({ bounds: { ...model.get("bounds"), [name]: Number(slider.value) } });
        }, 150);
      });
      boundsBar.append(h("label", {}, document.createTextNode(`${name} `), slider), value);
    }
  };

  paneBox = h("div", { class: "plx-panes" }, ...Object.values(panes));
  // the Explain strip: what the selected pass does and what it changed here (HTML
  // escaped by passlab); its "what this pass does" fold stays open from pass to pass
  const explainStrip = h("div", { class: "plx-explain-strip", "aria-live": "polite" });
  let explainOpen = false;
  explainStrip.addEventListener("toggle", (ev) => {
    if (ev.target.tagName === "DETAILS") explainOpen = ev.target.open;
  }, true);
  const renderExplain = () => {
    explainStrip.innerHTML = model.get("explain_html");
    const fold = explainStrip.querySelector("details");
    if (fold && explainOpen) fold.open = true;
  };
  const body = h("div", { class: "plx-body" }, list,
    h("div", { class: "plx-right" }, tabs, explainStrip, paneBox));
  root.append(summary, failure, noKernel, toolbar, body);
  el.append(root);

  // ---------------------------------------------------------------------- list
  let byIndex = new Map();
  let rowEls = new Map();
  const indexRows = () => {
    byIndex = new Map(model.get("steps").map((r) => [r.i, r]));
  };

  const renderHeader = () => {
    summary.textContent = model.get("summary");
    failure.textContent = model.get("failure");
    failure.style.display = model.get("failure") ? "" : "none";
  };

  const renderStages = () => {
    stageSel.replaceChildren(h("option", { value: "", text: "all stages" }));
    for (const s of model.get("stages")) stageSel.append(h("option", { value: s, text: s }));
    stageSel.value = model.get("stage");
  };

  const renderCompareOptions = () => {
    for (const sel of [selA, selB]) {
      sel.replaceChildren();
      for (const r of model.get("steps")) {
        if (r.kind === "container") continue;
        sel.append(h("option", { value: String(r.i), text: stepText(r) }));
      }
    }
    selA.value = String(model.get("compare_a"));
    selB.value = String(model.get("compare_b"));
  };

  const renderList = () => {
    const vis = model.get("visible");
    const inner = model.get("show_inner");
    rowEls = new Map();
    list.replaceChildren();
    for (const i of vis) {
      const r = byIndex.get(i);
      if (!r) continue;
      const cls = ["plx-row", r.changed ? "changed" : "same", r.kind];
      if (r.origin === "user") cls.push("user");
      if (r.failed) cls.push("failed");
      const row = h("div", { class: cls.join(" "), role: "option", "data-index": String(i) },
        h("span", { class: "plx-i", text: String(i) }),
        h("span", { class: "plx-label", text: r.label }),
        h("span", { class: "plx-stage-tag", text: r.stage }),
        h("span", { class: "plx-changes", text: r.failed ? "failed" : r.summary }),
        h("span", { class: "plx-ms", text: r.ms == null ? "" : r.ms.toFixed(2) }));
      if (inner) row.style.paddingLeft = `${4 + 12 * r.depth}px`;
      row.title = `${r.label} (${r.stage}, ${r.kind}, ${r.origin})`;
      rowEls.set(i, row);
      list.append(row);
    }
    if (!vis.length) {
      list.append(h("div", { class: "plx-empty",
        text: model.get("steps").length ? "no pass matches the filters" : "no passes recorded" }));
    }
    const main = model.get("steps").filter((r) => r.kind === "pass" || r.failed).length;
    count.textContent = `${vis.length} of ${inner ? model.get("steps").length : main} passes`;
    markSelected(false);
  };

  const markSelected = (scroll) => {
    const sel = model.get("selected");
    for (const [i, row] of rowEls) {
      const on = i === sel;
      row.classList.toggle("selected", on);
      row.setAttribute("aria-selected", on ? "true" : "false");
      if (on && scroll) row.scrollIntoView({ block: "nearest" });
    }
  };

  list.addEventListener("click", (e) => {
    const row = e.target.closest(".plx-row");
    if (!row) return;
    list.focus();
    select(Number(row.dataset.index));
  });
  list.addEventListener("keydown", (e) => {
    const keys = { ArrowDown: 1, ArrowUp: -1, j: 1, k: -1, Home: "first", End: "last" };
    if (!(e.key in keys)) return;
    e.preventDefault();
    e.stopPropagation();  // keep JupyterLab from moving between cells
    const vis = model.get("visible");
    if (!vis.length) return;
    const at = vis.indexOf(model.get("selected"));
    let next;
    if (keys[e.key] === "first") next = 0;
    else if (keys[e.key] === "last") next = vis.length - 1;
    else next = at < 0 ? 0 : Math.min(vis.length - 1, Math.max(0, at + keys[e.key]));
    select(vis[next]);
  });

  const select = (i) => {
    if (i === model.get("selected")) return;
    busy();
    send({ selected: i });
    markSelected(true);
  };

  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => send({ search: search.value }), 150);
  });
  stageSel.addEventListener("change", () => send({ stage: stageSel.value }));
  changedBox.addEventListener("change", () => send({ changed_only: changedBox.checked }));
  innerBox.addEventListener("change", () => send({ show_inner: innerBox.checked }));

  // --------------------------------------------------------------------- panes
  let pz = null;
  const renderGraph = () => {
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
      for (const [text, fn] of [["+", pz.zoomIn], ["−", pz.zoomOut], ["fit", pz.fit]]) {
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

  const renderPane = (name) => {
    if (name === "graph") renderGraph();
    else if (name === "compare") compareBody.innerHTML = model.get("compare_html");
    else if (name === "buffers") buffersBody.innerHTML = model.get("buffers_html");
    else panes[name].innerHTML = model.get(`${name}_html`);  // escaped by passlab
  };

  const showTab = () => {
    const tab = model.get("tab");
    for (const [name, b] of Object.entries(tabButtons)) {
      b.classList.toggle("active", name === tab);
      b.setAttribute("aria-selected", name === tab ? "true" : "false");
      panes[name].style.display = name === tab ? "" : "none";
    }
    modeSel.style.display = tab === "diff" || tab === "compare" ? "" : "none";
    explainStrip.style.display = tab === "compare" || tab === "pipeline" ? "none" : "";
    modeSel.value = model.get("diff_mode");
    if (tab === "graph" && pz) pz.fitOnce();
  };

  // ------------------------------------------------------------------- wiring
  indexRows();
  renderHeader();
  renderStages();
  renderCompareOptions();
  search.value = model.get("search");
  changedBox.checked = model.get("changed_only");
  innerBox.checked = model.get("show_inner");
  renderList();
  showTab();
  for (const [name] of TABS) renderPane(name);
  renderKernel();
  renderExplain();
  renderBounds();
  markSelected(true);

  on("change:steps", () => { indexRows(); renderList(); renderCompareOptions(); });
  on("change:summary", renderHeader);
  on("change:failure", renderHeader);
  on("change:stages", renderStages);
  on("change:visible", renderList);
  on("change:show_inner", () => { innerBox.checked = model.get("show_inner"); });
  on("change:changed_only", () => { changedBox.checked = model.get("changed_only"); });
  on("change:stage", () => { stageSel.value = model.get("stage"); });
  on("change:search", () => {
    if (document.activeElement !== search) search.value = model.get("search");
  });
  on("change:selected", () => markSelected(true));
  on("change:tab", showTab);
  on("change:diff_mode", showTab);
  on("change:compare_a", () => { selA.value = String(model.get("compare_a")); });
  on("change:compare_b", () => { selB.value = String(model.get("compare_b")); });
  for (const [name] of TABS) on(`change:${name}_html`, () => renderPane(name));
  on("change:symbols", renderBounds);
  on("change:bounds", renderBounds);
  on("change:explain_html", renderExplain);
  on("change:kernel_title", renderKernel);
  on("change:kernel_text", renderKernel);
  on("change:code_text", renderKernel);
  on("change:rendered", () => { noKernel.hidden = true; idle(); });

  return () => {
    for (const [ev, fn] of off) model.off(ev, fn);
    if (pz) pz.cleanup();
    clearTimeout(searchTimer);
    clearTimeout(busyTimer);
    clearTimeout(boundsTimer);
  };
}

export default { render };
