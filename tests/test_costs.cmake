# CTest starts the costliest tests first when it knows their cost, so that `ctest -j 2` does not end
# with one long test running alone. A fresh clone has no timing history
# (Testing/Temporary/CTestCostData.txt, which later runs write and prefer), so the tests that take 8 s
# or more are named here with their seconds on 2 cores (docs/development.md, "Test time").
# Included at the end of every CMakeLists.txt that adds tests: a directory sets properties of its
# own tests only.
set(_lrhost_test_costs
  interop.smolvla_keys=47
  dist.bit_flips_100=146
  lua.show_pi05_full_size=64
  lua.empty_features=36
  interop.quantile_stats=29
  dist.sharded_load_pi05=29
  lua.guide_commands=25
  lua.mixture_train=25
  lua.shipped_losses=32
  unit.test_policy_diffusion=24
  unit.test_policy_training_flops=15
  unit.test_policy_smolvla=14
  interop.pi0_from_lerobot=24
  interop.pi05_from_lerobot=24
  interop.pi0_bf16=24
  interop.pi05_bf16=24
  dist.fsdp_resume_pi05_2_to_3=12
  dist.closed_loop_eval=36
  interop.lerobot_writes_lrhost_reads=29
  interop.mixture_merge=38
  interop.pi_processors=25
  interop.smolvla_to_lerobot=27
  interop.smolvla_from_lerobot=27
  interop.policy_diffusion_to_lerobot=24
  interop.policy_diffusion_from_lerobot=23
  lua.lerobot_train=34
  interop.policy_act_from_lerobot=18
  interop.vlm_decoder=17
  interop.stats_match=17
  dist.root_cause_rank2_of_3=17
  dist.root_cause_rank1_of_2=17
  dist.fsdp_resume_4_to_4=16
  dist.fsdp_act_hybrid_2x2=16
  interop.policy_keys=15
  interop.lerobot_run_resume=15
  unit.test_policy_act=14
  interop.policy_act_to_lerobot=14
  dist.run_folder_lock=14
  dist.run_folder_output_lock=15
  lua.eval_holdout=8
  dist.root_cause_rank0_of_2=14
  dist.kill_chain=14
  dist.fsdp_resume_4_to_2=14
  dist.fsdp_resume_smolvla_3_to_2=13
  dist.fsdp_diffusion_zero3_2=13
  interop.tokenizer=12
  interop.tokenizer_gemma=8
  dist.fsdp_resume_smolvla_2_to_3=12
  dist.fsdp_act_zero3_2=12
  dist.fsdp_act_zero2_2_accum_clip=12
  interop.lrhost_writes_lerobot_reads=11
  dist.restart_resume_two_ranks=11
  interop.vlm_vision=10
  interop.sampler_order=10
  dist.fsdp_resume_2_to_3=10
  dist.restart_resume_single_process=9
  dist.recipe_diffusion_ddp=9
  dist.recipe_act_hybrid=9
  dist.recipe_act_ddp=9
)
foreach(_entry ${_lrhost_test_costs})
  string(REPLACE "=" ";" _pair "${_entry}")
  list(GET _pair 0 _name)
  list(GET _pair 1 _seconds)
  if(TEST ${_name})
    set_tests_properties(${_name} PROPERTIES COST ${_seconds})
  endif()
endforeach()
