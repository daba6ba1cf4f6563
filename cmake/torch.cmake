# Finds LibTorch from the PyTorch pip wheel. The PyPI wheel is a CUDA 13 build: its Caffe2 config
# needs a CUDA toolkit at configure time and asks for CUDA::nvToolsExt, which CUDA >= 12.9 no longer
# provides. We map that target onto the header-only nvtx3 before find_package(Torch) so configuring
# works on CPU-only machines that have the toolkit (see shared/reference/torch_cpp.md section 5).
find_package(CUDAToolkit QUIET)
if(CUDAToolkit_FOUND AND NOT TARGET CUDA::nvToolsExt)
  add_library(CUDA::nvToolsExt INTERFACE IMPORTED)
  if(TARGET CUDA::nvtx3)
    target_link_libraries(CUDA::nvToolsExt INTERFACE CUDA::nvtx3)
  endif()
endif()
# We compile no CUDA code ourselves; naming an arch list stops Caffe2's config from test-compiling
# a CUDA program to detect GPUs (which fails with CMake 3.25 + nvcc 13 and means nothing here).
if(NOT DEFINED TORCH_CUDA_ARCH_LIST)
  set(TORCH_CUDA_ARCH_LIST "8.0;9.0")
endif()
find_package(Torch REQUIRED)
# TorchConfig adds its flags (e.g. -D_GLIBCXX_USE_CXX11_ABI) through TORCH_CXX_FLAGS.
set(CMAKE_CXX_FLAGS "${CMAKE_CXX_FLAGS} ${TORCH_CXX_FLAGS}")
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES)
  set(LRHOST_TORCH_HAS_CUDA ON)
endif()

# The NCCL header that ProcessGroupNCCL.hpp includes ships in the nvidia-nccl wheel beside torch.
get_filename_component(_torch_site_packages "${Torch_DIR}/../../../.." ABSOLUTE)
find_path(LRHOST_NCCL_INCLUDE_DIR nccl.h PATHS ${_torch_site_packages}/nvidia/nccl/include NO_DEFAULT_PATH REQUIRED)
