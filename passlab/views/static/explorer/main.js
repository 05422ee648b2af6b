// The Explorer's skeleton: header, pass list, tabs and panes; the busy flag. The entry
// module of the bundle (its default export is anywidget's { render }).

import { h, makeContext } from "./core.js";
import { editPane } from "./edit.js";
import { graphPane } from "./graph/pane.js";
import { passList } from "./list.js";
import { buffersPane, comparePane, diffPane, explainStrip, htmlPane } from "./panes.js";
import { profilePane } from "./profile.js";
import { provenancePane } from "./provenance.js";

const TABS = [
  ["diff", "Diff"], ["graph", "Fused graph"], ["buffers", "Buffers"],
  ["provenance", "Provenance"], ["compare", "Compare"], ["pipeline", "Pipeline"],
  ["edit", "Edit"], ["profile", "Profile"],
];

// tab name -> pane factory; a tab without one shows its `<tab>_html` trait (htmlPane)
const PANES = {
  diff: diffPane, graph: graphPane, buffers: buffersPane, provenance: provenancePane,
  compare: comparePane, edit: editPane, profile: profilePane,
};

export function render({ model, el }) {
  const ctx = makeContext(model);
  const { on, send } = ctx;

  // dim the panes until the kernel answers (`rendered` changes); give up after 20 s,
  // e.g. in a static page without a kernel
  let busyTimer = null, quietTimer = null;
  const paneBox = h("div", { class: "plx-panes" });
  const noKernel = h("div", { class: "plx-no-kernel", hidden: "" });
  noKernel.textContent = "No answer from a kernel yet. In an exported page there is none: " +
    "only the view saved with the notebook can be shown; run the notebook to explore other passes.";
  const idle = () => {
    clearTimeout(busyTimer); clearTimeout(quietTimer);
    paneBox.classList.remove("plx-busy");
  };
  ctx.busy = () => {
    paneBox.classList.add("plx-busy");
    clearTimeout(busyTimer); clearTimeout(quietTimer);
    quietTimer = setTimeout(() => { noKernel.hidden = false; }, 5000);
    busyTimer = setTimeout(idle, 20000);
  };
  ctx.onCleanup(() => { clearTimeout(busyTimer); clearTimeout(quietTimer); });

  // ------------------------------------------------------------------ skeleton
  const root = h("div", { class: "plx" });
  const summary = h("div", { class: "plx-summary" });
  const failure = h("div", { class: "plx-failure" });
  const passes = passList(ctx);
  // tabs: one tab stop (roving tabindex), arrows move between tabs and open them
  // (a pane narrower than the tabs scrolls them sideways: a declared scroller)
  const tablist = h("div", { class: "plx-tablist", role: "tablist", "aria-label": "panes",
                             "data-plx-scroll": "" });
  const tabButtons = {};
  const openTab = (name, focus) => {
    if (model.get("tab") !== name) { ctx.busy(); send({ tab: name }); }
    if (focus) tabButtons[name].focus();
  };
  for (const [name, text] of TABS) {
    const b = h("button", { class: "plx-tab", "data-tab": name, role: "tab", text,
                            id: `plx-tab-${name}`, tabindex: "-1" });
    // focus stays on the tab (JupyterLab would otherwise take it to the notebook)
    b.addEventListener("click", () => openTab(name, true));
    tabButtons[name] = b;
    tablist.append(b);
  }
  tablist.addEventListener("keydown", (e) => {
    const names = TABS.map(([n]) => n);
    const at = names.indexOf(e.target.dataset && e.target.dataset.tab);
    if (at < 0) return;
    const moves = { ArrowRight: at + 1, ArrowLeft: at - 1, Home: 0, End: names.length - 1 };
    if (!(e.key in moves)) return;
    e.preventDefault();
    openTab(names[(moves[e.key] + names.length) % names.length], true);
  });
  const modeSel = h("select", { class: "plx-mode", "aria-label": "diff layout" });
  for (const m of ["unified", "side-by-side"]) modeSel.append(h("option", { value: m, text: m }));
  modeSel.addEventListener("change", () => { ctx.busy(); send({ diff_mode: modeSel.value }); });
  const tabs = h("div", { class: "plx-tabs" }, tablist, modeSel);

  const panes = {};
  for (const [name] of TABS) {
    panes[name] = h("div", { class: `plx-pane plx-pane-${name}`, "data-pane": name,
                             role: "tabpanel", "aria-labelledby": `plx-tab-${name}` });
    paneBox.append(panes[name]);
  }
  const views = {};
  for (const [name] of TABS) {
    views[name] = PANES[name] ? PANES[name](ctx, panes[name]) : htmlPane(ctx, panes[name], name);
  }
  const explain = explainStrip(ctx);
  const split = h("div", { class: "plx-split", role: "separator", tabindex: "0",
    "aria-orientation": "vertical", "aria-label": "resize the pass list",
    title: "drag to resize the pass list (or focus and use the arrow keys)" });
  const body = h("div", { class: "plx-body" }, passes.box, split,
    h("div", { class: "plx-right" }, tabs, explain, paneBox));
  root.append(summary, failure, noKernel, passes.toolbar, body);
  el.append(root);
  resizableList(root, passes.box, split, ctx);
  containKeys(root, ctx);
  stackWhenNarrow(root, ctx);

  const renderHeader = () => {
    summary.textContent = model.get("summary");
    failure.textContent = model.get("failure");
    failure.style.display = model.get("failure") ? "" : "none";
  };

  const showTab = () => {
    const tab = model.get("tab");
    for (const [name, b] of Object.entries(tabButtons)) {
      b.classList.toggle("active", name === tab);
      b.setAttribute("aria-selected", name === tab ? "true" : "false");
      b.tabIndex = name === tab ? 0 : -1;
      panes[name].style.display = name === tab ? "" : "none";
    }
    modeSel.style.display = tab === "diff" || tab === "compare" ? "" : "none";
    explain.style.display = ["compare", "pipeline", "edit", "profile"].includes(tab) ? "none" : "";
    modeSel.value = model.get("diff_mode");
    if (views[tab] && views[tab].onShow) views[tab].onShow();
  };

  // ------------------------------------------------------------------- wiring
  renderHeader();
  showTab();
  passes.markSelected(true);
  on("change:summary", renderHeader);
  on("change:failure", renderHeader);
  on("change:tab", showTab);
  on("change:diff_mode", showTab);
  on("change:rendered", () => { noKernel.hidden = true; idle(); });

  // the kernel keeps its Explorer (and the build) alive while a view of it is open, and
  // lets go of a dropped one once its last view goes (_explorer_life.py)
  const viewCount = (n) => { try { if (model.send) model.send({ views: n }); } catch (e) { /* no kernel */ } };
  viewCount(1);
  ctx.onCleanup(() => viewCount(-1));

  return () => ctx.cleanup();
}

