// The unified layout of a diff, made in the page from its side-by-side HTML: a report
// keeps one layout per pass (rendering both was a fifth of its time) and the layout
// select still switches. Rows come out as passlab/analysis/_diff_render.py's
// _unified_rows writes them: an unchanged row once, then a change's old lines (removed
// or moved from, with their marks) before its new ones; hunks, folds and notes as they
// are. Only elements passlab wrote are moved: no text becomes markup.

const EMPTY = "pl-empty";
const REINDENT = "re-indented: only its indentation changed";

function cell(cls, html) {
  const td = document.createElement("td");
  td.className = cls;
  td.innerHTML = html;
  return td;
}

function lineNo(text) {
  const td = document.createElement("td");
  td.className = "pl-ln";
  td.textContent = text;
  return td;
}

function sign(text, title) {
  const td = document.createElement("td");
  td.className = text === "\u00bb" ? "pl-sign pl-reindent" : "pl-sign";
  td.textContent = text;
  if (title) td.title = title;
  return td;
}

function unifiedRow(cls, ...cells) {
  const tr = document.createElement("tr");
  if (cls) tr.className = cls;
  tr.append(...cells);
  return tr;
}

// one side-by-side body (a <tbody>: the rows of a function, or a fold) as unified rows
function unifyBody(body) {
  const out = document.createElement("tbody");
  if (body.className) out.className = body.className;
  let dels = [];
  let ins = [];
  const flush = () => {
    out.append(...dels, ...ins);
    dels = [];
    ins = [];
  };
  for (const tr of [...body.rows]) {
    const cells = [...tr.cells];
    if (cells.length !== 4 || tr.classList.contains("pl-hunk")) {  // hunk, fold head, note
      flush();
      out.append(tr);
      continue;
    }
    const [lnA, a, lnB, b] = cells;
    // an unchanged line reads as it does after the pass: a line whose indentation alone
    // changed (a body wrapped in a new loop) in its new place, marked
    const same = () => (a.textContent === b.textContent ? sign(" ") : sign("\u00bb", REINDENT));
    if (tr.classList.contains("pl-folded")) {
      flush();
      out.append(unifiedRow("pl-folded", lineNo(lnA.textContent), lineNo(lnB.textContent), same(),
        cell("pl-code", b.innerHTML)));
      continue;
    }
    const changed = [a, b].some((c) => ["pl-del", "pl-add", "pl-move", EMPTY]
      .some((k) => c.classList.contains(k)));
    if (!changed) {
      flush();
      out.append(unifiedRow("", lineNo(lnA.textContent), lineNo(lnB.textContent), same(),
        cell("pl-code", b.innerHTML)));
      continue;
    }
    if (!a.classList.contains(EMPTY)) {
      const moved = a.classList.contains("pl-move");
      dels.push(unifiedRow(moved ? "pl-move" : "pl-del", lineNo(lnA.textContent), lineNo(""),
        sign(moved ? "<" : "-", moved ? "moved from here" : ""), cell("pl-code", a.innerHTML)));
    }
    if (!b.classList.contains(EMPTY)) {
      const moved = b.classList.contains("pl-move");
      ins.push(unifiedRow(moved ? "pl-move" : "pl-add", lineNo(""), lineNo(lnB.textContent),
        sign(moved ? ">" : "+", moved ? "moved here" : ""), cell("pl-code", b.innerHTML)));
    }
  }
  flush();
  return out;
}

// `html`: a diff pane in the side-by-side layout; returns it in the unified one
export function unifiedFromSideBySide(html) {
  const tpl = document.createElement("template");
  tpl.innerHTML = html;
  for (const table of tpl.content.querySelectorAll("table.pl-sbs")) {
    const unified = document.createElement("table");
    unified.className = "pl-t pl-unified";
    for (const body of [...table.tBodies]) unified.append(unifyBody(body));
    table.replaceWith(unified);
  }
  return tpl.innerHTML;
}
