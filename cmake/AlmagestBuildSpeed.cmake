# Compile-time levers (docs/design.md, "Build time"): precompiled headers and unity builds. Neither
# changes what is compiled, only how often the same headers are parsed and the same inline and
# template code is instantiated and optimised; both can be turned off to check a source on its own.
#
# ALMAGEST_PCH: precompiled headers of third-party and standard headers for the engine, the UI
# library, the tests (one PCH per flag set, reused by every test executable) and the benchmarks.
# A source must still include what it uses: a build with -DALMAGEST_PCH=OFF -DALMAGEST_UNITY=OFF
# is the check that it does.
# ALMAGEST_UNITY: unity builds of the engine, the CLI and the MPI layer, ALMAGEST_UNITY_BATCH
# sources per translation unit. Names with internal linkage (anonymous namespaces, static) must
# then be unique within a target; sources that cannot be batched carry SKIP_UNITY_BUILD_INCLUSION.
option(ALMAGEST_PCH "Precompiled headers for the engine, UI, tests and benchmarks" ON)
option(ALMAGEST_UNITY "Unity builds of the engine, the CLI and the MPI layer" ON)
set(ALMAGEST_UNITY_BATCH 8 CACHE STRING "Sources per unity translation unit (ALMAGEST_UNITY)")

# almagest_unity(target [SKIP regex...]): a unity build of target; its sources matching any regex
# stay translation units of their own.
function(almagest_unity target)
  if(NOT ALMAGEST_UNITY)
    return()
  endif()
  cmake_parse_arguments(ARG "" "" "SKIP" ${ARGN})
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON
                                             UNITY_BUILD_BATCH_SIZE ${ALMAGEST_UNITY_BATCH})
  # GCC takes a source included by the unity file for a header and then warns about each pimpl
  # (Impl) holding a type from the source's anonymous namespace; in a source that is no hazard.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-subobject-linkage>)
  endif()
  get_target_property(_sources ${target} SOURCES)
  foreach(_src ${_sources})
    foreach(_re ${ARG_SKIP})
      if(_src MATCHES "${_re}")
        set_source_files_properties(${_src} TARGET_DIRECTORY ${target}
                                    PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
      endif()
    endforeach()
  endforeach()
endfunction()

# almagest_pch(target header...): precompile these headers for target (when ALMAGEST_PCH).
function(almagest_pch target)
  if(ALMAGEST_PCH)
    target_precompile_headers(${target} PRIVATE ${ARGN})
  endif()
endfunction()

# almagest_pch_reuse(target donor): target uses donor's precompiled header. The donor must be
# compiled with the same flags (GCC refuses a PCH otherwise and, with -Winvalid-pch, says so,
# falling back to parsing the headers: slower, never wrong).
function(almagest_pch_reuse target donor)
  if(ALMAGEST_PCH)
    target_precompile_headers(${target} REUSE_FROM ${donor})
    # AUTOMOC's mocs_compilation.cpp of a test is empty (its moc output is included by the
    # source): loading a 200-300 MB PCH would cost it about a second for nothing.
    get_target_property(_automoc ${target} AUTOMOC)
    if(_automoc)
      get_target_property(_bin ${target} BINARY_DIR)
      set_source_files_properties(${_bin}/${target}_autogen/mocs_compilation.cpp
        TARGET_DIRECTORY ${target} PROPERTIES SKIP_PRECOMPILE_HEADERS ON)
    endif()
  endif()
endfunction()

# The standard headers most sources use.
set(ALMAGEST_PCH_STD <algorithm> <array> <atomic> <chrono> <cmath> <complex> <cstddef> <cstdint>
    <cstdio> <cstdlib> <cstring> <exception> <filesystem> <fstream> <functional> <limits> <map>
    <memory> <mutex> <numbers> <optional> <random> <set> <sstream> <stdexcept> <string>
    <string_view> <thread> <utility> <vector>)
