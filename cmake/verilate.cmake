# SPDX-License-Identifier: Apache-2.0
# tpu_add_model(<target> PREFIX <Vname> TOP <module> [CONFIG <name>] [SYSTEMC]
#               [ARGS <verilator args>...] [SOURCES <extra files>...])
# Verilates one top module into <target> as class <Vname>, for the named
# configuration (default: the default configuration), with FST tracing
# compiled in (it is switched on at run time only). SOURCES are added after
# the RTL (simulation models of vendor cells, from tb/).
# SYSTEMC makes a SystemC module instead (verilator --sc: sc_in/sc_out ports,
# evaluated by the SystemC kernel; no tracing compiled in) and links SystemC
# (target tpu_systemc below); see docs/systemc.md.
# With TPU_COVERAGE (make coverage, docs/verification.md) every model is
# also instrumented for coverage (verilator --coverage: lines, toggles and
# the RTL's `COVER points; exclusions in rtl/coverage.vlt) and links a
# runtime of its own kind built with VM_COVERAGE=1.
file(STRINGS ${CMAKE_SOURCE_DIR}/rtl/sources.list TPU_RTL_LIST)
list(TRANSFORM TPU_RTL_LIST PREPEND ${CMAKE_SOURCE_DIR}/rtl/)

function(tpu_add_model target)
  cmake_parse_arguments(M "SYSTEMC" "PREFIX;TOP;CONFIG" "ARGS;SOURCES" ${ARGN})
  if(NOT M_CONFIG)
    set(M_CONFIG ${TPU_DEFAULT_CONFIG})
  endif()
  string(TOUPPER "${M_CONFIG}" cfg_upper)
  if(M_SYSTEMC)
    tpu_find_systemc()
    set(kind SYSTEMC)
    target_link_libraries(${target} PUBLIC tpu_systemc)
  else()
    set(kind TRACE_FST)
  endif()
  set(coverage)
  set(coverage_args)
  if(TPU_COVERAGE)
    set(coverage COVERAGE)
    # Every module inlined, as a normal build inlines the ones tests peek
    # into by flattened name (tb/common/memory_peek.h): the instrumentation
    # would make them too large for Verilator's inlining limit.
    set(coverage_args ${CMAKE_SOURCE_DIR}/rtl/coverage.vlt --inline-mult 0)
  endif()
  # verilate() runs at the end of this directory (tpu_verilate_pending).
  tpu_queue_model(${target} ${M_PREFIX} ${kind}
    SOURCES ${TPU_RTL_LIST} ${M_SOURCES}
    TOP_MODULE ${M_TOP}
    PREFIX ${M_PREFIX}
    ${kind} ${coverage}
    VERILATOR_ARGS -Wall --timescale 1ns/1ns --assert
                   -I${CMAKE_SOURCE_DIR}/rtl/common
                   +define+TPU_CONFIG_${cfg_upper}
                   ${CMAKE_SOURCE_DIR}/rtl/lint.vlt ${coverage_args}
                   --trace-structs ${TPU_VERILATOR_SPLIT} ${TPU_VERILATOR_NO_RELOOP}
                   ${M_ARGS})
endfunction()

# Verilator runs once per model while CMake configures (verilate() needs the
# list of files it generates), and one model after another that takes about
# 40 s of a clean configure. So tpu_add_model only queues its model; at the
# end of the directory, tpu_verilate_pending runs the Verilator commands of
# all the directory's models in parallel (scripts/run_parallel.py, one job per
# core), then calls verilate() for each, which finds its model up to date
# and does what it always does (targets, rules to re-Verilate at build time).
# The commands are built here as verilate() builds them (Verilator 5.006's
# verilator-config.cmake); should they ever differ, verilate() runs
# Verilator again itself and a warning says so: slower, never wrong.
function(tpu_queue_model target prefix kind)
  get_property(n GLOBAL PROPERTY TPU_MODELS_QUEUED)
  math(EXPR n "0${n} + 1")
  set_property(GLOBAL PROPERTY TPU_MODELS_QUEUED ${n})
  set_property(GLOBAL PROPERTY TPU_MODEL_${n} ${target} ${prefix} ${kind})
  set_property(GLOBAL PROPERTY TPU_MODEL_${n}_ARGS ${ARGN})
  # A global property per directory: a subdirectory would inherit a
  # directory property's value.
  get_property(pending GLOBAL PROPERTY TPU_MODELS_PENDING_${CMAKE_CURRENT_BINARY_DIR})
  if(NOT pending)
    cmake_language(DEFER CALL tpu_verilate_pending)
  endif()
  set_property(GLOBAL APPEND PROPERTY TPU_MODELS_PENDING_${CMAKE_CURRENT_BINARY_DIR} ${n})
