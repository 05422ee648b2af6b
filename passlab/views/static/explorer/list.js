// The pass list and its filters (search, stage, changed only, inner passes).

import { h } from "./core.js";

export function passList(ctx) {
  const { model, on, send } = ctx;
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

  let byIndex = new Map();
  let rowEls = new Map();
  const indexRows = () => {
    byIndex = new Map(model.get("steps").map((r) => [r.i, r]));
  };

  const renderStages = () => {
    stageSel.replaceChildren(h("option", { value: "", text: "all stages" }));
    for (const s of model.get("stages")) stageSel.append(h("option", { value: s, text: s }));
    stageSel.value = model.get("stage");
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
      // the pass's pipeline position, as the Edit and Pipeline panes number it; a step
      // that is no pipeline entry (an inner pass) has none. The step index: the tooltip.
      const row = h("div", { class: cls.join(" "), role: "option", "data-index": String(i) },
        h("span", { class: "plx-i", text: r.n == null ? "" : `#${r.n}` }),
        h("span", { class: "plx-label", text: r.label }),
        h("span", { class: "plx-stage-tag", text: r.stage }),
        h("span", { class: "plx-changes", text: r.failed ? "failed" : r.summary }),
        h("span", { class: "plx-ms", text: r.ms == null ? "" : r.ms.toFixed(2) }));
      if (inner) row.style.paddingLeft = `${4 + 12 * r.depth}px`;
      row.title = r.kind === "disabled" ? `${r.label}: disabled in the pipeline (#${r.n}), not run`
        : `${r.label} (${r.stage}, ${r.kind}, ${r.origin}; step ${i} of the trace)`;
      if (r.kind === "disabled") row.setAttribute("aria-disabled", "true");
      rowEls.set(i, row);
      list.append(row);
    }
    // a large trace sends the inner passes' rows only when they are shown
    const waiting = inner && !model.get("steps_complete");
    if (waiting) {
      list.append(h("div", { class: "plx-empty plx-rows-loading",
        text: "loading the inner passes\u2026" }));
    } else if (!vis.length) {
      list.append(h("div", { class: "plx-empty",
        text: model.get("step_count") ? "no pass matches the filters" : "no passes recorded" }));
    }
    const main = model.get("steps").filter((r) => r.kind === "pass" || r.failed).length;
    const off = vis.filter((i) => i < 0).length;  // disabled entries: rows, not passes run
    count.textContent = `${vis.length - off} of ${inner ? model.get("step_count") : main} passes`
      + (off ? ` (+${off} disabled)` : "");
    markSelected(false);
  };

  const select = (i) => {
    if (i < 0 || i === model.get("selected")) return;  // a disabled entry: nothing ran
    ctx.busy();
    send({ selected: i });
    markSelected(true);
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
    const vis = model.get("visible").filter((i) => i >= 0);
    if (!vis.length) return;
    const at = vis.indexOf(model.get("selected"));
    let next;
    if (keys[e.key] === "first") next = 0;
    else if (keys[e.key] === "last") next = vis.length - 1;
    else next = at < 0 ? 0 : Math.min(vis.length - 1, Math.max(0, at + keys[e.key]));
    select(vis[next]);
  });

  let searchTimer = null;
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => send({ search: search.value }), 150);
  });
  stageSel.addEventListener("change", () => send({ stage: stageSel.value }));
  changedBox.addEventListener("change", () => send({ changed_only: changedBox.checked }));
  innerBox.addEventListener("change", () => {
    // rows still to come from the kernel (none in an exported page: the busy flag then
    // says so)
    if (innerBox.checked && !model.get("steps_complete")) ctx.busy();
    send({ show_inner: innerBox.checked });
  });
  ctx.onCleanup(() => clearTimeout(searchTimer));

  // first render, then follow the model
  indexRows();
  renderStages();
  search.value = model.get("search");
  changedBox.checked = model.get("changed_only");
  innerBox.checked = model.get("show_inner");
  renderList();
  on("change:steps", () => { indexRows(); renderList(); });
  on("change:steps_complete", renderList);
  on("change:stages", renderStages);
  on("change:visible", renderList);
  on("change:show_inner", () => { innerBox.checked = model.get("show_inner"); });
  on("change:changed_only", () => { changedBox.checked = model.get("changed_only"); });
  on("change:stage", () => { stageSel.value = model.get("stage"); });
  on("change:search", () => {
    if (document.activeElement !== search) search.value = model.get("search");
  });
  on("change:selected", () => markSelected(true));

  return { toolbar, list, select, markSelected };
}
