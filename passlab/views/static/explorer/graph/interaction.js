// The fused-graph pane's interaction: a pan/zoom viewport over the SVG passlab draws
// (drag to pan, wheel or buttons to zoom, clicks on nodes) and a minimap for large
// graphs. The provenance pane's pictures use the same viewport.

import { h } from "../core.js";

// the smallest scale a first view opens at: 10 pt labels at 10 px; scroll the rest
export const READABLE = 0.75;
// graphs of more nodes than this get a minimap
export const MINIMAP_NODES = 40;

// Pan (drag) and zoom (wheel, buttons) for the SVG inside `view`. `state` ({k, x, y}) is
// the view to restore, or null to open fitted; `onChange(state)` follows every move.
export function panZoom(view, svg, state, onClickNode, onChange) {
  let { k, x, y } = state || { k: 1, x: 0, y: 0 };
  let drag = null, moved = false;
  svg.style.transformOrigin = "0 0";
  const size = () => ({ w: svg.width.baseVal.value, h: svg.height.baseVal.value });
  // the centre of an element of the SVG, in unscaled SVG pixels
  const centreOf = (el) => {
    const r = el.getBoundingClientRect(), s = svg.getBoundingClientRect();
    return [(r.left + r.width / 2 - s.left) / k, (r.top + r.height / 2 - s.top) / k];
  };
  const apply = () => {
    svg.style.transform = `translate(${x}px, ${y}px) scale(${k})`;
    onChange({ k, x, y });
  };
  // The whole graph, centred, when it fits at a readable scale; else never smaller than
  // READABLE: the width from the top (centred on the first node), the minimap for the
  // rest. A graph too tall to read whole is drawn left to right (passlab's layout).
  const fit = () => {
    const { w, h } = size();
    const vw = view.clientWidth, vh = view.clientHeight;
    if (!vw || !vh || !w || !h) return false;  // hidden: fit when shown
    const kw = (vw - 8) / w, kh = (vh - 8) / h;
    const whole = Math.min(1.5, kw, kh);
    if (whole >= READABLE) {
      k = whole;
      x = (vw - w * k) / 2; y = Math.max(4, (vh - h * k) / 2);
    } else {
      const first = svg.querySelector("g.node");
      const cx = first ? centreOf(first)[0] : 0;
      k = Math.max(READABLE, Math.min(1, kw));
      y = 4;  // from the top (a kernel panel opening below keeps it in sight)
      x = w * k <= vw ? (vw - w * k) / 2 : 4;
      if (w * k > vw && first) {  // centre the top of the graph, not its left margin
        x = Math.min(4, Math.max(vw - w * k - 4, vw / 2 - cx * k));
      }
    }
    apply();
    return true;
  };
  // a view kept from another step that shows none of this graph: open fitted instead
  const lost = () => {
    const { w, h } = size();
    return x > view.clientWidth || y > view.clientHeight || x + w * k < 0 || y + h * k < 0;
  };
  const zoomAt = (factor, cx, cy) => {
    const nk = Math.min(8, Math.max(0.05, k * factor));
    x = cx - (cx - x) * (nk / k);
    y = cy - (cy - y) * (nk / k);
    k = nk;
    apply();
  };
  const centreOn = (sx, sy) => {  // svg pixel coordinates to the middle of the view
    x = view.clientWidth / 2 - sx * k;
    y = view.clientHeight / 2 - sy * k;
    apply();
  };
  const onWheel = (e) => {
    e.preventDefault();
    const r = view.getBoundingClientRect();
    zoomAt(e.deltaY < 0 ? 1.15 : 1 / 1.15, e.clientX - r.left, e.clientY - r.top);
  };
  const onDown = (e) => {
    if (e.button !== 0) return;
    drag = { sx: e.clientX, sy: e.clientY, x, y };
    moved = false;
    view.classList.add("plx-dragging");
  };
  const onMove = (e) => {
    if (!drag) return;
    const dx = e.clientX - drag.sx, dy = e.clientY - drag.sy;
    if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
    x = drag.x + dx; y = drag.y + dy;
    apply();
  };
  const onUp = () => { drag = null; view.classList.remove("plx-dragging"); };
  const onClick = (e) => {
    if (moved) { moved = false; return; }  // the end of a drag is not a click
    const g = e.target.closest("g.node, g.cluster");  // a cluster: an opened group's frame
    const title = g && g.querySelector("title");
    if (title) onClickNode(title.textContent, g);
  };
  view.addEventListener("wheel", onWheel, { passive: false });
  view.addEventListener("mousedown", onDown);
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  svg.addEventListener("click", onClick);
  let placed = false;
  const place = () => {
    if (placed) return;
    if (state && view.clientWidth && !lost()) { apply(); placed = true; } else placed = fit();
  };
  svg.style.transform = `translate(${x}px, ${y}px) scale(${k})`;
  requestAnimationFrame(place);
  // a view not yet laid out (a widget drawn before it is attached, a hidden tab): place
  // the graph when it gets a size
  const sized = new ResizeObserver(() => { if (!placed && view.clientWidth) place(); });
  sized.observe(view);
  return {
    zoomIn: () => zoomAt(1.25, view.clientWidth / 2, view.clientHeight / 2),
    zoomOut: () => zoomAt(0.8, view.clientWidth / 2, view.clientHeight / 2),
    fit: () => fit(),
    place,
    centreOn,
    // a focus (a buffer row, a provenance kernel) is shown at a readable scale at least:
    // centring on it never leaves the graph zoomed far out
    centreOnEl: (el) => {
      const [sx, sy] = centreOf(el);
      if (k < READABLE) k = READABLE;
      centreOn(sx, sy);
    },
    panBy: (dx, dy) => { x += dx; y += dy; apply(); },
    get: () => ({ k, x, y }),
    cleanup: () => {
      sized.disconnect();
      view.removeEventListener("wheel", onWheel);
      view.removeEventListener("mousedown", onDown);
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
    },
  };
}