endfunction()

# The command verilate(<target> <args>) runs, its output directory, and
# whether verilate() would run it (the output variables <command>, <vdir>
# and <outdated>).
function(tpu_verilator_command target command vdir outdated)
  cmake_parse_arguments(V "COVERAGE;TRACE;TRACE_FST;SYSTEMC;TRACE_STRUCTS"
                          "PREFIX;TOP_MODULE;THREADS;TRACE_THREADS;DIRECTORY"
                          "SOURCES;VERILATOR_ARGS;INCLUDE_DIRS;OPT_SLOW;OPT_FAST;OPT_GLOBAL" ${ARGN})
  set(args)
  if(V_TOP_MODULE)
    list(APPEND args --top ${V_TOP_MODULE})
  endif()
  if(V_COVERAGE)
    list(APPEND args --coverage)
  endif()
  if(V_TRACE_FST)
    list(APPEND args --trace-fst)
  endif()
  if(V_SYSTEMC)
    list(APPEND args --sc)
  else()
    list(APPEND args --cc)
  endif()
  string(TOLOWER ${CMAKE_CXX_COMPILER_ID} compiler)
  if(compiler STREQUAL "appleclang")
    set(compiler clang)
  elseif(NOT compiler MATCHES "^msvc$|^clang$")
    set(compiler gcc)
  endif()
  get_target_property(bdir ${target} BINARY_DIR)
  set(dir ${bdir}/CMakeFiles/${target}.dir/${V_PREFIX}.dir)
  set(cmd ${VERILATOR_BIN} --compiler ${compiler} --prefix ${V_PREFIX} --Mdir ${dir} --make cmake
          ${args} ${V_VERILATOR_ARGS} ${V_SOURCES})
  set(old)
  if(EXISTS ${dir}/verilator_args.txt)
    file(READ ${dir}/verilator_args.txt old)
  endif()
  if(NOT EXISTS ${dir}/${V_PREFIX}_copy.cmake OR NOT old STREQUAL cmd)
    set(${outdated} ON PARENT_SCOPE)
  else()
    set(${outdated} OFF PARENT_SCOPE)
  endif()
  set(${command} ${cmd} PARENT_SCOPE)
  set(${vdir} ${dir} PARENT_SCOPE)
endfunction()

