// The edit pane: change the pipeline (disable, enable, remove, move, insert passes),
// re-run from the first edit, and compare the result with the recorded build.
