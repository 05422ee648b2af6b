// The diff and compare panes' reading aids: a search in the IR of the step (a count,
// next/previous, hits in the functions a first view does not print), a list of the
// changed functions to jump to, and links from Relax bindings to the graph.
// Matches are found in each code cell's text and wrapped in <mark class="plx-hit">
// across the token spans of the highlighted HTML; IR text is never parsed as HTML.

import { h } from "./core.js";

const MAX_HITS = 20000;  // more marks than this make a page crawl; the count says "+"

// the marks of `ranges` ([start, stop) in cell.textContent, sorted, not overlapping):
// one array of <mark> elements per range (a range crossing token spans gets several)
function markRanges(cell, ranges) {
  const nodes = [];  // [text node, offset of its first character in the cell]
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  let pos = 0;
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    nodes.push([n, pos]);
    pos += n.data.length;
  }
  const marks = ranges.map(() => []);
  // from the end backwards: splitting a text node keeps the offsets before the split
  let k = nodes.length - 1;
  for (let r = ranges.length - 1; r >= 0; r--) {
    const [start, stop] = ranges[r];
    while (k > 0 && nodes[k][1] >= stop) k--;
    for (let j = k; j >= 0; j--) {
      const [node, at] = nodes[j];
      const end = at + node.data.length;
      if (end <= start) break;
      const a = Math.max(start, at) - at, b = Math.min(stop, end) - at;
      if (b <= a) continue;
      if (b < node.data.length) node.splitText(b);
      const piece = a > 0 ? node.splitText(a) : node;
      const mark = h("mark", { class: "plx-hit" });
      piece.replaceWith(mark);
      mark.append(piece);
      marks[r].unshift(mark);
    }
  }
  return marks;
}

function clearMarks(root) {
  const parents = new Set();
  for (const m of root.querySelectorAll("mark.plx-hit")) {
    parents.add(m.parentNode);
    m.replaceWith(...m.childNodes);
  }
  for (const p of parents) p.normalize();
}

// scroll `el` into view in its scroll box `box` (not the notebook around it), opening the
// folded functions, unchanged regions and elided parameters it sits in
// (to `offset` pixels below the box's top; with `keep`, not at all when `el` is already
// in view between `keep` pixels from the top and the bottom)
function reveal(box, el, offset, keep = -1) {
  for (let d = el.closest("details"); d; d = d.parentElement.closest("details")) d.open = true;
  const fold = el.closest("tbody.pl-fold");
  const foldBox = fold && fold.querySelector("input.pl-fold-open");
  if (foldBox && el.closest("tr.pl-folded")) foldBox.checked = true;
  const more = el.closest(".pl-rest") && el.closest("td").querySelector("input.pl-more-open");
  if (more) more.checked = true;
  const top = el.getBoundingClientRect().top - box.getBoundingClientRect().top;
  if (keep >= 0 && top >= keep && top + el.offsetHeight <= box.clientHeight) return;
  box.scrollTop += top - offset;
}

const STATUS_SIGN = { added: "+", removed: "\u2212", modified: "~", renamed: "\u2192" };

