# examples/: rules for this part (owned by whoever builds examples/).
