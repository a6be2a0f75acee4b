# SPDX-License-Identifier: Apache-2.0
# tpu_add_model(<target> PREFIX <Vname> TOP <module> [CONFIG <name>] [ARGS <verilator args>...]
#               [SOURCES <extra files>...])
# Verilates one top module into <target> as class <Vname>, for the named
# configuration (default: the default configuration), with FST tracing
# compiled in (it is switched on at run time only). SOURCES are added after
# the RTL (simulation models of vendor cells, from tb/).
file(STRINGS ${CMAKE_SOURCE_DIR}/rtl/sources.list TPU_RTL_LIST)
list(TRANSFORM TPU_RTL_LIST PREPEND ${CMAKE_SOURCE_DIR}/rtl/)

function(tpu_add_model target)
  cmake_parse_arguments(M "" "PREFIX;TOP;CONFIG" "ARGS;SOURCES" ${ARGN})
  if(NOT M_CONFIG)
    set(M_CONFIG ${TPU_DEFAULT_CONFIG})
  endif()
  string(TOUPPER "${M_CONFIG}" cfg_upper)
  verilate(${target}
    SOURCES ${TPU_RTL_LIST} ${M_SOURCES}
    TOP_MODULE ${M_TOP}
    PREFIX ${M_PREFIX}
    TRACE_FST
    VERILATOR_ARGS -Wall --timescale 1ns/1ns --assert
                   -I${CMAKE_SOURCE_DIR}/rtl/common
                   +define+TPU_CONFIG_${cfg_upper}
                   ${CMAKE_SOURCE_DIR}/rtl/lint.vlt
                   --trace-structs ${M_ARGS})
endfunction()
