# tests for shim (owned by whoever builds that part).
