# Finds Apache Arrow/Parquet C++ in the pyarrow wheel of the setup venv (the same site-packages as
# the torch wheel). The wheel ships headers and versioned shared libraries (libarrow.so.2600) but no
# CMake package, so we import the two libraries we use by full path. Only host/data/parquet/*.cpp
# include Arrow headers: the rest of the code base sees an Arrow-free API and compiles faster.
set(_pyarrow_dir "${_torch_site_packages}/pyarrow")
find_path(LRHOST_ARROW_INCLUDE_DIR arrow/api.h PATHS ${_pyarrow_dir}/include NO_DEFAULT_PATH REQUIRED)
foreach(_lib arrow parquet)
  file(GLOB _candidates "${_pyarrow_dir}/lib${_lib}.so.[0-9]*")
  list(FILTER _candidates EXCLUDE REGEX "\\.so\\.[0-9]+\\.[0-9]")
  if(NOT _candidates)
    message(FATAL_ERROR "lib${_lib}.so.* not found in ${_pyarrow_dir}; run scripts/setup (pyarrow wheel)")
  endif()
  list(GET _candidates 0 _library)
  add_library(lrhost::${_lib} SHARED IMPORTED)
  set_target_properties(lrhost::${_lib} PROPERTIES IMPORTED_LOCATION "${_library}"
                        INTERFACE_INCLUDE_DIRECTORIES "${LRHOST_ARROW_INCLUDE_DIR}")
endforeach()
target_link_libraries(lrhost::parquet INTERFACE lrhost::arrow)
