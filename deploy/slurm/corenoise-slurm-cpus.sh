# corenoise-slurm-cpus.sh: which CPUs the running Slurm jobs of this node
# hold, so that corenoise-healthcheck probes only the others. Sourced after
# corenoise-slurm.sh, never run.
#
# It relies on the job's cgroup, which Slurm's task/cgroup plugin makes with
# ConstrainCores=yes (cgroup.conf):
#   cgroup v2: SYS/fs/cgroup/system.slice/[NODE_]slurmstepd.scope/job_ID/cpuset.cpus.effective
#   cgroup v1: SYS/fs/cgroup/cpuset/slurm[_NODE]/uid_UID/job_ID/cpuset.cpus
# where SYS is $CORENOISE_SLURM_SYS_ROOT (/sys). The CPU ids there are the
# kernel's, the same as `corenoise probe --cpus` takes (SLURM_JOB_CPUS_PER_NODE
# is a count, and Slurm's abstract CPU ids are not the kernel's).
# shellcheck shell=bash
# job_count, job_cpus and unknown_job_cpus are results for the sourcing script.
# shellcheck disable=SC2034

# cpulist_expand LIST: "0-3,8" -> "0 1 2 3 8" (sorted, unique). Fails on
# anything that is not a kernel CPU list.
cpulist_expand() {
  local list=${1//[[:space:]]/} part lo hi
  local -a parts cpus=()
  [[ -z $list ]] && return 0
  IFS=, read -ra parts <<<"$list"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
      lo=$((10#${BASH_REMATCH[1]})) hi=$((10#${BASH_REMATCH[2]}))
    elif [[ $part =~ ^[0-9]+$ ]]; then
      lo=$((10#$part)) hi=$lo
    else
      return 1
    fi
    ((lo <= hi)) || return 1
    while ((lo <= hi)); do cpus+=("$lo") && lo=$((lo + 1)); done
  done
  printf '%s\n' "${cpus[@]}" | sort -nu | paste -sd' ' -
}

# cpulist_compress "0 1 2 3 8" -> "0-3,8" (the input sorted, as expand gives).
cpulist_compress() {
  local cpu start='' prev='' out=''
  for cpu in $1; do
    if [[ -n $prev ]] && ((cpu == prev + 1)); then
      prev=$cpu
      continue
    fi
    [[ -n $start ]] && out+="${out:+,}$(cpulist_range "$start" "$prev")"
    start=$cpu prev=$cpu
  done
  [[ -n $start ]] && out+="${out:+,}$(cpulist_range "$start" "$prev")"
  echo "$out"
}

cpulist_range() {
  if (($1 == $2)); then echo "$1"; else echo "$1-$2"; fi
}

# cpulist_subtract ALL TAKEN: the CPUs of list ALL that are not in list TAKEN.
cpulist_subtract() {
  local all taken cpu
  local -A in_use=()
  all=$(cpulist_expand "$1") && taken=$(cpulist_expand "$2") || return 1
  for cpu in $taken; do in_use[$cpu]=1; done
  local -a left=()
  for cpu in $all; do [[ -v in_use[$cpu] ]] || left+=("$cpu"); done
  cpulist_compress "${left[*]}"
}

# job_cgroup_dirs: the cgroup directories of the jobs running here, one a line.
job_cgroup_dirs() {
  local root=$CORENOISE_SLURM_SYS_ROOT/fs/cgroup dir
  for dir in "$root"/system.slice/*slurmstepd.scope/job_* "$root"/cpuset/slurm*/uid_*/job_*; do
    [[ -d $dir ]] && echo "$dir"
  done
  return 0
}

# running_job_cpus: sets job_count (jobs running here, by cgroup or by the
# prolog's marker) and job_cpus (the CPU list they hold, "" if none). Fails
# when a job runs whose CPUs cannot be read: a marker without a cgroup, or a
# cgroup without a readable cpuset (ConstrainCores=no).
running_job_cpus() {
  local dir file cpus id
  local -A jobs=()
  job_count=0 job_cpus=''
  while read -r dir; do
    [[ -n $dir ]] || continue
    id=${dir##*/job_}
    jobs[$id]=1
    cpus=''
    for file in "$dir/cpuset.cpus.effective" "$dir/cpuset.cpus"; do
      if [[ -r $file ]]; then
        cpus=$(<"$file")
        break
      fi
    done
    if [[ -z ${cpus//[[:space:]]/} ]]; then
      unknown_job_cpus="job $id has no readable cpuset in $dir"
      job_count=${#jobs[@]}
      return 1
    fi
    job_cpus+="${job_cpus:+,}$cpus"
  done < <(job_cgroup_dirs)
  while read -r id; do
    [[ -n $id ]] || continue
    if [[ ! -v jobs[$id] ]]; then
      jobs[$id]=1
      unknown_job_cpus="job $id has a marker in $CORENOISE_SLURM_JOBS_DIR but no cgroup"
      job_count=${#jobs[@]}
      return 1
    fi
  done < <(job_markers)
  job_count=${#jobs[@]}
  if [[ -n $job_cpus ]]; then
    job_cpus=$(cpulist_compress "$(cpulist_expand "$job_cpus")") || {
      unknown_job_cpus="a job's cpuset is not a CPU list: '$job_cpus'"
      return 1
    }
  fi
}
