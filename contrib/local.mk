# Files for other tools, shipped as they are: a Grafana dashboard over
# scratchd's /metrics and a Prometheus agent's configuration that scrapes it
# (docs/fleet.md; tests/stats/stats_prometheus.test runs both).
EXTRA_DIST += contrib/grafana/scratch.json
EXTRA_DIST += contrib/prometheus/scratch-agent.yml
