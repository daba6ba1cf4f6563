# FSDP cases (label dist), included by tests/dist/CMakeLists.txt. fsdp_equivalence.lua compares FSDP
# with DDP on the same ranks and with one process on the global batch after a few optimizer steps:
# elementwise |fsdp - reference| <= atol_T + 1e-5 |reference| in fp32, where atol_T is derived per
# tensor from the run's own arithmetic (twice the largest difference between three valid fp32
# summation orders of the same steps: DDP, one process, one process row by row; the script says why
# that bounds a valid FSDP run), so no case carries a constant measured on one machine. ACT and
# SmolVLA use SGD with momentum: ACT's attention key bias has an exactly-zero gradient that Adam
# would amplify from rounding noise. Diffusion (FSDP vs DDP only) and bf16 use fixed tolerances, given in the script and
# below. ZeRO-3 cases also check the per-rank memory bound total/N + largest unit.
set(D ${CMAKE_CURRENT_SOURCE_DIR})
set(EQ ${D}/fsdp_equivalence.lua)
lrhost_dist_case(fsdp_zero3_2 --match "fsdp equivalence ok: mlp, fsdp zero-3 \\(dp_shard 2 x dp_replicate 1\\), 2 ranks"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ})
lrhost_dist_case(fsdp_zero2_2 --match "fsdp equivalence ok: mlp, fsdp zero-2 \\(dp_shard 2 x dp_replicate 1\\), 2 ranks"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} reshard_after_forward=false)
lrhost_dist_case(fsdp_zero3_3_accum_clip --match "fsdp equivalence ok: mlp, fsdp zero-3 .* 3 ranks x 2 rows x 2 accum"
  -- --nproc 3 --device cpu --run-dir @RUN@ ${EQ} accum=2 clip=0.05)
lrhost_dist_case(fsdp_zero2_3_accum_clip --match "fsdp equivalence ok: mlp, fsdp zero-2 .* 3 ranks x 2 rows x 2 accum"
  -- --nproc 3 --device cpu --run-dir @RUN@ ${EQ} accum=2 clip=0.05 reshard_after_forward=false)
lrhost_dist_case(fsdp_zero3_4_clip --match "fsdp equivalence ok: mlp, fsdp zero-3 \\(dp_shard 4 x dp_replicate 1\\), 4 ranks"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${EQ} clip=0.05)
lrhost_dist_case(fsdp_hybrid_2x2_clip
  --match "fsdp equivalence ok: mlp, fsdp zero-3 hybrid \\(dp_shard 2 x dp_replicate 2\\), 4 ranks"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${EQ} dp_shard=2 dp_replicate=2 clip=0.05)
lrhost_dist_case(fsdp_hybrid_2x2_accum
  --match "fsdp equivalence ok: mlp, fsdp zero-2 hybrid \\(dp_shard 2 x dp_replicate 2\\), 4 ranks x 1 rows x 3 accum"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${EQ} dp_shard=2 dp_replicate=2 accum=3 reshard_after_forward=false)
lrhost_dist_case(fsdp_single_process --match "fsdp equivalence ok: mlp, fsdp zero-3 \\(dp_shard 1 x dp_replicate 1\\), 1 ranks x 4 rows x 3 accum"
  -- --device cpu --run-dir @RUN@ ${EQ} accum=3)
lrhost_dist_case(fsdp_act_zero3_2 --match "fsdp equivalence ok: act, fsdp zero-3 .* 2 ranks x 4 rows x 1 accum, 3 steps, 4 units"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=act global_batch=8 optimizer=sgd)
lrhost_dist_case(fsdp_act_zero2_2_accum_clip --match "fsdp equivalence ok: act, fsdp zero-2 .* 2 ranks x 2 rows x 2 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=act global_batch=8 optimizer=sgd accum=2 clip=0.5
     reshard_after_forward=false)