function(tpu_verilate_pending)
  get_property(pending GLOBAL PROPERTY TPU_MODELS_PENDING_${CMAKE_CURRENT_BINARY_DIR})
  set_property(GLOBAL PROPERTY TPU_MODELS_PENDING_${CMAKE_CURRENT_BINARY_DIR})
  # The outdated models' commands, one argument per line and a blank line
  # after each (scripts/run_parallel.py).
  set(jobs "")
  set(todo)
  foreach(n ${pending})
    get_property(model GLOBAL PROPERTY TPU_MODEL_${n})
    get_property(args GLOBAL PROPERTY TPU_MODEL_${n}_ARGS)
    list(GET model 0 target)
    tpu_verilator_command(${target} cmd vdir outdated ${args})
    set_property(GLOBAL PROPERTY TPU_MODEL_${n}_CMD ${cmd})
    set_property(GLOBAL PROPERTY TPU_MODEL_${n}_VDIR ${vdir})
    if(outdated)
      file(MAKE_DIRECTORY ${vdir})
      list(JOIN cmd "\n" lines)
      string(APPEND jobs "${lines}\n\n")
      list(APPEND todo ${n})
    endif()
  endforeach()
  if(todo)
    list(LENGTH todo count)
    message(STATUS "Verilating ${count} models in ${CMAKE_CURRENT_SOURCE_DIR}")
    set(jobs_file ${CMAKE_CURRENT_BINARY_DIR}/CMakeFiles/tpu_verilate_jobs.txt)
    file(WRITE ${jobs_file} "${jobs}")
    cmake_host_system_information(RESULT cores QUERY NUMBER_OF_LOGICAL_CORES)
    execute_process(COMMAND python3 ${PROJECT_SOURCE_DIR}/scripts/run_parallel.py ${cores} ${jobs_file}
                    WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}
                    OUTPUT_VARIABLE ok_list)
    # The models whose command succeeded are marked up to date as verilate()
    # marks them; a failed one is left to verilate(), which runs it again and
    # reports the error.
    string(REPLACE "\n" ";" ok_list "${ok_list}")
    set(i 0)
    foreach(n ${todo})
      if("${i}" IN_LIST ok_list)
        get_property(model GLOBAL PROPERTY TPU_MODEL_${n})
        get_property(cmd GLOBAL PROPERTY TPU_MODEL_${n}_CMD)
        get_property(vdir GLOBAL PROPERTY TPU_MODEL_${n}_VDIR)
        list(GET model 1 prefix)
        file(COPY_FILE ${vdir}/${prefix}.cmake ${vdir}/${prefix}_copy.cmake)
        file(WRITE ${vdir}/verilator_args.txt "${cmd}")
      endif()
      math(EXPR i "${i} + 1")
    endforeach()
  endif()
  foreach(n ${pending})
    get_property(model GLOBAL PROPERTY TPU_MODEL_${n})
    get_property(args GLOBAL PROPERTY TPU_MODEL_${n}_ARGS)
    get_property(cmd GLOBAL PROPERTY TPU_MODEL_${n}_CMD)
    get_property(vdir GLOBAL PROPERTY TPU_MODEL_${n}_VDIR)
    list(GET model 0 target)
    list(GET model 1 prefix)
    list(GET model 2 kind)
    verilate(${target} ${args})
    file(READ ${vdir}/verilator_args.txt ran)
    if(NOT ran STREQUAL cmd)
      message(WARNING "cmake/verilate.cmake: verilate() ran another Verilator command for ${prefix} "
                      "than tpu_verilator_command built; it ran Verilator again (slower, not wrong)")
    endif()
    tpu_model_build_speed(${target} ${prefix} ${kind})
  endforeach()
endfunction()

# How the generated C++ is compiled, for build time (docs/decisions.md). The
# cost of a model's build is mostly fixed cost per file (each of ~80
# generated files parses verilated.h again, ~0.7 s) and -O3 on code that
# runs once. So:
#  - the generated files are compiled through a few "unity" files that
#    #include up to TPU_VERILATOR_UNITY_FILES of them each: one group for
#    the evaluation (the build type's -O3), one for the per-cycle trace dump,
#    used only while a waveform is written (TPU_VERILATOR_OPT_TRACE), one for
#    the code Verilator marks slow: constructors, initial settling, the
#    declarations of traced signals (TPU_VERILATOR_OPT_SLOW);
#  - functions are split at TPU_VERILATOR_SPLIT statements, so that no
#    single function (the MXU's evaluation at large N) grows the compiler's
#    time and memory faster than linearly;
#  - the Verilator runtime (verilated.cpp, the FST writer, ...) is compiled
#    once per kind of model into tpu_verilated_<kind>, not once per library;
#    a coverage build's runtime is another kind (tpu_verilated_<kind>_coverage),
#    so that a coverage runtime is never mixed with a normal one.
set(TPU_VERILATOR_SPLIT --output-split-cfuncs;2000;--output-split-ctrace;2000
    CACHE STRING "Verilator options that split the generated C++ (a ;-list)")
# Verilator 5.006 rolls runs of 40+ word copies back into loops, and in the
# copies of the values assertions sample (N=256: 64-word rows under $past)
# it uses the loop index in _eval without declaring it, so the C++ does not
# compile. No model relooped anything below N=256, so turning it off costs
# nothing there.
set(TPU_VERILATOR_NO_RELOOP --reloop-limit 1000000)
set(TPU_VERILATOR_OPT_SLOW -O0 CACHE STRING "compiler options for the code Verilator marks slow")
set(TPU_VERILATOR_OPT_TRACE -O1 CACHE STRING "compiler options for the trace-dump code")
set(TPU_VERILATOR_UNITY_FILES 24 CACHE STRING "generated files per unity source (0: no unity sources)")