// Search box, function list and (diff pane) binding links for the diff HTML in `body`,
// the pane's scroll box; `name` is the pane ("diff" or "compare"). Returns
// { bar, rendered() }: put the bar above the body (outside its scroll box, so that it
// covers nothing) and call rendered() after every change of the body's HTML.
export function irTools(ctx, pane, body, name) {
  const { model, send } = ctx;
  const jump = h("select", { class: "plx-ir-jump", "aria-label": "jump to a changed function" });
  const input = h("input", { type: "search", class: "plx-ir-search", placeholder: "find in IR",
    "aria-label": "find in the IR of this diff", spellcheck: "false" });
  const prev = h("button", { class: "plx-ir-prev", type: "button", text: "\u2191",
    title: "previous match (Shift+Enter)", "aria-label": "previous match" });
  const next = h("button", { class: "plx-ir-next", type: "button", text: "\u2193",
    title: "next match (Enter)", "aria-label": "next match" });
  const count = h("span", { class: "plx-ir-count", "aria-live": "polite" });
  const more = h("span", { class: "plx-ir-more" });
  const bar = h("div", { class: "plx-ir-bar" }, jump, input, prev, next, count, more);

  let hits = [];  // one array of <mark>s per match, in page order
  let cur = -1;
  let capped = false;
  let pendingJump = null;  // a function not printed yet: jump to it once "show all" lands
  let opened = "";  // the step (or compare pair) the pane last opened at its first change
  let sendTimer = null, findTimer = null;

  const truncated = () => Boolean(body.querySelector(".plx-show-all"));
  const where = () => {
    const [first, last] = name === "compare"
      ? [model.get("compare_a"), model.get("compare_b")] : [model.get("selected"), "None"];
    const all = model.get("diff_all") ? "True" : "False";
    return `${name}:${first}:${last}:${model.get("diff_mode")}:${all}`;
  };

  const showCount = () => {
    const q = input.value;
    count.textContent = !q ? "" : hits.length
      ? `${cur + 1} of ${hits.length}${capped ? "+" : ""}` : "no match";
    prev.disabled = next.disabled = hits.length < 2;
    more.replaceChildren();
    const m = model.get("ir_search_more") || {};
    if (q && truncated() && m.query === q && m.where === where() && m.hits > 0) {
      const load = h("button", { class: "plx-ir-load", type: "button", text: "load all" });
      load.addEventListener("click", () => { ctx.busy(); send({ diff_all: true }); });
      more.append(document.createTextNode(`${m.hits} more in ${m.functions} function` +
        `${m.functions === 1 ? "" : "s"} not shown `), load);
    }
  };

  const setCurrent = (k, scroll = true) => {
    if (cur >= 0 && hits[cur]) for (const m of hits[cur]) m.classList.remove("plx-hit-current");
    cur = hits.length ? (k + hits.length) % hits.length : -1;
    if (cur >= 0) {
      for (const m of hits[cur]) m.classList.add("plx-hit-current");
      if (scroll) reveal(body, hits[cur][0], body.clientHeight / 3, 0);
    }
    showCount();
  };

  const find = (scroll) => {
    clearMarks(body);
    hits = []; cur = -1; capped = false;
    const needle = input.value.toLowerCase();
    if (needle) {
      for (const cell of body.querySelectorAll("td.pl-code")) {
        const text = cell.textContent.toLowerCase();
        const ranges = [];
        for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) {
          if (hits.length + ranges.length >= MAX_HITS) { capped = true; break; }
          ranges.push([i, i + needle.length]);
        }
        if (ranges.length) hits.push(...markRanges(cell, ranges));
        if (capped) break;
      }
    }
    setCurrent(0, scroll);
  };

  // the functions the diff prints, then those it names but does not print
  const renderJump = () => {
    jump.replaceChildren();
    const shown = [...body.querySelectorAll("details.pl-func[data-fn]")];
    const unshown = [...body.querySelectorAll("ul.pl-unshown > li[data-fn]")];
    jump.append(h("option", { value: "", text: `functions (${shown.length + unshown.length})` }));
    for (const el of [...shown, ...unshown]) {
      const d = el.dataset;
      const label = d.old ? `${d.old} \u2192 ${d.fn}` : d.fn;
      const later = el.tagName === "LI" ? ", not shown" : "";
      jump.append(h("option", { value: d.fn,
        text: `${STATUS_SIGN[d.status] || "\u00b7"} ${label} (${d.kind}, ${d.status}${later})` }));
    }
    jump.style.display = shown.length + unshown.length > 1 ? "" : "none";
  };
  const target = (fn) => [...body.querySelectorAll("details.pl-func[data-fn]")]
    .find((el) => el.dataset.fn === fn);
  jump.addEventListener("change", () => {
    const fn = jump.value;
    jump.value = "";
    if (!fn) return;
    const el = target(fn);
    if (el) { el.open = true; reveal(body, el, 2); return; }
    pendingJump = fn;  // not printed yet: print all, then jump
    ctx.busy();
    send({ diff_all: true });
  });

  // links: the variable a Relax binding defines -> that node in the graph
  const follow = (el) => {
    ctx.busy();
    send({ focus: [el.dataset.var], tab: "graph" });
  };
  body.addEventListener("click", (ev) => {
    const v = ev.target.closest && ev.target.closest(".pl-var[tabindex]");
    const sel = window.getSelection();
    if (v && (!sel || sel.isCollapsed)) follow(v);
  });
  body.addEventListener("keydown", (ev) => {
    const v = ev.target.closest && ev.target.closest(".pl-var[tabindex]");
    if (v && ev.key === "Enter") { ev.preventDefault(); ev.stopPropagation(); follow(v); }
  });
  // only the diff pane links: the graph shows the selected pass, which compare's B
  // need not be
  const renderLinks = () => {
    if (name !== "diff") return;
    for (const v of body.querySelectorAll(".pl-var")) {
      // a deleted line's variable is gone from the graph after the step
      if (v.closest(".pl-del, .pl-move")) continue;
      v.setAttribute("tabindex", "0");
      v.setAttribute("role", "link");
      v.title = `show ${v.dataset.var} in the fused graph`;
    }
  };

  // a new step opens at its first changed line (a few lines of context above it), unless
  // that line is on the first screen already; a new layout or "show all" keeps the place
  const openAtChange = () => {
    const key = where().split(":").slice(0, 3).join(":");
    if (key === opened) return;
    opened = key;
    body.scrollTop = 0;
    const first = body.querySelector(
      "tr.pl-del, tr.pl-add, tr.pl-move, td.pl-del, td.pl-add, td.pl-move");
    if (!first) return;
    const row = first.closest("tr");
    reveal(body, row, 4 * row.offsetHeight, 0);
  };

  // typing: find in what is printed now; ask Python about what is not printed
  const ask = () => {
    clearTimeout(sendTimer);
    if (input.value && truncated() && model.get("ir_search") !== input.value) {
      sendTimer = setTimeout(() => send({ ir_search: input.value }), 300);
    }
  };
  input.addEventListener("input", () => {
    clearTimeout(findTimer);
    findTimer = setTimeout(() => { findTimer = null; find(true); }, 120);
    ask();
  });
  input.addEventListener("keydown", (ev) => {
    ev.stopPropagation();  // keep JupyterLab's shortcuts out of the box
    if (ev.key === "Enter") {
      ev.preventDefault();
      if (findTimer) { clearTimeout(findTimer); findTimer = null; find(true); return; }
      setCurrent(cur + (ev.shiftKey ? -1 : 1));
    } else if (ev.key === "Escape") {
      input.value = "";
      find(false);
    }
  });
  for (const ev of ["keyup", "keypress"]) input.addEventListener(ev, (e) => e.stopPropagation());
  prev.addEventListener("click", () => setCurrent(cur - 1));
  next.addEventListener("click", () => setCurrent(cur + 1));
  ctx.on("change:ir_search_more", showCount);
  ctx.onCleanup(() => { clearTimeout(sendTimer); clearTimeout(findTimer); });

  return {
    bar,
    rendered() {
      findTimer = null;
      renderJump();
      renderLinks();
      bar.style.display = body.querySelector(".passlab-diff") ? "" : "none";
      find(false);
      ask();
      if (!pendingJump && !input.value) openAtChange();
      if (pendingJump) {
        const el = target(pendingJump);
        if (el) { pendingJump = null; el.open = true; reveal(body, el, 2); }
      }
    },
  };
}