lrhost_dist_case(fsdp_act_hybrid_2x2 --match "fsdp equivalence ok: act, fsdp zero-3 hybrid .* 4 ranks x 2 rows"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${EQ} policy=act global_batch=8 optimizer=sgd dp_shard=2 dp_replicate=2)
# Diffusion draws noise and timesteps per rank, so it is compared with DDP only (same draws per rank).
lrhost_dist_case(fsdp_diffusion_zero3_2 --match "fsdp equivalence ok: diffusion, fsdp zero-3 .* 2 ranks x 4 rows x 1 accum, 3 steps, 9 units"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=diffusion global_batch=8 optimizer=sgd)
# SmolVLA: the expert's decoder layers are units (the loop runs each layer index inside their hooks),
# the frozen VLM stays whole and gets no gradient; ZeRO-3 and ZeRO-2 equal DDP and one process.
lrhost_dist_case(fsdp_smolvla_zero3_2 --match "fsdp equivalence ok: smolvla, fsdp zero-3 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=smolvla global_batch=4 steps=2 optimizer=sgd)
lrhost_dist_case(fsdp_smolvla_zero2_2 --match "fsdp equivalence ok: smolvla, fsdp zero-2 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=smolvla global_batch=4 steps=2 optimizer=sgd
     reshard_after_forward=false)
# pi0 / pi05: the Gemma layers (gathered in VLM/expert pairs) and SigLIP's layers are units; the
# tensors that never get a gradient are frozen (a frozen group in the last VLM layer's unit and in the
# root). ZeRO-3, ZeRO-2, hybrid and checkpointing (recomputed inside the units' hooks) equal DDP and one
# process. pi05 steps with AdamW; pi0 with SGD: its last VLM layer's q_proj has an exactly-zero
# gradient whose rounding noise Adam would turn into full-size updates (as ACT's key bias).
lrhost_dist_case(fsdp_pi05_zero3_2 --match "fsdp equivalence ok: pi05, fsdp zero-3 .* 2 ranks x 2 rows x 1 accum, 2 steps, 9 units"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=pi05 global_batch=4 steps=2)
lrhost_dist_case(fsdp_pi0_zero2_2 --match "fsdp equivalence ok: pi0, fsdp zero-2 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=pi0 global_batch=4 steps=2 optimizer=sgd reshard_after_forward=false)
lrhost_dist_case(fsdp_pi05_zero3_2_checkpointing --match "fsdp equivalence ok: pi05, fsdp zero-3 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=pi05 global_batch=4 steps=2 gradient_checkpointing=true)
lrhost_dist_case(fsdp_pi0_hybrid_2x2_clip --match "fsdp equivalence ok: pi0, fsdp zero-3 hybrid .* 4 ranks x 1 rows"
  -- --nproc 4 --device cpu --run-dir @RUN@ ${EQ} policy=pi0 global_batch=4 steps=2 optimizer=sgd dp_shard=2 dp_replicate=2
     clip=0.5)
lrhost_dist_case(fsdp_smolvla_zero3_2_checkpointing --match "fsdp equivalence ok: smolvla, fsdp zero-3 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=smolvla global_batch=4 steps=2 optimizer=sgd gradient_checkpointing=true)
# bf16: gathered parameters in bf16 over fp32 shards; a loose check that training stays close to fp32.
lrhost_dist_case(fsdp_bf16_2 --match "fsdp equivalence ok: mlp, fsdp zero-3 .* 2 ranks"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} mixed_precision=bf16 rtol=0.05 atol=0.02)

# Errors: an unknown wrap module lists the policy's module types; a type whose forward runs no FSDP
# hooks is refused; dp sizes that do not multiply to the rank count; a rank that skips a step.
lrhost_dist_case(fsdp_unknown_wrap_module --exit 1 --max-seconds 30
  --match "accelerator.fsdp.wrap_modules: 'Nope' matches no module of policy 'mlp'"
  --match "its module types are: .*MlpLinear"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} wrap_modules=Nope)
lrhost_dist_case(fsdp_unhookable_wrap_module --exit 1 --max-seconds 30
  --match "module type 'ReLU' cannot be an FSDP unit: its forward runs no FSDP hooks"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} wrap_modules=ReLU)
lrhost_dist_case(fsdp_bad_group_sizes --exit 1 --max-seconds 30
  --match "dp_shard \\(2\\) x dp_replicate \\(1\\) must equal the number of ranks \\(3\\)"
  -- --nproc 3 --device cpu --run-dir @RUN@ ${EQ} dp_shard=2)
lrhost_dist_case(fsdp_skipped_forward --exit 1 --max-seconds 30
  --match "job failed: rank 0 failed first"
  --match "collective 'all_gather' on rank 0 timed out after 3 s"
  -- --nproc 2 --device cpu --timeout 3 --run-dir @RUN@ ${R}/fsdp_skipped_forward.lua)
set_tests_properties(dist.fsdp_act_zero3_2 dist.fsdp_act_zero2_2_accum_clip dist.fsdp_act_hybrid_2x2
                     dist.fsdp_diffusion_zero3_2 PROPERTIES TIMEOUT 180)

# `lrhost show`'s memory plan equals what training measures (exact bytes), for ZeRO-3, ZeRO-2,
# hybrid and DDP (fsdp_plan_memory.sh), plus the plan's refusals.
set(TINY_ACT policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1
    eval_batches=1)
foreach(case "zero3;2;act_fsdp.lua" "zero2;3;act_fsdp.lua;accelerator.fsdp.reshard_after_forward=false"
              "hybrid;4;examples/act_hybrid.lua" "ddp;2;act_ddp.lua")
  list(POP_FRONT case name nproc recipe)
  add_test(NAME dist.fsdp_plan_memory_${name}
           COMMAND bash ${D}/fsdp_plan_memory.sh $<TARGET_FILE:lrhost> ${LRHOST_DIST_RUNS}/fsdp_plan_${name} ${nproc}
                   ${PROJECT_SOURCE_DIR}/recipes/${recipe} ${TINY_ACT} ${case})
  set_tests_properties(dist.fsdp_plan_memory_${name} PROPERTIES LABELS dist TIMEOUT 180
                       ENVIRONMENT "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
endforeach()
lrhost_dist_case(fsdp_plan_bad_sizes --exit 1 --max-seconds 30
  --match "dp_shard \\(2\\) x dp_replicate \\(1\\) must equal the number of ranks \\(3\\)"
  -- show ${PROJECT_SOURCE_DIR}/recipes/act_fsdp.lua --nproc 3 parallelism.dp_shard=2)
lrhost_dist_case(fsdp_plan_unknown_unit --exit 1 --max-seconds 30
  --match "'Nope' matches no module of policy 'act'" --match "its module types are: .*ACTEncoderLayer"
  -- show ${PROJECT_SOURCE_DIR}/recipes/act_fsdp.lua --nproc 2 accelerator.fsdp.wrap_modules=Nope)
# GR00T N1.7 (tiny, lrhost/groot_tiny): the Qwen3-VL vision blocks and text layers and the vl_self_attention
# and DiT blocks are units; the frozen backbone is sharded too (no gradients, no optimizer state). Eval mode
# with the flow-matching draws in the batch, so FSDP, DDP and one process see the same inputs.
lrhost_dist_case(fsdp_groot_zero3_2 --match "fsdp equivalence ok: groot, fsdp zero-3 .* 2 ranks x 2 rows x 1 accum, 2 steps, 14 units"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=groot global_batch=4 steps=2)
lrhost_dist_case(fsdp_groot_zero2_2_checkpointing --match "fsdp equivalence ok: groot, fsdp zero-2 .* 2 ranks x 2 rows x 1 accum"
  -- --nproc 2 --device cpu --run-dir @RUN@ ${EQ} policy=groot global_batch=4 steps=2 reshard_after_forward=false
     gradient_checkpointing=true)
