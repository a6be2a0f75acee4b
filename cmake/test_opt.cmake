# SPDX-License-Identifier: Apache-2.0
# The tests' own source files compile at TPU_TEST_OPT (docs/decisions.md,
# "Test code compiles at -O1"): what a GoogleTest executable compiles from
# the source tree, and nothing it links (the Verilated models, the
# libraries) or generates. It halves a test file's compile time; tests spend
# their run time in the models and libraries, which keep the build type's
# level. Call it once, after every add_subdirectory: it walks the tree.
set(TPU_TEST_OPT -O1 CACHE STRING "compiler options for the tests' own source files")

# Named source files of the targets in directory `dir`, at TPU_TEST_OPT.
function(tpu_sources_at_test_opt dir)
  set_property(SOURCE ${ARGN} DIRECTORY ${dir} APPEND PROPERTY COMPILE_OPTIONS ${TPU_TEST_OPT})
endfunction()

function(tpu_tests_at_test_opt dir)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  set(test_srcs)
  set(other_srcs)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "EXECUTABLE|LIBRARY$")
      continue()
    endif()
    get_target_property(srcs ${t} SOURCES)
    get_target_property(libs ${t} LINK_LIBRARIES)
    get_target_property(sdir ${t} SOURCE_DIR)
    foreach(s IN LISTS srcs)
      get_filename_component(abs ${s} ABSOLUTE BASE_DIR ${sdir})
      if(type STREQUAL "EXECUTABLE" AND libs MATCHES "GTest::" AND abs MATCHES "\\.cpp$" AND
         abs MATCHES "^${CMAKE_SOURCE_DIR}/" AND NOT abs MATCHES "^${CMAKE_BINARY_DIR}/")
        list(APPEND test_srcs ${abs})
      else()
        list(APPEND other_srcs ${abs})
      endif()
    endforeach()
  endforeach()
  # A file that a library or a tool compiles too keeps the build type's level.
  list(REMOVE_ITEM test_srcs ${other_srcs})
  list(REMOVE_DUPLICATES test_srcs)
  if(test_srcs)
    tpu_sources_at_test_opt(${dir} ${test_srcs})
  endif()
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(d IN LISTS subdirs)
    tpu_tests_at_test_opt(${d})
  endforeach()
endfunction()