function(tpu_model_build_speed target prefix kind)
  get_target_property(bdir ${target} BINARY_DIR)
  set(vdir ${bdir}/CMakeFiles/${target}.dir/${prefix}.dir)
  # Verilator's own lists of the files it generated, by optimization class.
  include(${vdir}/${prefix}_copy.cmake)
  set(slow ${${prefix}_CLASSES_SLOW} ${${prefix}_SUPPORT_SLOW})
  set(fast ${${prefix}_CLASSES_FAST} ${${prefix}_SUPPORT_FAST})
  set(trace ${fast})
  list(FILTER trace INCLUDE REGEX "__Trace__[0-9]+\\.cpp$")
  list(REMOVE_ITEM fast ${trace})
  set(runtime ${${prefix}_GLOBAL})

  # The runtime leaves the target for one shared library per kind.
  get_target_property(srcs ${target} SOURCES)
  list(REMOVE_ITEM srcs ${runtime})
  set_property(TARGET ${target} PROPERTY SOURCES ${srcs})
  string(TOLOWER ${kind} lib)
  set(lib tpu_verilated_${lib})
  set(cov 0)
  if(TPU_COVERAGE)
    set(lib ${lib}_coverage)
    set(cov 1)
  endif()
  if(NOT TARGET ${lib})
    # Built with the same VM_* switches verilate() gives the model.
    add_library(${lib} STATIC ${runtime})
    target_include_directories(${lib} PUBLIC ${VERILATOR_ROOT}/include ${VERILATOR_ROOT}/include/vltstd)
    if(kind STREQUAL "SYSTEMC")
      target_compile_definitions(${lib} PRIVATE VM_SC=1 VM_TRACE=0 VM_TRACE_VCD=0 VM_TRACE_FST=0 VM_COVERAGE=${cov})
      target_link_libraries(${lib} PUBLIC tpu_systemc)
    else()
      target_compile_definitions(${lib} PRIVATE VM_SC=0 VM_TRACE=1 VM_TRACE_VCD=0 VM_TRACE_FST=1 VM_COVERAGE=${cov})
    endif()
    if(TPU_COVERAGE)
      # verilate() defines VM_COVERAGE only where it compiles a model; the
      # harness (sim/verilator/coverage.h) writes the data from any code
      # that links one.
      target_compile_definitions(${lib} INTERFACE VM_COVERAGE=1)
    endif()
    target_link_libraries(${lib} PUBLIC ${VERILATOR_MT_CFLAGS} ${${prefix}_USER_LDLIBS})
  else()
    get_target_property(have ${lib} SOURCES)
    list(REMOVE_ITEM runtime ${have})
    if(runtime)
      target_sources(${lib} PRIVATE ${runtime})
    endif()
  endif()
  target_link_libraries(${target} PUBLIC ${lib})

  # Compiler options per group; the evaluation keeps the build type's.
  set(opts_slow ${TPU_VERILATOR_OPT_SLOW})
  set(opts_trace ${TPU_VERILATOR_OPT_TRACE})
  set(opts_fast)
  if(TPU_VERILATOR_UNITY_FILES LESS_EQUAL 0)
    foreach(group slow trace)
      set_property(SOURCE ${${group}} APPEND PROPERTY COMPILE_OPTIONS ${opts_${group}})
    endforeach()
    return()
  endif()
  # The generated files stay sources of the target (so Verilator runs before
  # anything compiles) but are compiled only through the unity files.
  set_property(SOURCE ${slow} ${fast} ${trace} PROPERTY HEADER_FILE_ONLY ON)
  foreach(group slow fast trace)
    set(files ${${group}})
    set(part 0)
    while(files)
      list(LENGTH files left)
      if(left GREATER TPU_VERILATOR_UNITY_FILES)
        list(SUBLIST files 0 ${TPU_VERILATOR_UNITY_FILES} chunk)
        list(SUBLIST files ${TPU_VERILATOR_UNITY_FILES} -1 files)
      else()
        set(chunk ${files})
        set(files)
      endif()
      list(TRANSFORM chunk REPLACE "(.+)" "#include \"\\1\"")
      list(JOIN chunk "\n" body)
      set(unity ${vdir}/../${prefix}__unity_${group}_${part}.cpp)
      file(CONFIGURE OUTPUT ${unity} CONTENT "// Generated by cmake/verilate.cmake: ${group} code of ${prefix}.\n${body}\n" @ONLY)
      target_sources(${target} PRIVATE ${unity})
      set_property(SOURCE ${unity} APPEND PROPERTY COMPILE_OPTIONS ${opts_${group}})
      math(EXPR part "${part} + 1")
    endwhile()
  endforeach()
