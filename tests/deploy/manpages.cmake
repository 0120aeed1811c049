# (filled in by the manpages work)
