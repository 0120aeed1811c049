# (filled in by the package work)
