// The static report's entry (a classic script): the Explorer's front end over the state
// passlab wrote into the page (the "plx-data" block: the widget's traits and where each
// pane's HTML is), through a static model (model.js) instead of a kernel.

import { render } from "../explorer/main.js";
import { readBlock } from "./blocks.js";
import { staticModel } from "./model.js";

async function openReport() {
  const root = document.getElementById("plx-root");
  if (!root) return;
  // <html data-theme="dark">: the TVMScript token colours follow the body's pl-dark class
  if (document.documentElement.dataset.theme === "dark") document.body.classList.add("pl-dark");
  let data;
  try {
    data = JSON.parse(await readBlock("plx-data"));
  } catch (err) {
    root.textContent = `could not read this report's data: ${err.message}`;
    root.className = "passlab-error";
    return;
  }
  const model = staticModel(data.state, data);
  render({ model, el: root });
  await model.start();
  // a link to a step (#step-12) selects it
  const fromHash = () => {
    const m = /^#step-(-?\d+)$/.exec(location.hash);
    if (!m || model.get("selected") === Number(m[1])) return;
    if (!data.state.steps.some((r) => r.i === Number(m[1]))) return;
    model.set("selected", Number(m[1]));
    model.save_changes();
  };
  window.addEventListener("hashchange", fromHash);
  fromHash();
  // "show the failing pass" (the failure panel) and a pane note's "show #6 FuseTIR"
  document.addEventListener("click", (ev) => {
    const go = ev.target.closest && ev.target.closest(".pl-goto, .plx-goto-step");
    if (!go) return;
    if (go.classList.contains("pl-goto")) {
      model.set("tab", "diff");
      root.scrollIntoView();
    }
    model.set("selected", Number(go.dataset.step));
    model.save_changes();
  });
  root.dataset.ready = "1";
}

if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", openReport);
else openReport();
