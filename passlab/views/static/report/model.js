// A model with anywidget's interface (get, set, on, off, save_changes, send) over the
// state passlab wrote into the page, so that the Explorer's front end runs in the static
// report unchanged. What the widget's Python side answers (the visible list for the
// filters, a pane's HTML for the selected step, tab and layout, the kernel panel), this
// model answers from the page's data blocks, or with a note saying it is not in this
// report. Every string from the trace reaches the page as text or as HTML passlab
// escaped; notes are built with textContent.

import { readBlock } from "./blocks.js";
import { unifiedFromSideBySide } from "./unified.js";

const same = (a, b) => a === b || JSON.stringify(a) === JSON.stringify(b);

function note(text, cls = "plx-note") {
  const d = document.createElement("div");
  d.className = cls;
  d.textContent = text;
  return d.outerHTML;
}

// a note and a button per step that has what the note is about (report/main.js selects
// the step on a click)
function noteWithSteps(text, steps) {
  const d = document.createElement("div");
  d.className = "plx-note";
  d.textContent = text;
  for (const [i, name] of steps || []) {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "plx-goto-step";
    b.dataset.step = String(i);
    b.textContent = `show ${name}`;
    d.append(" ", b);
  }
  return d.outerHTML;
}

// The steps the pass list shows, as explorer_list.visible computes them: the main chain
// (every step with show_inner), changed only, one stage, a name search; the pipeline's
// disabled entries (rows of index -1 - position) where they stand.
export function visibleSteps(rows, { changed_only, stage, search, show_inner, show_llvm }) {
  const main = (r) => r.kind === "pass" || r.failed;
  let steps = rows.filter((r) => r.kind !== "disabled");
  if (!show_inner && steps.some(main)) {
    steps = steps.filter((r) => main(r) || (show_llvm && r.stage === "llvm"));
  }
  if (changed_only) steps = steps.filter((r) => r.changed || r.failed);
  if (stage) steps = steps.filter((r) => r.stage === stage);
  const needle = (search || "").trim().toLowerCase();
  if (needle) steps = steps.filter((r) => r.label.toLowerCase().includes(needle));
  const out = steps.map((r) => r.i);
  if (changed_only) return out;
  const pos = new Map(rows.filter((r) => r.kind !== "disabled").map((r) => [r.i, r.n ?? -1]));
  for (const r of rows) {
    if (r.kind !== "disabled") continue;
    if ((stage && r.stage !== stage) || (needle && !r.label.toLowerCase().includes(needle))) continue;
    const at = out.findIndex((i) => (pos.get(i) ?? -1) > r.n);
    out.splice(at < 0 ? out.length : at, 0, r.i);
  }
  return out;
}

