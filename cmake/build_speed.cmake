# Compile and link settings chosen for build speed on small machines (docs/development.md has the
# measurements behind each one).
#
# Debug info: the default build type keeps line tables only (-g1): backtraces, perf and gdb still name
# file:line, but the objects skip LibTorch's type descriptions, which made -g cost 2-3x compile time
# through the precompiled header. -DLRHOST_FULL_DEBUG_INFO=ON restores full -g for a debugging session.
option(LRHOST_FULL_DEBUG_INFO "full -g debug info in RelWithDebInfo (default: line tables, -g1)" OFF)
if(NOT LRHOST_FULL_DEBUG_INFO)
  foreach(lang C CXX)
    string(REGEX REPLACE "(^| )-g( |$)" "\\1-g1\\2" CMAKE_${lang}_FLAGS_RELWITHDEBINFO "${CMAKE_${lang}_FLAGS_RELWITHDEBINFO}")
  endforeach()
endif()

# __FILE__ relative to the clone (doctest's messages, LibTorch's checks in our code): an object then
# holds no path of the clone that compiled it, so ccache can hand it to a clone at another path. A
# unity batch includes its files by absolute path, so without this every test batch would miss.
add_compile_options(-fmacro-prefix-map=${CMAKE_SOURCE_DIR}/=)

if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # ccache can only reuse objects compiled against a precompiled header whose bytes do not change
  # between builds: leave the build time out of it.
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:SHELL:-Xclang -fno-pch-timestamp>")
endif()

# lld links lrhost in 0.3 s where GNU ld took 19 s: used whenever the compiler can (scripts/setup
# installs it with clang).
include(CheckLinkerFlag)
check_linker_flag(CXX -fuse-ld=lld LRHOST_HAVE_LLD)
if(LRHOST_HAVE_LLD)
  add_link_options(-fuse-ld=lld)
endif()

# Unity build: each target compiles its sources in batches, one translation unit per batch, so the
# precompiled header is loaded and the inline code of LibTorch, fmt and nlohmann-json that every file
# instantiates is optimized and emitted once per batch instead of once per file. Files with their own
# compile options or definitions are compiled alone (CMake leaves them out of batches).
option(LRHOST_UNITY_BUILD "compile each target's sources in batches (unity build)" ON)
set(CMAKE_UNITY_BUILD ${LRHOST_UNITY_BUILD})
set(CMAKE_UNITY_BUILD_BATCH_SIZE 8)
