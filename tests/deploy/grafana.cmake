# (filled in by the grafana work)
