// The pass list and its filters (search, stage, changed only, inner passes). The list
// explains itself: a header names each column (with its unit), every row's tooltip says
// what its number, stage and change counts mean, names wrap at their token boundaries
// instead of being cut, and the search marks what matched.

import { h } from "./core.js";

const ORIGIN = { tvm: "TVM's pass", user: "your pass" };

// the columns: [class, header text, header tooltip]
const COLUMNS = [
  ["plx-i", "#", "the pass's position in the pipeline, as the Edit and Pipeline panes "
    + "number it; \u2013: a pass TVM runs by itself, no entry of the pipeline"],
  ["plx-label", "pass", "the pass (hover a row for what it did)"],
  ["plx-stage-tag", "stage", "the pipeline stage it ran in"],
  ["plx-changes", "changes", "functions the pass changed: +added -removed ~modified"],
  ["plx-ms", "ms", "the time the pass took, in milliseconds"],
];

// Where a pass name may wrap: after "." or "_", before a capital that follows a
// lower-case letter or a digit ("s_tir.|Plan|And|Update|Buffer|Allocation|Location").
function breaksBefore(text, i) {
  const prev = text[i - 1], c = text[i];
  return prev === "." || prev === "_" || (/[a-z0-9]/.test(prev) && /[A-Z]/.test(c));
}

// `text` as nodes: <wbr> at its token boundaries, the matches of `needle` (lower case)
// in <mark class="plx-hit">. Text only: names never become markup.
export function labelNodes(text, needle) {
  const frag = document.createDocumentFragment();
  const starts = new Set(), ends = new Set();
  if (needle) {
    const low = text.toLowerCase();
    for (let i = low.indexOf(needle); i >= 0; i = low.indexOf(needle, i + needle.length)) {
      starts.add(i);
      ends.add(i + needle.length);
    }
  }
  let run = "", mark = null;
  const flush = () => { if (run) { (mark || frag).append(run); run = ""; } };
  for (let i = 0; i < text.length; i++) {
    if (mark && ends.has(i)) { flush(); frag.append(mark); mark = null; }
    if (starts.has(i)) { flush(); mark = h("mark", { class: "plx-hit" }); }
    if (i > 0 && breaksBefore(text, i)) { flush(); (mark || frag).append(h("wbr")); }
    run += text[i];
  }
  flush();
  if (mark) frag.append(mark);
  return frag;
}

