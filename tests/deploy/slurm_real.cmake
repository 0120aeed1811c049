# deploy/slurm/ and `corenoise sweep` under a real one-node Slurm
# (tests/deploy/slurm_real_test.sh, on tests/tools/slurm_cluster.sh): munged,
# slurmctld and slurmd from Debian's packages (munge, slurmctld, slurmd,
# slurm-client), started and stopped by each case from a temporary directory
# on ports of their own (1-2 s). slurmd runs the health check, prolog and
# epilog against a real corenoised; srun --mpi=pmi2 and --mpi=pmix start
# rank-per-core sweeps; under its cgroup/v1 plugin, `corenoise job` ranks are
# taken as their Slurm job's. Needs root (slurmd), jq and shellcheck.
#
# Skipped (exit status 2) only when Slurm is not installed; Slurm installed
# but not working is a failure. RUN_SERIAL: the drain case injects real
# noise on CPU 1 and needs it seen; the sweeps take every CPU.
set(CORENOISE_SLURM_REAL_TESTS
  "HealthCheckDrainsANoisyNode healthcheck_drains_noisy_node"
  "HealthCheckLeavesAHealthyNode healthcheck_leaves_healthy_node"
  "PrologEpilogPauseAndResumeAroundSrun prolog_epilog_pause_resume_around_srun"
  "SrunRankPerCorePmi2 srun_rank_per_core_pmi2"
  "SrunRankPerCorePmix srun_rank_per_core_pmix"
  "JobRanksInSlurmCgroups job_ranks_in_slurm_cgroups")
foreach(entry IN LISTS CORENOISE_SLURM_REAL_TESTS)
  separate_arguments(entry)
  list(GET entry 0 name)
  list(GET entry 1 case)
  add_test(NAME SlurmReal.${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm_real_test.sh ${case}
            $<TARGET_FILE:corenoise> $<TARGET_FILE:corenoised>)
  set_tests_properties(SlurmReal.${name} PROPERTIES
    RUN_SERIAL TRUE TIMEOUT 120 LABELS integration SKIP_RETURN_CODE 2)
endforeach()
# The drain case needs the injected noise found on its CPU, as the tests of
# tests/sanitizers/timing_tests.cmake do: `timing` too, so that the
# sanitizer run (ctest -LE timing), whose instrumented probes and injector
# no longer measure the machine, leaves it out.
set_tests_properties(SlurmReal.HealthCheckDrainsANoisyNode PROPERTIES LABELS "integration;timing")

# The test script and the cluster driver, linted as the shipped scripts are;
# needs no Slurm.
add_test(NAME SlurmReal.ScriptsPassShellcheck
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm_real_test.sh shellcheck
          $<TARGET_FILE:corenoise> $<TARGET_FILE:corenoised>)
set_tests_properties(SlurmReal.ScriptsPassShellcheck PROPERTIES TIMEOUT 60 LABELS deploy)