// A small copy of the SVG with the viewport drawn on it; click or drag on it to pan.
export function minimap(box, view, svg, pz) {
  const copy = svg.cloneNode(true);
  for (const el of copy.querySelectorAll("[id]")) el.removeAttribute("id");
  copy.removeAttribute("style");
  const w = svg.width.baseVal.value, hgt = svg.height.baseVal.value;
  const m = Math.min(160 / w, 120 / hgt);
  copy.setAttribute("width", String(w * m));
  copy.setAttribute("height", String(hgt * m));
  const rect = h("div", { class: "plx-minimap-view" });
  const map = h("div", { class: "plx-minimap", title: "click or drag to pan",
    "data-plx-scroll": "pan" }, rect);
  map.prepend(copy);
  map.style.width = `${w * m}px`;
  map.style.height = `${hgt * m}px`;
  box.append(map);
  const update = ({ k, x, y }) => {
    rect.style.left = `${(-x / k) * m}px`;
    rect.style.top = `${(-y / k) * m}px`;
    rect.style.width = `${(view.clientWidth / k) * m}px`;
    rect.style.height = `${(view.clientHeight / k) * m}px`;
  };
  let dragging = false;
  const go = (e) => {
    const r = map.getBoundingClientRect();
    pz.centreOn((e.clientX - r.left) / m, (e.clientY - r.top) / m);
  };
  map.addEventListener("mousedown", (e) => { e.stopPropagation(); dragging = true; go(e); });
  const onMove = (e) => { if (dragging) go(e); };
  const onUp = () => { dragging = false; };
  window.addEventListener("mousemove", onMove);
  window.addEventListener("mouseup", onUp);
  return {
    update,
    cleanup: () => {
      window.removeEventListener("mousemove", onMove);
      window.removeEventListener("mouseup", onUp);
      map.remove();
    },
  };
}