// What a row's tooltip says: the whole name, its number and step, stage, origin, what
// it changed and how long it took.
export function rowTitle(r) {
  if (r.kind === "disabled") return `${r.label}\ndisabled in the pipeline (#${r.n}): not run`;
  const where = r.n == null
    ? (r.kind === "inner" ? "an inner pass: run inside another pass, on a partial module"
      : r.kind === "container" ? "a wrapper that runs the passes under it"
        : "no pipeline number: TVM runs this pass by itself (no entry of the pipeline)")
    : `#${r.n} in the pipeline`;
  const lines = [r.label, `${where}; step ${r.i} of the trace`,
    `stage ${r.stage}; ${ORIGIN[r.origin] || r.origin}`];
  lines.push(r.failed ? "failed" : r.summary == null ? "its changes are still being counted"
    : r.detail || "no change");
  if (r.ms != null) lines.push(`${r.ms.toFixed(2)} ms`);
  return lines.join("\n");
}

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
  const head = h("div", { class: "plx-list-head", "aria-hidden": "true" },
    ...COLUMNS.map(([cls, text, title]) => h("span", { class: cls, text, title })));
  const list = h("div", { class: "plx-list", tabindex: "0", role: "listbox",
                          "aria-label": "passes", "data-lm-suppress-shortcuts": "true" });
  // the header stays put above the rows (outside their scroll box: it covers none)
  const box = h("div", { class: "plx-passes" }, head, list);

  let byIndex = new Map();
  let rowEls = new Map();
  // a draw to come (drawSoon below): its timer, what it redraws ("rows" or "marks"), and
  // whether it scrolls to the selected row
  let drawTimer = null, dirty = null, scrollTo = false;
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

  // one row of the list (a pass, an inner step, a wrapper or a disabled entry)
  const rowElement = (r, needle, inner) => {
    // a large trace sends some rows before their change counts (changes_pending)
    const counting = r.summary == null && !r.failed;
    const cls = ["plx-row", counting ? "counting" : r.changed ? "changed" : "same", r.kind];
    if (r.origin === "user") cls.push("user");
    if (r.failed) cls.push("failed");
    // the pass's pipeline position, as the Edit and Pipeline panes number it; a step
    // that is no pipeline entry (an inner pass, TVM's own) has none
    const label = h("span", { class: "plx-label" });
    label.append(labelNodes(r.label, needle));
    const row = h("div", { class: cls.join(" "), role: "option", "data-index": String(r.i) },
      h("span", { class: r.n == null ? "plx-i plx-i-none" : "plx-i", text: r.n == null ? "\u2013" : `#${r.n}` }),
      label,
      h("span", { class: "plx-stage-tag", text: r.stage, title: r.stage }),
      h("span", { class: "plx-changes",
                  text: r.failed ? "failed" : counting ? "\u2026" : r.summary }),
      h("span", { class: "plx-ms", text: r.ms == null ? "" : r.ms.toFixed(2) }));
    if (inner) row.style.paddingLeft = `${4 + 12 * r.depth}px`;
    row.title = rowTitle(r);
    if (r.kind === "disabled") row.setAttribute("aria-disabled", "true");
    return row;
  };

  const renderList = () => {
    clearTimeout(drawTimer);
    drawTimer = null;
    dirty = null;
    const vis = model.get("visible");
    const inner = model.get("show_inner");
    const needle = (model.get("search") || "").trim().toLowerCase();
    rowEls = new Map();
    list.replaceChildren();
    for (const i of vis) {
      const r = byIndex.get(i);
      if (!r) continue;
      const row = rowElement(r, needle, inner);
      if (r.stage === "llvm") {  // LLVM's passes: the group under the codegen row
        row.classList.add("llvm");
        row.style.paddingLeft = `${4 + 12 * r.depth}px`;
      }
      rowEls.set(i, row);
      list.append(row);
      if (r.llvm) list.append(llvmToggle(r.llvm, r.depth));
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
    const llvm = model.get("show_llvm")  // the LLVM rows there are (a report keeps some)
      ? model.get("steps").filter((r) => r.stage === "llvm").length : 0;
    const main = model.get("steps").filter((r) => r.kind === "pass" || r.failed).length + llvm;
    const off = vis.filter((i) => i < 0).length;  // disabled entries: rows, not passes run
    count.textContent = `${vis.length - off} of ${inner ? model.get("step_count") : main} passes`
      + (off ? ` (+${off} disabled)` : "");
    markSelected(scrollTo);
    scrollTo = false;
  };

  // the search's marks on the rows drawn (a search that leaves the same rows)
  const remark = () => {
    drawTimer = null;
    dirty = null;
    const needle = (model.get("search") || "").trim().toLowerCase();
    for (const [i, row] of rowEls) {
      const r = byIndex.get(i);
      if (r) row.querySelector(".plx-label").replaceChildren(labelNodes(r.label, needle));
    }
  };

  // What changes together is drawn once: a search changes `search`, then `visible` (the
  // answer: the report's in the same task, the kernel's later) and often `selected`. The
  // search alone only moves the marks on the rows there are; anything else that shapes
  // the rows draws them once, after the task (a timer: microtasks run first, and the
  // report answers in one). A selection made meanwhile is scrolled to once its row is
  // drawn.
  const drawSoon = (what) => {
    if (dirty !== "rows") dirty = what;
    if (drawTimer === null) drawTimer = setTimeout(() => (dirty === "rows" ? renderList() : remark()), 0);
  };
  ctx.onCleanup(() => clearTimeout(drawTimer));

  // the codegen row heads LLVM's own passes (a trace recorded with llvm_passes=True): a
  // group that opens and closes under it
  const llvmToggle = (n, depth) => {
    const open = model.get("show_llvm");
    const b = h("button", { type: "button", class: "plx-llvm-toggle",
                            "aria-expanded": open ? "true" : "false",
                            text: `${open ? "\u25be" : "\u25b8"} LLVM's passes \u00b7 ${n}` });
    b.style.marginLeft = `${16 + 12 * depth}px`;
    b.title = open ? "hide LLVM's passes" : "show LLVM's own passes: the steps of the code "
      + "generator that changed a function, in the order LLVM ran them";
    b.addEventListener("click", () => {
      if (!model.get("steps_complete")) ctx.busy();
      send({ show_llvm: !model.get("show_llvm") });
    });
    return h("div", { class: "plx-llvm-group" }, b);
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

  // rows drawn without their change counts: the kernel sends them once the first view
  // is out where it has an event loop; asking covers a kernel without one (none in an
  // exported page, where every row has its counts)
  let asked = false;
  const askChanges = () => {
    if (asked || !model.get("changes_pending")) return;
    asked = true;
    try { if (model.send) model.send({ load: "changes" }); } catch (e) { /* no kernel */ }
  };

  // first render, then follow the model
  indexRows();
  renderStages();
  search.value = model.get("search");
  changedBox.checked = model.get("changed_only");
  innerBox.checked = model.get("show_inner");
  renderList();
  askChanges();
  const drawRows = () => drawSoon("rows");
  on("change:steps", () => { indexRows(); drawRows(); });
  on("change:changes_pending", () => { asked = false; askChanges(); });
  on("change:steps_complete", drawRows);
  on("change:stages", renderStages);
  on("change:visible", drawRows);
  on("change:show_inner", () => { innerBox.checked = model.get("show_inner"); });
  on("change:show_llvm", drawRows);
  on("change:changed_only", () => { changedBox.checked = model.get("changed_only"); });
  on("change:stage", () => { stageSel.value = model.get("stage"); });
  on("change:search", () => {
    if (document.activeElement !== search) search.value = model.get("search");
    drawSoon("marks");  // the marks follow the search (the rows may be the same)
  });
  on("change:selected", () => {
    if (drawTimer !== null && dirty === "rows") scrollTo = true;  // rows on their way
    else markSelected(true);
  });

  return { toolbar, list, box, select, markSelected };
}
