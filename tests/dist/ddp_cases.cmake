# Process-group, DDP and accelerator cases (label dist), included by tests/dist/CMakeLists.txt.
# Equivalence tolerance: fp32, relative max difference 1e-5 against the single-process reference.
set(D ${CMAKE_CURRENT_SOURCE_DIR})
foreach(n 1 2 3 4)
  lrhost_dist_case(collectives_${n} --match "rank 0/${n}: collectives ok"
    -- --nproc ${n} --device cpu --run-dir @RUN@ ${D}/ddp_collectives.lua)
endforeach()
lrhost_dist_case(ddp_equivalence_2 --match "ddp equivalence ok: 2 ranks x 6 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${D}/ddp_equivalence.lua)
lrhost_dist_case(ddp_equivalence_3_accum_clip --match "ddp equivalence ok: 3 ranks x 2 rows x 2 accum"
  -- --nproc 3 --device cpu --run-dir @RUN@ ${D}/ddp_equivalence.lua accum=2 clip=0.05)
lrhost_dist_case(ddp_equivalence_4_clip --match "ddp equivalence ok: 4 ranks x 3 rows x 1 accum"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${D}/ddp_equivalence.lua clip=0.05)
# One process, accumulation of 3 micro-batches == one batch of 3x the size.
lrhost_dist_case(accumulation_single_process --match "ddp equivalence ok: 1 ranks x 4 rows x 3 accum"
  -- --device cpu --run-dir @RUN@ ${D}/ddp_equivalence.lua accum=3)
# A rank stuck in a collective that another rank skipped is reported, not left hanging.
lrhost_dist_case(skipped_collective --exit 1 --max-seconds 30
  --match "job failed: rank 0 failed first"
  --match "collective 'all_reduce' on rank 0 timed out after 3 s"
  -- --nproc 2 --device cpu --timeout 3 --run-dir @RUN@ ${R}/skipped_collective.lua)
# The shipped DDP example trains out of the box, and in bf16 / fp16 (loss must reach 10x below
# the constant-prediction baseline of ~0.43 in a short run).
lrhost_dist_case(example_mlp_ddp --match "held-out mse"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_ddp.lua)
foreach(mp bf16 fp16)
  lrhost_dist_case(mixed_precision_${mp} --match "mixed precision '${mp}'" --match "held-out mse"
    -- --nproc 2 --device cpu --run-dir @RUN@ ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_ddp.lua
       accelerator.mixed_precision=${mp} steps=300 log_freq=100 target_mse=0.04)
endforeach()
# Loader sharding: accelerate's batch k -> rank k mod W with even batches, resume from a position.
foreach(n 2 3 4)
  lrhost_dist_case(loader_sharding_${n} --match "rank 0/${n}: loader sharding ok"
    -- --nproc ${n} --device cpu --run-dir @RUN@ ${D}/loader_sharding.lua)
endforeach()
# SmolVLA: DDP on the trainable parameters only; N ranks == one process on the global batch, the
# frozen VLM unchanged and without gradients (tests/dist/smolvla_equivalence.lua).
foreach(n 2 4)
  lrhost_dist_case(smolvla_ddp_equivalence_${n} --match "smolvla ddp equivalence ok: ${n} ranks"
    -- --nproc ${n} --device cpu --run-dir @RUN@ ${D}/smolvla_equivalence.lua
       vlm=${PROJECT_SOURCE_DIR}/recipes/assets/smolvla_tiny_vlm)
endforeach()
lrhost_dist_case(smolvla_ddp_equivalence_gradient_checkpointing --match "smolvla ddp equivalence ok: 2 ranks"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${D}/smolvla_equivalence.lua
     vlm=${PROJECT_SOURCE_DIR}/recipes/assets/smolvla_tiny_vlm gradient_checkpointing=true)
