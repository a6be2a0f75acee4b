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
  verilate(${target}
    SOURCES ${TPU_RTL_LIST} ${M_SOURCES}
    TOP_MODULE ${M_TOP}
    PREFIX ${M_PREFIX}
    ${kind}
    VERILATOR_ARGS -Wall --timescale 1ns/1ns --assert
                   -I${CMAKE_SOURCE_DIR}/rtl/common
                   +define+TPU_CONFIG_${cfg_upper}
                   ${CMAKE_SOURCE_DIR}/rtl/lint.vlt
                   --trace-structs ${M_ARGS})
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
