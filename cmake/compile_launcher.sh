#!/usr/bin/env bash
# Compiler launcher (CMAKE_CXX_COMPILER_LAUNCHER): runs each compile through ccache so that a clone of
# the same commit at another path reuses this clone's cached objects, as CI's fresh clone does.
# ccache makes the paths it recognizes relative to the clone (base_dir); two kinds it cannot:
#  - CMake passes the precompiled header after -Xclang, as an absolute path into the build folder.
#    Compiles run in the build folder, so such arguments are made relative here.
#  - A precompiled header's bytes hold the clone's paths, and ccache hashes them into every object
#    compiled against it. With pch_external_checksum ccache hashes <header>.sum instead, which this
#    script writes after building the header: a digest of the compiler's version, its arguments and
#    the preprocessed header, with the clone's paths taken out.
# usage: compile_launcher.sh CCACHE SOURCE_DIR COMPILER ARGS...
set -uo pipefail
ccache=$1 source_dir=$2
shift 2
args=()
for arg in "$@"; do args+=("${arg#"$PWD/"}"); done
output=""
for ((i = 0; i + 1 < ${#args[@]}; ++i)); do [[ ${args[i]} == -o ]] && output=${args[i + 1]}; done
case $output in
  *.pch | *.gch) ;;
  *) exec "$ccache" "${args[@]}" ;;
esac

# The precompiled header itself is always compiled here, never taken from the cache: its bytes name
# the files it was built from, and the compiler refuses it once the clone that built it is gone. The
# old digest goes first: without one ccache hashes the header's bytes, never a stale digest.
rm -f "$output.sum"
"${args[@]}" || exit

# The same command, preprocessing only: without its output, dependency file and -emit-pch.
preprocess=()
for ((i = 0; i < ${#args[@]}; ++i)); do
  case ${args[i]} in
    -o | -MT | -MF) ((++i)) ;;
    -MD) ;;
    -Xclang) if [[ ${args[i + 1]:-} == -emit-pch ]]; then ((++i)); else preprocess+=("${args[i]}"); fi ;;
    *) preprocess+=("${args[i]}") ;;
  esac
done
unclone() { sed -e "s|$PWD|<build>|g" -e "s|$source_dir|<source>|g"; }
{
  "${args[0]}" --version
  printf '%s\n' "${args[@]}" | unclone
  "${preprocess[@]}" -E -P -o - | unclone
} | sha256sum > "$output.sum.tmp" && mv "$output.sum.tmp" "$output.sum"
