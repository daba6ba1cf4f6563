# The torch wheel ships fmt 12 headers in its include folder, while Debian's spdlog is built against
# Debian's fmt 9. Torch's include folder is searched first, so spdlog would see the wrong fmt and
# fail to compile. A folder holding only a link `fmt` -> Debian's fmt headers, passed with -I (which
# is searched before every -isystem folder), makes all code use the fmt that spdlog was built for.
# LibTorch's own compiled fmt is internal to its libraries, so nothing links against two versions.
find_package(fmt REQUIRED)
get_target_property(_fmt_includes fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
find_path(LRHOST_DEBIAN_FMT_DIR fmt/core.h PATHS ${_fmt_includes} /usr/include NO_DEFAULT_PATH REQUIRED)
set(LRHOST_FMT_SHIM_DIR ${CMAKE_BINARY_DIR}/fmt_shim)
file(MAKE_DIRECTORY ${LRHOST_FMT_SHIM_DIR})
file(CREATE_LINK ${LRHOST_DEBIAN_FMT_DIR}/fmt ${LRHOST_FMT_SHIM_DIR}/fmt SYMBOLIC)
