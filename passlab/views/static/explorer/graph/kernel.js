// The kernel panel below the fused graph: the clicked kernel's TIR, the code the target
// generated for it, and its links (its diff, the passes that made it, its buffers).
// Maximise it over the graph (the button, or Escape to restore), or drag the bar above
// it to share the pane's height with the graph.

import { boxTables, h, softBreaks } from "../core.js";

// Code as one div per line, so that a long line wraps indented under its start (CSS
// .plx-code-line). `html`: highlighted lines from passlab (escaped, each line's tags
// closed on it), else `text`, set as text.
function codeLines(box, { html = "", text = "" }) {
  box.replaceChildren();
  if (html) {
    box.innerHTML = html.split("\n").map((line) => `<div class="plx-code-line">${line}</div>`).join("");
  } else if (text) {
    for (const line of text.split("\n")) box.append(h("div", { class: "plx-code-line", text: line }));
  }
  // a wrapped line's rest indented under its code, 4 characters in (CSS: 4 at least)
  for (const line of box.children) {
    const lead = /^ */.exec(line.textContent)[0].length;
    if (lead) line.style.setProperty("--plx-lead", `${lead + 4}ch`);
  }
  softBreaks(box.children);
}

// The panel for `pane`; `restored()` runs when it gives the graph its room back.
// Returns { el, render(), lookingUp(id) }: render() follows the kernel_* and code_*
// traits, lookingUp(id) shows that a kernel was asked for.
export function kernelPanel(ctx, pane, restored) {
  const { model, send } = ctx;
  const kernelTitle = h("div", { class: "plx-kernel-title" });
  const kernelText = h("div", { class: "plx-kernel-text" });
  const kernelLinks = h("div", { class: "plx-kernel-links" });
  const codeTitle = h("div", { class: "plx-code-title" });
  const codeText = h("div", { class: "plx-code-text" });
  const codeCol = h("div", { class: "plx-kernel-col plx-code" }, codeTitle, codeText);
  const maxButton = h("button", { class: "plx-zoom plx-kernel-max-btn", type: "button",
    text: "maximise", title: "show the kernel panel over the whole pane", "aria-pressed": "false" });
  const split = h("div", { class: "plx-kernel-split", role: "separator", "aria-orientation": "horizontal",
    title: "drag to resize the kernel panel" });
  const kernelBar = h("div", { class: "plx-kernel-bar" }, maxButton);
  const kernel = h("div", { class: "plx-kernel" }, split, kernelBar, kernelLinks,
    h("div", { class: "plx-kernel-cols" },
      h("div", { class: "plx-kernel-col" }, kernelTitle, kernelText), codeCol));
  const setMax = (on) => {
    pane.classList.toggle("plx-kernel-maxed", on);
    maxButton.textContent = on ? "restore" : "maximise";
    maxButton.setAttribute("aria-pressed", on ? "true" : "false");
    if (!on) restored();
  };
  maxButton.addEventListener("click", () => setMax(!pane.classList.contains("plx-kernel-maxed")));
  kernel.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && pane.classList.contains("plx-kernel-maxed")) { e.stopPropagation(); setMax(false); }
  });
  split.addEventListener("mousedown", (e) => {
    if (e.button !== 0) return;
    e.preventDefault();
    const y0 = e.clientY, h0 = kernel.getBoundingClientRect().height;
    // the graph keeps its 300 px (and the tools and notes above it theirs)
    const above = [...pane.children].filter((c) => c !== kernel && !c.classList.contains("plx-graph-box"))
      .reduce((sum, c) => sum + c.getBoundingClientRect().height, 0);
    const onMove = (ev) => {
      const room = pane.clientHeight - above - 300 - 16;
      const hgt = Math.max(160, Math.min(room, h0 - (ev.clientY - y0)));
      kernel.style.flex = `0 0 ${hgt}px`;
    };
    const onUp = () => { window.removeEventListener("mousemove", onMove); window.removeEventListener("mouseup", onUp); };
    window.addEventListener("mousemove", onMove);
    window.addEventListener("mouseup", onUp);
  });
  // "created by #10 FuseOps": a link selects that pass
  kernelLinks.addEventListener("click", (e) => {
    const a = e.target.closest("a.plx-step-link");
    if (!a) return;
    e.preventDefault();
    ctx.busy();
    send({ selected: Number(a.dataset.step) });
  });

  const render = () => {
    kernelTitle.textContent = model.get("kernel_title");
    // highlighted TVMScript (escaped by passlab), the plain text where there is none
    codeLines(kernelText, { html: model.get("kernel_text_html"), text: model.get("kernel_text") });
    kernelLinks.innerHTML = model.get("kernel_html");  // escaped by passlab
    boxTables(kernelLinks);
    kernel.style.display = model.get("kernel_title") ? "" : "none";
    codeTitle.textContent = model.get("code_title");
    codeLines(codeText, { text: model.get("code_text") });
    codeCol.style.display = model.get("code_text") ? "" : "none";
  };
  const lookingUp = (id) => {
    kernel.style.display = "";
    kernelTitle.textContent = `looking up ${id} ...`;
    kernelText.textContent = "";
    kernelLinks.replaceChildren();
    codeTitle.textContent = codeText.textContent = "";
  };
  return { el: kernel, render, lookingUp };
}
