// The diff pane's reading aids: search in the IR of a step (next/previous, a count)
// and a list of the changed functions to jump to.
