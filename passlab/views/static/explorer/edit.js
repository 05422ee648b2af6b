// The edit pane: change the pipeline (disable, enable, remove, move, insert passes),
// re-run from the first edit, and compare the result with the recorded build.
// Python renders the pane (explorer_edit.pane_html, escaped); its buttons carry
// data-edit / data-pos / data-show, and this part turns clicks into trait changes:
// edit_pending (the list of pending edits), edit_run (bumped by Run), edit_shown.

import { boxTables } from "./core.js";


export function editPane(ctx, pane) {
  const { model, on, send } = ctx;
  const pending = () => model.get("edit_pending") || [];
  const push = (op) => { ctx.busy(); send({ edit_pending: [...pending(), op] }); };
  const $ = (sel) => pane.querySelector(sel);
  // the insert bar's choices survive a re-render (the pane is replaced after each edit)
  const kept = { filter: "", pass: "", where: "after", anchor: "" };

  const filterPasses = () => {
    const input = $(".plx-edit-filter"), sel = $(".plx-edit-pass");
    if (!input || !sel) return;
    const needle = input.value.trim().toLowerCase();
    let first = null;
    for (const o of sel.options) {
      const hit = o.value.toLowerCase().includes(needle);
      o.hidden = !hit;
      o.disabled = !hit;
      if (hit && !first) first = o;
    }
    const chosen = sel.selectedOptions[0];
    if (first && (!chosen || chosen.hidden)) sel.value = first.value;
  };

  const render = () => {
    pane.innerHTML = model.get("edit_html");
    boxTables(pane);
    const input = $(".plx-edit-filter");
    if (!input) return;  // a trace-only Explorer: a note, no controls
    input.value = kept.filter;
    if (kept.pass) $(".plx-edit-pass").value = kept.pass;
    $(".plx-edit-where").value = kept.where;
    if (kept.anchor) $(".plx-edit-anchor").value = kept.anchor;
    filterPasses();
  };
  const remember = () => {
    if (!$(".plx-edit-filter")) return;
    kept.filter = $(".plx-edit-filter").value;
    kept.pass = $(".plx-edit-pass").value;
    kept.where = $(".plx-edit-where").value;
    kept.anchor = $(".plx-edit-anchor").value;
  };

  pane.addEventListener("click", (ev) => {
    const el = ev.target.closest ? ev.target : null;
    const show = el && el.closest("[data-show]");
    if (show) { ctx.busy(); send({ edit_shown: Number(show.dataset.show) }); return; }
    const b = el && el.closest("[data-edit]");
    if (!b || b.disabled) return;
    remember();
    const act = b.dataset.edit;
    if (act === "run") {
      b.disabled = true;
      b.textContent = "Running\u2026";
      ctx.busy();
      send({ edit_run: model.get("edit_run") + 1 });
    } else if (act === "undo") {
      ctx.busy(); send({ edit_pending: pending().slice(0, -1) });
    } else if (act === "clear") {
      ctx.busy(); send({ edit_pending: [] });
    } else if (act === "anchor") {  // "+" on a pass: insert after it
      $(".plx-edit-anchor").value = b.dataset.pos;
      $(".plx-edit-where").value = "after";
      remember();
      $(".plx-edit-filter").focus();
    } else if (act === "insert") {
      const name = $(".plx-edit-pass").value;
      if (name) {
        push({ action: "insert", position: Number($(".plx-edit-anchor").value), name,
               where: $(".plx-edit-where").value });
      }
    } else {
      push({ action: act, position: Number(b.dataset.pos) });
    }
  });
  pane.addEventListener("input", (ev) => {
    if (ev.target.classList.contains("plx-edit-filter")) { filterPasses(); remember(); }
  });
  pane.addEventListener("change", () => remember());

  render();
  on("change:edit_html", render);
  return {};
}
