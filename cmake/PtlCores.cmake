# PtlCores.cmake - the "cores" test resource (tests/run-all, tests/README.md "How long
# each stage takes").
#
# The jobs that start mpirun (the PMIx and two-namespace jobs) run one at a time
# (RESOURCE_LOCK mpirun). Most of their time is mpirun's start-up and the timeouts
# the liveness jobs wait out: measured on 2 cores, the 58 release-stage PMIx jobs of
# one label took 179 s of wall time and 76 s of CPU time in all. Under `ctest -j2`
# that chain held one of the two slots for its whole length, with that core mostly
# idle. Every other test (not RUN_SERIAL, not in the chain) takes one slot of the
# resource "cores"; tests/run-all gives ctest J slots of it and J + 1 jobs, so J tests
# use the J cores and the chain runs beside them in the extra job. A plain
# `ctest -jN` (no --resource-spec-file) ignores the resource and runs as before.
function(ptl_share_cores)
  get_property(tests DIRECTORY PROPERTY TESTS)
  foreach(t IN LISTS tests)
    get_test_property(${t} RESOURCE_LOCK lock)
    get_test_property(${t} RUN_SERIAL serial)
    if(NOT lock AND NOT serial)
      set_tests_properties(${t} PROPERTIES RESOURCE_GROUPS "cores:1")
    endif()
  endforeach()
endfunction()

# At the top of a CMakeLists.txt that adds tests: tag them when the directory ends.
macro(ptl_share_cores_here)
  cmake_language(DEFER CALL ptl_share_cores)
endmacro()
