// TVMScript token colours for diff HTML that comes without them (the static report's
// diffs: a report would be seconds slower to write if Python coloured every line). The
// same token classes and rules as passlab/analysis/_highlight.py; text is only wrapped
// in spans, never parsed as HTML. Cells inside a .plx-untokenized box are coloured once.

const KEYWORDS = "def|return|with|for|in|if|elif|else|while|lambda|and|or|not|is|as|" +
  "assert|from|import|class|pass|break|continue|yield";
const TOKEN = new RegExp(
  "(?<c1>#.*)|(?<s2>\"(?:[^\"\\\\]|\\\\.)*\"?|'(?:[^'\\\\]|\\\\.)*'?)|(?<nd>@[\\w.]+)" +
  "|(?<k>\\b(?:" + KEYWORDS + ")\\b)|(?<kc>\\b(?:True|False|None)\\b)" +
  "|(?<mf>\\b\\d+\\.\\d*(?:[eE][-+]?\\d+)?|\\b\\d+[eE][-+]?\\d+\\b)|(?<mi>\\b\\d+\\b)" +
  "|(?<name>[A-Za-z_]\\w*)|(?<o>[-+*/%=<>!&|^~]+)", "g");

function tokenSpans(text, afterDef) {
  const frag = document.createDocumentFragment();
  let pos = 0;
  for (const m of text.matchAll(TOKEN)) {
    if (m.index > pos) frag.appendChild(document.createTextNode(text.slice(pos, m.index)));
    let kind = Object.keys(m.groups).find((k) => m.groups[k] !== undefined);
    if (kind === "name") kind = afterDef.value ? "nf" : "";
    afterDef.value = kind === "k" && (m[0] === "def" || m[0] === "class");
    if (kind) {
      const span = document.createElement("span");
      span.className = "tok-" + kind;
      span.textContent = m[0];
      frag.appendChild(span);
    } else {
      frag.appendChild(document.createTextNode(m[0]));
    }
    pos = m.index + m[0].length;
  }
  if (pos < text.length) frag.appendChild(document.createTextNode(text.slice(pos)));
  return frag;
}

// colour the code cells of every .plx-untokenized box under `root` (then unmark it)
export function highlightPlain(root) {
  for (const box of root.querySelectorAll(".plx-untokenized")) {
    for (const cell of box.querySelectorAll("td.pl-code")) {
      if (cell.closest('[data-kind="llvm"]')) continue;  // LLVM IR: coloured by Python
      const afterDef = { value: false };
      for (const node of Array.from(cell.childNodes)) {
        if (node.nodeType === Node.TEXT_NODE) {
          node.replaceWith(tokenSpans(node.textContent, afterDef));
        } else if (node.classList && node.classList.contains("pl-hl") &&
                   node.childNodes.length === 1 && node.firstChild.nodeType === Node.TEXT_NODE) {
          const text = node.textContent;  // a changed span: colour inside the mark
          node.textContent = "";
          node.appendChild(tokenSpans(text, afterDef));
        }
      }
    }
    box.classList.remove("plx-untokenized");
  }
}
