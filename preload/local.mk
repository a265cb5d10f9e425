# preload/: rules for this part (owned by whoever builds preload/).
