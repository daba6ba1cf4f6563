# GPU cases (label gpu): run only where a GPU exists (`scripts/test -L gpu`); CI never runs them.
set(G ${CMAKE_CURRENT_LIST_DIR})
lrhost_dist_case(gpu_nccl_world_1 --match "on cuda:0 \\(nccl\\)" --match "rank 0/1: collectives ok"
  -- --gpus 1 --run-dir @RUN@ ${PROJECT_SOURCE_DIR}/tests/dist/ddp_collectives.lua)
lrhost_dist_case(gpu_gloo_two_ranks_one_gpu --match "on cuda:0 \\(gloo\\)" --match "rank 0/2: collectives ok"
  -- --nproc 2 --device cuda --run-dir @RUN@ ${PROJECT_SOURCE_DIR}/tests/dist/ddp_collectives.lua)
set_property(TEST dist.gpu_gloo_two_ranks_one_gpu APPEND PROPERTY ENVIRONMENT "LRHOST_BACKEND=gloo")
lrhost_dist_case(gpu_bf16_autocast --match "bf16 on cuda ok" -- --gpus 1 --run-dir @RUN@ ${G}/bf16_cuda.lua)
lrhost_dist_case(gpu_ddp_equivalence_nccl --match "ddp equivalence ok: 1 ranks"
  -- --gpus 1 --run-dir @RUN@ ${PROJECT_SOURCE_DIR}/tests/dist/ddp_equivalence.lua)
set_tests_properties(dist.gpu_nccl_world_1 dist.gpu_gloo_two_ranks_one_gpu dist.gpu_bf16_autocast
                     dist.gpu_ddp_equivalence_nccl PROPERTIES LABELS gpu)
