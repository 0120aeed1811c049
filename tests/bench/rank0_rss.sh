#!/bin/sh
# rank0_rss.sh COMMAND...: COMMAND, with rank 0 (Open MPI's or MPICH's)
# under GNU time writing its peak RSS in KB to $RSS_FILE; every other rank
# runs COMMAND as it is. The scale benchmarks launch it as each rank.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-x}}
if [ "$rank" = 0 ]; then exec /usr/bin/time -f %M -o "$RSS_FILE" "$@"; fi
exec "$@"