endfunction()

# tpu_find_systemc(): the interface target tpu_systemc, SystemC with TLM-2.0
# (Debian: libsystemc-dev; elsewhere SYSTEMC_INCLUDE/SYSTEMC_LIBDIR as for
# Verilator). The library's C++ standard is part of its ABI (it exports
# sc_api_version_2_3_4_cxx<std>); SC_CPLUSPLUS is set to the standard the
# installed library was built with, found by linking a test program, so that
# this C++20 build links it. Every model and simulation in one process shares
# SystemC's time resolution; tpu_top is Verilated with 1 ns precision, so a
# program sets sc_set_time_resolution(1, SC_NS) before it builds a model.
function(tpu_find_systemc)
  if(TARGET tpu_systemc)
    return()
  endif()
  find_path(TPU_SYSTEMC_INCLUDE NAMES systemc.h HINTS ENV SYSTEMC_INCLUDE ENV SYSTEMC_ROOT)
  find_library(TPU_SYSTEMC_LIBRARY NAMES systemc HINTS ENV SYSTEMC_LIBDIR ENV SYSTEMC_ROOT)
  if(NOT TPU_SYSTEMC_INCLUDE OR NOT TPU_SYSTEMC_LIBRARY)
    message(FATAL_ERROR "SystemC not found: install libsystemc-dev (scripts/setup.sh), or set "
                        "SYSTEMC_INCLUDE and SYSTEMC_LIBDIR")
  endif()
  if(NOT DEFINED CACHE{TPU_SYSTEMC_CPLUSPLUS})
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_INCLUDES ${TPU_SYSTEMC_INCLUDE})
    set(CMAKE_REQUIRED_LIBRARIES ${TPU_SYSTEMC_LIBRARY})
    set(CMAKE_REQUIRED_QUIET ON)
    foreach(std 202002L 201703L 201402L 201103L)
      set(CMAKE_REQUIRED_DEFINITIONS -DSC_CPLUSPLUS=${std})
      check_cxx_source_compiles("#include <systemc>
        int sc_main(int, char**) { return 0; }
        int main() { return sc_core::sc_time_stamp() == sc_core::SC_ZERO_TIME ? 0 : 1; }"
        TPU_SYSTEMC_LINKS_${std})
      if(TPU_SYSTEMC_LINKS_${std})
        set(TPU_SYSTEMC_CPLUSPLUS ${std} CACHE STRING "C++ standard SystemC was built with (SC_CPLUSPLUS)")
        break()
      endif()
    endforeach()
    if(NOT DEFINED CACHE{TPU_SYSTEMC_CPLUSPLUS})
      message(FATAL_ERROR "SystemC at ${TPU_SYSTEMC_LIBRARY}: no C++ standard links it")
    endif()
    message(STATUS "SystemC: ${TPU_SYSTEMC_LIBRARY}, SC_CPLUSPLUS=${TPU_SYSTEMC_CPLUSPLUS}")
  endif()
  add_library(tpu_systemc INTERFACE)
  target_include_directories(tpu_systemc SYSTEM INTERFACE ${TPU_SYSTEMC_INCLUDE})
  target_link_libraries(tpu_systemc INTERFACE ${TPU_SYSTEMC_LIBRARY})
  target_compile_definitions(tpu_systemc INTERFACE SC_CPLUSPLUS=${TPU_SYSTEMC_CPLUSPLUS})
endfunction()
