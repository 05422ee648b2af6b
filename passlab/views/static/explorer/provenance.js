// The provenance pane: the model's operators and the kernels they ended up in.
