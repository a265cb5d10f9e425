# Files for other tools, shipped as they are: a Grafana dashboard over
# scratchd's /metrics (tests/stats_prometheus.test checks its queries).
EXTRA_DIST += contrib/grafana/scratch.json
