// The step panes besides the graph: diff, compare, buffers (with bound sliders),
// pipeline, and the Explain strip above them. Their HTML comes from Python, escaped.

import { boxTables, h, stepText } from "./core.js";
import { highlightPlain } from "./highlight.js";
import { irTools } from "./ir.js";

// a pane that is its HTML (pipeline, and any tab without a factory)
export function htmlPane(ctx, pane, name) {
  const { model, on } = ctx;
  const render = () => { pane.innerHTML = model.get(`${name}_html`); boxTables(pane); };
  render();
  on(`change:${name}_html`, render);
  return {};
}

// the diff of the selected pass, with the IR search and function list of ir.js above
// it; diffs print the first few functions and the "show all" button asks for the rest
export function diffPane(ctx, pane) {
  const { model, on, send } = ctx;
  const body = h("div", { class: "plx-diff-body" });
  const tools = irTools(ctx, pane, body, "diff");
  pane.append(tools.bar, body);
  pane.addEventListener("click", (ev) => {
    if (ev.target.closest && ev.target.closest(".plx-show-all")) { ctx.busy(); send({ diff_all: true }); }
  });
  const render = () => {
    body.innerHTML = model.get("diff_html");
    highlightPlain(body);  // a static report's diffs come without token colours
    tools.rendered();
  };
  render();
  on("change:diff_html", render);
  return {};
}

// compare: choose A and B; the diff runs from A's input to B's output
export function comparePane(ctx, pane) {
  const { model, on, send } = ctx;
  const selA = h("select", { class: "plx-compare-a", "aria-label": "compare from" });
  const selB = h("select", { class: "plx-compare-b", "aria-label": "compare to" });
  const swap = h("button", { class: "plx-swap", text: "swap" });
  const body = h("div", { class: "plx-compare-body" });
  const tools = irTools(ctx, pane, body, "compare");
  pane.append(h("div", { class: "plx-compare-tools" },
    document.createTextNode("A "), selA, document.createTextNode(" \u2192 B "), selB, swap),
  tools.bar, body);
  selA.addEventListener("change", () => { ctx.busy(); send({ compare_a: Number(selA.value) }); });
  selB.addEventListener("change", () => { ctx.busy(); send({ compare_b: Number(selB.value) }); });
  swap.addEventListener("click", () => {
    if (model.get("compare_a") === model.get("compare_b")) return;
    ctx.busy();
    send({ compare_a: model.get("compare_b"), compare_b: model.get("compare_a") });
  });
  pane.addEventListener("click", (ev) => {
    if (ev.target.closest && ev.target.closest(".plx-show-all")) { ctx.busy(); send({ diff_all: true }); }
  });
  const renderOptions = () => {
    for (const sel of [selA, selB]) {
      sel.replaceChildren();
      for (const r of model.get("steps")) {
        if (r.kind === "container" || r.kind === "disabled") continue;  // no step to compare
        sel.append(h("option", { value: String(r.i), text: stepText(r) }));
      }
    }
    selA.value = String(model.get("compare_a"));
    selB.value = String(model.get("compare_b"));
  };
  const render = () => {
    body.innerHTML = model.get("compare_html");
    tools.rendered();
  };
  renderOptions();
  render();
  on("change:steps", renderOptions);
  on("change:compare_a", () => { selA.value = String(model.get("compare_a")); });
  on("change:compare_b", () => { selB.value = String(model.get("compare_b")); });
  on("change:compare_html", render);
  return {};
}

// buffers: a slider per symbolic dimension (Python redraws with bounds={n: value})
export function buffersPane(ctx, pane) {
  const { model, on, send } = ctx;
  const boundsBar = h("div", { class: "plx-bounds" });
  const body = h("div", { class: "plx-buffers-body" });
  pane.append(boundsBar, body);
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
          ctx.busy();
          send({ bounds: { ...model.get("bounds"), [name]: Number(slider.value) } });
        }, 150);
      });
      boundsBar.append(h("label", {}, document.createTextNode(`${name} `), slider), value);
    }
  };
  // a tensor row -> its producer and consumers highlighted in the graph
  const render = () => {
    body.innerHTML = model.get("buffers_html");
    boxTables(body);
    for (const row of body.querySelectorAll("tr[data-focus]")) {
      const names = JSON.parse(row.dataset.focus);
      if (!names.length) continue;
      row.classList.add("plx-linked");
      row.title = `show ${names.join(", ")} in the fused graph`;
    }
  };
  body.addEventListener("click", (ev) => {
    const row = ev.target.closest && ev.target.closest("tr.plx-linked");
    const sel = window.getSelection();
    if (!row || (sel && !sel.isCollapsed)) return;
    ctx.busy();
    send({ focus: JSON.parse(row.dataset.focus), tab: "graph" });
  });
  renderBounds();
  render();
  on("change:symbols", renderBounds);
  on("change:bounds", renderBounds);
  on("change:buffers_html", render);
  ctx.onCleanup(() => clearTimeout(boundsTimer));
  return {};
}

// the Explain strip: what the selected pass does and what it changed here (HTML escaped
// by passlab). Compact, so that the panes keep their room: what it changed on two lines
// at most (all of it on hover), the pass's summary folded with the rest of "what this
// pass does"; that fold opens the whole strip and stays open from pass to pass
export function explainStrip(ctx) {
  const { model, on } = ctx;
  const strip = h("div", { class: "plx-explain-strip", "aria-live": "polite" });
  let open = false;
  strip.addEventListener("toggle", (ev) => {
    if (ev.target.tagName !== "DETAILS") return;
    open = ev.target.open;
    strip.classList.toggle("plx-open", open);
  }, true);
  const render = () => {
    strip.innerHTML = model.get("explain_html");
    const fold = strip.querySelector("details");
    if (fold && open) fold.open = true;
    strip.classList.toggle("plx-open", Boolean(fold && open));
    const here = strip.querySelector(".ple-here");
    if (here) here.title = here.textContent;
  };
  render();
  on("change:explain_html", render);
  return strip;
}
