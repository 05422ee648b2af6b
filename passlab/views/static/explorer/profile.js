// The Profile pane: the kernel times of the shown build (passlab.research.profile.Profile),
// rendered by Python (explorer_profile.pane_html, escaped). A header's button carries
// data-sort (the order a click asks for: profile_sort), a row data-kernel (a click or
// Enter shows that kernel in the fused graph: profile_kernel), the Profile button
// data-profile-run (profile_run, bumped).

export function profilePane(ctx, pane) {
  const { model, on, send } = ctx;
  const render = () => { pane.innerHTML = model.get("profile_html"); };
  const act = (el) => {
    const sort = el.closest("[data-sort]");
    if (sort) { ctx.busy(); send({ profile_sort: sort.dataset.sort }); return true; }
    const run = el.closest("[data-profile-run]");
    if (run) {
      run.disabled = true;
      run.textContent = "Profiling\u2026";
      ctx.busy();
      send({ profile_run: model.get("profile_run") + 1 });
      return true;
    }
    const row = el.closest("tr[data-kernel]");
    if (row) { ctx.busy(); send({ profile_kernel: row.dataset.kernel }); return true; }
    return false;
  };
  pane.addEventListener("click", (ev) => {
    if (ev.target.closest && act(ev.target)) ev.preventDefault();
  });
  pane.addEventListener("keydown", (ev) => {
    if (ev.key !== "Enter" || !ev.target.closest) return;
    if (ev.target.matches("tr[data-kernel]") && act(ev.target)) ev.preventDefault();
  });
  render();
  on("change:profile_html", render);
  return {};
}
