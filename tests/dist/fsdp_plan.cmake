# `lrhost show`'s memory plan as text (label dist), included by tests/dist/CMakeLists.txt: the plan
# for the DDP ACT recipe at two ranks (selected strategy first, ZeRO figures for the same two ranks)
# printed after the resolved config JSON, and an unknown type inside a comma-separated wrap_modules
# list refused by show with the policy's module types. The exact bytes are checked against training
# in fsdp_cases.cmake (fsdp_plan_memory_*) and against hand-computed figures in test_fsdp_plan.cpp.
set(PLAN_TINY_ACT policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1)
lrhost_dist_case(fsdp_plan_show_act_ddp --max-seconds 30
  --match "^}$"
  --match "^plan for 2 rank\\(s\\): ddp$"
  --match "effective batch 16$"
  --match "^    ACTEncoderLayer float32 +2 x +33472 params"
  --match "^    ddp +/1 +params .*<- this config$"
  --match "^    zero-3 +/2 +params "
  --match "^    zero-2 +/2 +params "
  -- show ${PROJECT_SOURCE_DIR}/recipes/act_ddp.lua --nproc 2 ${PLAN_TINY_ACT})
lrhost_dist_case(fsdp_plan_wrap_list_unknown --exit 1 --max-seconds 30
  --match "accelerator.fsdp.wrap_modules: 'Bogus' matches no module of policy 'act'"
  --match "its module types are: .*ACTDecoderLayer.*ACTEncoderLayer"
  -- show ${PROJECT_SOURCE_DIR}/recipes/act_fsdp.lua --nproc 2 accelerator.fsdp.wrap_modules=ACTEncoderLayer,Bogus)
# The async checkpoint's host copy (save_async=true): the plan's figure against the bytes a save
# copies (async_plan_memory.sh), DDP on one rank and FSDP on two.
add_test(NAME dist.async_plan_memory_ddp
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/async_plan_memory.sh $<TARGET_FILE:lrhost> ${LRHOST_DIST_RUNS}/async_plan_ddp
                 1 ${PROJECT_SOURCE_DIR}/recipes/act_ddp.lua ${PLAN_TINY_ACT})
add_test(NAME dist.async_plan_memory_fsdp
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/async_plan_memory.sh $<TARGET_FILE:lrhost> ${LRHOST_DIST_RUNS}/async_plan_fsdp
                 2 ${PROJECT_SOURCE_DIR}/recipes/act_fsdp.lua ${PLAN_TINY_ACT})
set_tests_properties(dist.async_plan_memory_ddp dist.async_plan_memory_fsdp PROPERTIES LABELS dist TIMEOUT 300
                     ENVIRONMENT "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
