# (filled in by the prometheus work)
