# tests for stats (owned by whoever builds that part).