// The pass list's width: drag the handle, or focus it and press ArrowLeft/ArrowRight.
function resizableList(root, list, split, ctx) {
  const setWidth = (px) => {
    const total = root.querySelector(".plx-body").clientWidth;
    const w = Math.max(160, Math.min(px, total * 0.75));
    root.style.setProperty("--plx-list-w", `${Math.round(w)}px`);
    split.setAttribute("aria-valuenow", String(Math.round(w)));
  };
  let start = null;
  split.addEventListener("pointerdown", (e) => {
    start = { x: e.clientX, w: list.getBoundingClientRect().width };
    split.setPointerCapture(e.pointerId);
    split.classList.add("plx-dragging");
    e.preventDefault();
  });
  split.addEventListener("pointermove", (e) => {
    if (start) setWidth(start.w + e.clientX - start.x);
  });
  const stop = () => { start = null; split.classList.remove("plx-dragging"); };
  split.addEventListener("pointerup", stop);
  split.addEventListener("pointercancel", stop);
  split.addEventListener("dblclick", () => root.style.removeProperty("--plx-list-w"));
  split.addEventListener("keydown", (e) => {
    const step = { ArrowLeft: -24, ArrowRight: 24 }[e.key];
    if (!step) return;
    e.preventDefault();
    setWidth(list.getBoundingClientRect().width + step);
  });
  ctx.onCleanup(stop);
}

// Keys typed in the widget are the widget's: JupyterLab's notebook shortcuts (j, k, a,
// b, d d, arrows ...) never see them. Lumino skips its shortcuts under
// data-lm-suppress-shortcuts; stopping the event covers the notebook's own listeners.
// A click that re-renders a pane must not drop the focus to the page either.
function containKeys(root, ctx) {
  root.setAttribute("data-lm-suppress-shortcuts", "true");
  const stop = (e) => e.stopPropagation();
  root.addEventListener("keydown", stop);
  root.addEventListener("keypress", stop);
  root.addEventListener("keyup", stop);
  // the focused element was removed (a pane's HTML re-rendered under it): keep the
  // focus in the widget, on the open tab, instead of letting it fall to the page
  let timer = null;
  ctx.onCleanup(() => clearTimeout(timer));
  root.addEventListener("focusout", (e) => {
    if (e.relatedTarget && root.contains(e.relatedTarget)) return;
    const gone = e.target;
    clearTimeout(timer);
    timer = setTimeout(() => {
      const lost = !document.activeElement || document.activeElement === document.body;
      if (gone.isConnected || !lost || !root.isConnected) return;
      const tab = root.querySelector(".plx-tab.active") || root.querySelector(".plx-list");
      if (tab) tab.focus({ preventScroll: true });
    }, 0);
  });
}

// Stack the list above the panes when the widget itself is narrow (its container, not
// the window: JupyterLab's side panels change the output's width).
const NARROW_PX = 800;  // beside a ~250 px list, a pane would have less than 500 px
function stackWhenNarrow(root, ctx) {
  if (typeof ResizeObserver === "undefined") return;
  const ro = new ResizeObserver((entries) => {
    for (const e of entries) root.classList.toggle("plx-narrow", e.contentRect.width < NARROW_PX);
  });
  ro.observe(root);
  ctx.onCleanup(() => ro.disconnect());
}

export default { render };
