# deploy/slurm/: the health check, prolog and epilog (tests/deploy/slurm_test.sh).
# Each case runs the scripts with fakes of scontrol and logger, against the
# real corenoise and, where a daemon is needed, a real corenoised on a
# temporary socket. They need jq (the health check reads corenoise's JSON with
# it) and, for Slurm.ScriptsPassShellcheck, shellcheck: Debian packages jq and
# shellcheck. The verdicts they force come from thresholds, not timing, so
# they need not run alone.
set(CORENOISE_SLURM_TESTS
  HealthCheckDrainsNamingCores
  HealthCheckDrainsFromDaemonStatus
  HealthCheckTransientDoesNotDrain
  HealthCheckHealthyDoesNothing
  HealthCheckToolFailureDoesNotDrain
  HealthCheckKeepsAnotherDrainReason
  HealthCheckReportOnly
  HealthCheckSkipsJobCpus
  HealthCheckResumesItsOwnDrain
  DrainReasonSummarizesCauses
  PrologEpilogPauseAndResume
  TwoJobsResumeAfterTheLast
  PrologEpilogWithoutDaemon
  PrologPauseExpiry
  HealthCheckResumesAPauseWhoseEpilogNeverRan
  ScriptsPassShellcheck)
foreach(name IN LISTS CORENOISE_SLURM_TESTS)
  add_test(NAME Slurm.${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/slurm_test.sh ${name}
            $<TARGET_FILE:corenoise> $<TARGET_FILE:corenoised>)
  set_tests_properties(Slurm.${name} PROPERTIES TIMEOUT 60 LABELS deploy)
endforeach()