// `state`: the Explorer's traits; `data`: { blocks: {key: block id}, notes: {name: text},
// drawn: [[step, name], ...] (the steps whose graph and buffers are kept) }
// (passlab/views/report.py writes both). Keys: "explain:<i>", "diff:<i>:side-by-side"
// (the unified layout is made from it),
// "graph:<i>:<params>:<overlay>", "buffers:<i>", "provenance:<i>", "provenance:open:<the
// groups drawn open, sorted, one a line>", "pipeline",
// "kernels:<i>:collapse" (a JSON object: node id -> [title, text, links, code title,
// code]).
export function staticModel(state, data) {
  const listeners = new Map();
  const changed = new Set();
  const blocks = data.blocks || {};
  const notes = data.notes || {};
  const rowOf = () => new Map(state.steps.map((r) => [r.i, r]));
  let answering = Promise.resolve();

  const emit = (name) => {
    for (const fn of [...(listeners.get(`change:${name}`) || [])]) fn();
  };
  const put = (name, value) => {  // what "Python" answers: set and announce
    if (same(state[name], value)) return;
    state[name] = value;
    emit(name);
  };
  const block = async (key) => (key in blocks ? readBlock(blocks[key]) : null);

  // a report keeps each diff side by side; the unified layout is made from it, once
  const unified = new Map();
  async function diffHtml(i, mode) {
    const kept = await block(`diff:${i}:${mode}`);
    if (kept !== null || mode !== "unified") return kept;
    if (!unified.has(i)) {
      const sbs = await block(`diff:${i}:side-by-side`);
      unified.set(i, sbs === null ? null : unifiedFromSideBySide(sbs));
    }
    return unified.get(i);
  }

  async function paneHtml(tab) {
    const i = state.selected;
    if (tab === "pipeline") return (await block("pipeline")) ?? note(notes.pipeline || "");
    if (tab === "compare" || tab === "edit") return note(notes[tab], "plx-warn");
    if (tab === "profile") return (await block("profile")) ?? note(notes.profile || notes.other, "plx-warn");
    const row = rowOf().get(i);
    if (!row) return note("Select a pass in the list to see what it did.");
    if (tab === "diff") {
      const html = await diffHtml(i, state.diff_mode);
      if (html !== null) return html;
      if (row.failed) return note(state.failure || "this pass failed", "plx-warn");
      if (!row.changed) return note("No change: the module after this pass is the module it received.");
      return note(notes.diff);
    }
    if (tab === "graph") {
      const html = await block(`graph:${i}:${state.graph_params}:${state.graph_overlay}`);
      if (html !== null) return html;
      // drawn, but not with these weights / this colouring: the default drawing
      if (`graph:${i}:collapse:none` in blocks) {
        return note(notes.graph_variant, "plx-warn") + (await block(`graph:${i}:collapse:none`));
      }
      return noteWithSteps(notes.graph, data.drawn);
    }
    if (tab === "buffers") return (await block(`buffers:${i}`)) ?? noteWithSteps(notes.buffers, data.drawn);
    if (tab === "provenance") {
      // the groups drawn open: the first view, or one more group opened (a click in it)
      const open = state.provenance_open;
      if (open) {
        const kept = await block(`provenance:open:${[...open].sort().join("\n")}`);
        if (kept !== null) return kept;
        return note(notes.provenance_open, "plx-warn") + ((await block("provenance:default")) ?? "");
      }
      return (await block(`provenance:${i}`)) ?? (await block("provenance:default")) ?? note(notes.provenance);
    }
    return note(notes[tab] || notes.other, "plx-warn");
  }

  async function render() {
    const tab = state.tab;
    let html;
    try {
      html = await paneHtml(tab);
    } catch (err) {
      html = note(`could not show this pane: ${err.message}`, "passlab-error");
    }
    if (tab !== state.tab) return;  // another tab was opened meanwhile
    put(`${tab}_html`, html);
    if (tab === "buffers") put("symbols", []);  // bounds need a kernel: no sliders
  }

  const clearKernel = () => {
    for (const k of ["node", "kernel_title", "kernel_text", "kernel_text_html", "kernel_html",
      "code_title", "code_text"]) put(k, "");
  };
  async function showKernel() {
    const node = state.node;
    if (!node) return;
    let got = null;
    try {
      // the panels of the graph after fusion: its kernels whichever way the weights are
      // drawn; a later graph's node of the same id shows that kernel (its title says
      // after which pass)
      const text = await block(`kernels:${state.selected}:${state.graph_params}`)
        ?? await block(`kernels:${state.selected}:collapse`) ?? await block("kernels:default");
      got = text === null ? null : (JSON.parse(text)[node] || null);
    } catch (err) {
      got = [`could not look up ${node}`, String(err.message), "", "", ""];
    }
    if (node !== state.node) return;
    const [title, text, links, codeTitle, code] = got
      || [`${node}: ${notes.kernel}`, "", "", "", ""];
    put("kernel_title", title);
    put("kernel_text", text);
    put("kernel_text_html", "");
    put("kernel_html", links);
    put("code_title", codeTitle);
    put("code_text", code);
  }

  // The selection under new filters, as explorer.py's _follow_filter: kept while its row
  // is shown; a filter that hides it selects the first step shown, and the user's choice
  // comes back once a filter shows it again (unless they chose another meanwhile).
  // Returns the step to select, or null to keep the selection.
  let hiddenChoice = null, filterPick = null;
  function followFilter(steps) {
    let target;
    if (hiddenChoice !== null && steps.includes(hiddenChoice) && state.selected === filterPick) {
      target = hiddenChoice;
    } else if (steps.length && !steps.includes(state.selected)) {
      if (hiddenChoice === null) hiddenChoice = state.selected;
      target = steps[0];
    } else {
      return null;
    }
    filterPick = target === hiddenChoice ? null : target;
    if (target === hiddenChoice) hiddenChoice = null;
    return target;
  }

  // what the widget's observers do (passlab/views/explorer.py), for the traits the front
  // end changed
  async function answer(names) {
    const has = (...n) => n.some((x) => names.includes(x));
    if (has("selected")) hiddenChoice = filterPick = null;  // the user's own choice
    if (has("changed_only", "stage", "search", "show_inner", "show_llvm")) {
      if (state.show_inner) put("steps_complete", true);  // nothing more to come
      put("visible", visibleSteps(state.steps, state));
      const target = followFilter(state.visible.filter((i) => i >= 0));
      if (target !== null) {
        state.selected = target;
        emit("selected");
        names.push("selected");
      }
    }
    if (has("selected")) {
      for (const k of ["diff_html", "graph_html", "buffers_html"]) put(k, "");
      clearKernel();
      const explain = await block(`explain:${state.selected}`);
      put("explain_html", explain ?? "");
    }
    if (has("graph_params")) clearKernel();
    if (has("selected", "tab", "diff_mode", "diff_all", "graph_params", "graph_overlay",
      "compare_a", "compare_b", "bounds", "provenance_open")) await render();
    if (has("node")) await showKernel();
    put("rendered", state.rendered + 1);
  }

  return {
    get: (name) => state[name],
    set(name, value) {
      if (same(state[name], value)) return;
      state[name] = value;
      changed.add(name);
      emit(name);
    },
    on(ev, fn) {
      if (!listeners.has(ev)) listeners.set(ev, new Set());
      listeners.get(ev).add(fn);
    },
    off(ev, fn) { if (listeners.has(ev)) listeners.get(ev).delete(fn); },
    save_changes() {
      const names = [...changed];
      changed.clear();
      if (!names.length) return;
      // one answer at a time, in order, as the kernel would
      answering = answering.then(() => answer(names)).catch((err) => {
        console.error("passlab report:", err);
      });
    },
    send() {},  // the widget's messages to its kernel (view counts): no kernel here
    // the first render: the panes of the state's selection, as Explorer() fills them
    start: () => answer(["selected"]),
  };
}
