# (filled in by the slurm work)
