// Source groups in the fused graph (passlab/analysis/_graph_groups.py): a closed group
// is one double-framed box whose node id is "group:<path>", an opened one a frame whose
// Graphviz cluster is named "cluster_group:<path>". A click on the box opens the group,
// a click on the frame's name closes it (and the groups inside it); Python redraws the
// graph from `graph_open`, the list of opened paths.

const BOX = "group:";
const FRAME = "cluster_group:";

// The paths opened after a click on graph node or cluster `id`, or null when `id` is
// not a group (a kernel: the caller shows its panel).
export function toggledGroups(id, opened) {
  if (id.startsWith(BOX)) {
    const path = id.slice(BOX.length);
    return opened.includes(path) ? opened : [...opened, path];
  }
  if (id.startsWith(FRAME)) {
    const path = id.slice(FRAME.length);
    // closing a group closes what is open inside it (its paths extend this one)
    return opened.filter((p) => p !== path && !(p.startsWith(path) && "/.".includes(p[path.length])));
  }
  return null;
}

// Whether a click on graph element `id` is one the pane ignores (a backend region's
// frame: not a group, not a kernel).
export function isOtherCluster(id) {
  return id.startsWith("cluster_") && !id.startsWith(FRAME);
}
