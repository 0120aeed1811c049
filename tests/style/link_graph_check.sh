#!/usr/bin/env bash
# The architecture's arrows, checked on the link graph: what the include
# check (include_graph_check.sh) cannot see, a symbol declared below and
# defined above, shows here as a link pointing the wrong way. The graph is
# the build's own: CMake writes each library's direct links
# (LINK_LIBRARIES) to a file at generate time (tests/CMakeLists.txt), one
# line per target, "target: link;link;...".
#   corenoise_job_model    the job's model: no runtime, rebuild, view or
#                          cluster/MPI layer, however indirectly
#   corenoise_job_rank     the in-rank runtime: the model, not the rebuild,
#                          no view, no cluster/MPI layer
#   corenoise_job_rebuild  the rebuild from spill files: the model, not the
#                          runtime, no view, no cluster/MPI layer
#   corenoise_report       the views: the models, not the job's runtime or
#                          rebuild
# Prints each forbidden path and exits 1; 0 when none.
#
#   link_graph_check.sh LINK_GRAPH_FILE
set -euo pipefail
graph=${1:?usage: link_graph_check.sh LINK_GRAPH_FILE}
declare -A links=()
while IFS= read -r line; do
  target=${line%%:*}
  list=${line#*: }
  # corenoise::x is the alias of corenoise_x.
  links[$target]=$(tr ';' '\n' <<<"$list" | sed -e 's/^corenoise::/corenoise_/' -e '/^$/d' | tr '\n' ' ')
done <"$graph"

# reaches FROM: every target FROM links, directly or through another.
reaches() {
  local -A seen=()
  local queue=("$1") next item
  while ((${#queue[@]} > 0)); do
    next=${queue[0]}
    queue=("${queue[@]:1}")
    for item in ${links[$next]:-}; do
      [[ -n ${seen[$item]:-} ]] && continue
      seen[$item]=1
      queue+=("$item")
      echo "$item"
    done
  done
}

bad=0
# forbid FROM TO...: FROM reaches none of TO.
forbid() {
  local from=$1 to reached
  shift
  if [[ -z ${links[$from]+set} ]]; then
    echo "$from: not in $graph (renamed? update link_graph_check.sh)"
    bad=$((bad + 1))
    return
  fi
  reached=$(reaches "$from")
  for to in "$@"; do
    if grep -qx "$to" <<<"$reached"; then
      echo "$from links $to (a layer links what is drawn above it)"
      bad=$((bad + 1))
    fi
  done
}
forbid corenoise_job_model corenoise_job_rank corenoise_job_rebuild corenoise_report corenoise_collector
forbid corenoise_job_rank corenoise_job_rebuild corenoise_report corenoise_collector
forbid corenoise_job_rebuild corenoise_job_rank corenoise_report corenoise_collector
forbid corenoise_report corenoise_job_rank corenoise_job_rebuild
echo "link_graph_check: $bad links against the arrows"
((bad == 0))
