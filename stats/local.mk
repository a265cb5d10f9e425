# stats/: rules for this part (owned by whoever builds stats/).
