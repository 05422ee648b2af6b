// The Explorer's skeleton: header, pass list, tabs and panes; the busy flag.

const TABS = [
  ["diff", "Diff"], ["graph", "Fused graph"], ["buffers", "Buffers"],
  ["provenance", "Provenance"], ["compare", "Compare"], ["pipeline", "Pipeline"],
  ["edit", "Edit"],
];

function render({ model, el }) {
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
  const tabs = h("div", { class: "plx-tabs", role: "tablist" });
  const tabButtons = {};
  for (const [name, text] of TABS) {
    const b = h("button", { class: "plx-tab", "data-tab": name, role: "tab", text });
    b.addEventListener("click", () => {
      if (model.get("tab") !== name) { ctx.busy(); send({ tab: name }); }
    });
    tabButtons[name] = b;
    tabs.append(b);
  }
  const modeSel = h("select", { class: "plx-mode", "aria-label": "diff layout" });
  for (const m of ["unified", "side-by-side"]) modeSel.append(h("option", { value: m, text: m }));
  modeSel.addEventListener("change", () => { ctx.busy(); send({ diff_mode: modeSel.value }); });
  tabs.append(modeSel);

  const panes = {};
  for (const [name] of TABS) {
    panes[name] = h("div", { class: `plx-pane plx-pane-${name}`, "data-pane": name });
    paneBox.append(panes[name]);
  }
  const views = {};
  for (const [name] of TABS) {
    views[name] = PANES[name] ? PANES[name](ctx, panes[name]) : htmlPane(ctx, panes[name], name);
  }
  const explain = explainStrip(ctx);
  const body = h("div", { class: "plx-body" }, passes.list,
    h("div", { class: "plx-right" }, tabs, explain, paneBox));
  root.append(summary, failure, noKernel, passes.toolbar, body);
  el.append(root);

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
      panes[name].style.display = name === tab ? "" : "none";
    }
    modeSel.style.display = tab === "diff" || tab === "compare" ? "" : "none";
    explain.style.display = tab === "compare" || tab === "pipeline" ? "none" : "";
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

  return () => ctx.cleanup();
}

export default { render };
