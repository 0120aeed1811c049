#!/usr/bin/env bash
# The architecture's arrows, checked on the includes of every tracked
# source: data flows one way (docs/architecture.md), so a layer includes
# nothing from the layers that draw or drive it.
#   probe/            the measuring library: nothing of daemon/ or collector/
#   daemon/control/   the control library: nothing of daemon/ outside it
#   daemon/           nothing of collector/
#   collector/cluster/
#                     the sweep's model and policy: no view (collector/report/)
#                     and no command (collector/cli/)
#   collector/job/model/
#                     the job's model and policy: nothing of collector/ but
#                     itself (no runtime, no rebuild, no view, no MPI layer)
#   collector/job/rank/, collector/job/rebuild/
#                     the in-rank runtime and the rebuild from spill files:
#                     the model, not each other, no view, no command; the
#                     runtime also the MPI layer's header-only deadline
#                     (collector/mpi/mpi_deadline.h), the one way corenoise
#                     waits for MPI with a timeout, and MPICH's finalize way
#                     round (collector/mpi/mpich_ucx_finalize.h), which the
#                     MPICH plugin and the MPICH in-job library both link
#   collector/job/    (its own files: job_wiring.cpp) the one place of the job
#                     that reaches a view; no command
#   collector/mpi/    the MPI layer: nothing that uses it
#   collector/report/ the views: no command
# Prints each include that crosses an arrow backwards and exits 1; 0 when
# none does.
#
#   include_graph_check.sh SOURCE_DIR
set -euo pipefail
cd "${1:?usage: include_graph_check.sh SOURCE_DIR}"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  list() { git ls-files -- "$1"'*.cpp' "$1"'*.h'; }
else
  list() { find "$1" -name '*.cpp' -o -name '*.h'; }
fi
bad=0
# forbid FOLDER PATTERN [EXCEPT]: no file under FOLDER includes a project
# header matching PATTERN (an extended regex on the quoted path), unless it
# also matches EXCEPT.
forbid() {
  local folder=$1 pattern=$2 except=${3:-'^$'} file line
  while read -r file; do
    while IFS= read -r line; do
      echo "$file: $line (a layer under $folder includes what is drawn above it)"
      bad=$((bad + 1))
    done < <(grep -E "^#include \"($pattern)" "$file" | grep -Ev "^#include \"($except)" || true)
  done < <(list "$folder")
}
forbid probe/ 'daemon/|collector/'
forbid daemon/control/ 'daemon/|collector/' 'daemon/control/'
forbid daemon/ 'collector/'
forbid collector/cluster/ 'collector/report/|collector/cli/'
forbid collector/job/model/ 'collector/' 'collector/job/model/'
forbid collector/job/rank/ 'collector/' 'collector/job/model/|collector/job/rank/|collector/mpi/mpi_deadline\.h|collector/mpi/mpich_ucx_finalize\.h'
forbid collector/job/rebuild/ 'collector/' 'collector/job/model/|collector/job/rebuild/'
forbid collector/job/ 'collector/cli/'
forbid collector/mpi/ 'collector/cluster/|collector/report/|collector/job/|collector/cli/'
forbid collector/report/ 'collector/cli/|collector/job/rank/|collector/job/rebuild/'
echo "include_graph_check: $bad includes against the arrows"
((bad == 0))
