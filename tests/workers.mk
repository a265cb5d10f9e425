# tests for workers (owned by whoever builds that part).
