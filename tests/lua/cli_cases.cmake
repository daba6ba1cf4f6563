# Command-line cases run through the real binary (included by tests/CMakeLists.txt; the working
# directory is tests/lua). Each failure case checks the exit code is non-zero and the message names
# what went wrong.
lrhost_expect_success(version "lrhost [0-9]+\\.[0-9]+\\.[0-9]+.*LibTorch 2\\.[0-9]+.*LuaJIT 2\\.1.*GC64" --version)
# The binary runs on jemalloc keeping freed memory (host/main.cpp's malloc_conf) unless built without it.
if(LRHOST_WITH_JEMALLOC)
  lrhost_expect_success(version_allocator "allocator: jemalloc 5\\.[^\n]*kept for reuse \\(dirty_decay_ms -1\\)" --version)
endif()
lrhost_expect_success(help_run "config overrides" run --help)
lrhost_expect_success(help_show "resolved config" show --help)
lrhost_expect_failure(missing_recipe "recipe file 'no_such_recipe.lua' not found" no_such_recipe.lua)
lrhost_expect_failure(syntax_error "bad_syntax.lua:4:.*near" cases/bad_syntax.lua)
lrhost_expect_failure(runtime_error "runtime_error.lua:6: attempt to perform arithmetic.*stack traceback.*runtime_error.lua:9" cases/runtime_error.lua)
# A missing module: Lua's list of tried files, then lrhost's folders by name and the LRHOST_PATH hint.
lrhost_expect_failure(missing_module
  "module 'team_helpers_not_installed' not found:.*lrhost searches these folders.*/tests/lua/cases  \\(the recipe's folder\\).*recipes/lib  \\(lrhost's recipes/lib\\).*add the folder holding it to LRHOST_PATH"
  cases/missing_module.lua)
lrhost_expect_failure(native_arg_error "config_recipe.lua:12: bad argument #1 to 'lr.zeros' \\(expected shape" cases/config_recipe.lua bad_call=true)
lrhost_expect_failure(unknown_key "unknown config key 'optimizer.lrr'.*did you mean 'optimizer.lr'" cases/config_recipe.lua optimizer.lrr=1)
lrhost_expect_failure(wrong_type "config key 'steps' expects a number \\(default 100\\), got 'many'" cases/config_recipe.lua steps=many)
lrhost_expect_failure(wrong_bool "config key 'bad_call' expects a boolean" cases/config_recipe.lua bad_call=yes)
lrhost_expect_failure(not_key_value "expected a key=value override, got 'steps'" cases/config_recipe.lua steps)
lrhost_expect_failure(overrides_unused "overrides were given but the recipe never called lr.config" cases/no_config.lua steps=3)
lrhost_expect_success(show "\"optimizer\": \\{[^}]*\"lr\": 0\\.5" show cases/config_recipe.lua optimizer.lr=0.5)
lrhost_expect_failure(show_without_config "finished without calling lr.config" show cases/no_config.lua)
lrhost_expect_failure(show_policy_before_config "stops at lr.config.*lr.policy.new" show cases/policy_before_config.lua)
lrhost_expect_failure(unknown_subcommand_option "--bogus" run cases/config_recipe.lua --bogus)
# Launcher flags (tests/dist runs real multi-process jobs).
lrhost_expect_success(help_run_launcher "--nproc.*--gpus.*--device.*--max-restarts.*--run-dir" run --help)
lrhost_expect_success(help_run_overwrite "--run-dir.*--overwrite.*checkpoints" run --help)
lrhost_expect_success(help_resume_overwrite "--overwrite" resume --help)
lrhost_expect_failure(nproc_zero "--nproc expects a positive number of ranks, got 0" --nproc 0 cases/no_config.lua)
lrhost_expect_failure(bad_device "--device: tpu not in \\{auto,cpu,cuda\\}" --device tpu cases/no_config.lua)
lrhost_expect_failure(gpus_and_nproc "--gpus and --nproc were both given" --gpus 1 --nproc 1 cases/no_config.lua)
lrhost_expect_failure(node_rank_out_of_range "--node-rank 3 is not in \\[0, --nnodes 2\\)"
                      --nproc 1 --device cpu --nnodes 2 --node-rank 3 --master-port 29500 cases/no_config.lua)
lrhost_expect_failure(launch_missing_recipe "recipe file 'no_such_recipe.lua' not found" --nproc 2 --device cpu no_such_recipe.lua)
# `show --gpus N` plans for N ranks: the recipe's derive function scales the lr (sqrt rule,
# 3e-3 at batch 32 -> effective batch 128 -> 6e-3) without starting anything.
lrhost_expect_success(show_planned_scaling "\"base_lr\": 0\\.003.*\"lr\": 0\\.006[,\n]" show ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_ddp.lua --gpus 4)
lrhost_expect_success(show_planned_linear "\"lr\": 0\\.024" show ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_ddp.lua --nproc 2 --nnodes 4 scale_lr=linear)
lrhost_expect_failure(show_bad_rule "unknown lr rule 'cubic'" show ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_ddp.lua scale_lr=cubic)
# `lrhost dataset`: bad inputs name the folder or option and what was expected.
lrhost_expect_failure(dataset_info_missing "dataset folder /nonexistent/lrhost_ds does not exist" dataset info /nonexistent/lrhost_ds)
lrhost_expect_failure(dataset_info_not_a_dataset "cannot open .*meta/info.json" dataset info ${CMAKE_CURRENT_SOURCE_DIR})
lrhost_expect_failure(dataset_synth_exists "already exists and is not empty" dataset synth --out ${CMAKE_CURRENT_SOURCE_DIR})
lrhost_expect_failure(dataset_synth_odd_size "--image-size must be an even number >= 16, got 15" dataset synth --out ${CMAKE_CURRENT_BINARY_DIR}/never_written --image-size 15)
lrhost_expect_failure(dataset_no_subcommand "A subcommand is required|subcommand" dataset)
# `lrhost checkpoint info` / `lrhost resume` (tests/dist/resume.sh runs both on real checkpoints).
set(CKPT_FIXTURES ${PROJECT_SOURCE_DIR}/tests/fixtures/checkpoints)
lrhost_expect_success(help_checkpoint "info" checkpoint --help)
lrhost_expect_success(help_resume "recipe copy.*--nproc" resume --help)
lrhost_expect_failure(checkpoint_without_subcommand "A subcommand is required" checkpoint)
lrhost_expect_failure(checkpoint_info_missing "no_such_dir: no such folder" checkpoint info no_such_dir)
lrhost_expect_failure(checkpoint_info_not_checkpoint "cases is not a checkpoint folder.*hint: give an output dir" checkpoint info cases)
lrhost_expect_failure(checkpoint_info_corrupt_config "000001  damaged: .*corrupt_config/checkpoints/000001/pretrained_model/config.json: not valid JSON"
                      checkpoint info ${CKPT_FIXTURES}/corrupt_config)
lrhost_expect_failure(checkpoint_info_only_interrupted "holds no complete checkpoint.*\\.tmp-000005-1234  interrupted save"
                      checkpoint info ${CKPT_FIXTURES}/only_interrupted)
lrhost_expect_failure(resume_missing "no_such_dir: no such folder" resume no_such_dir)
lrhost_expect_failure(resume_only_interrupted "holds no complete checkpoint \\(only incomplete ones\\)"
                      resume ${CKPT_FIXTURES}/only_interrupted)
# A damaged checkpoint: named with its file when given explicitly; a run folder of only damaged ones too.
lrhost_expect_failure(resume_damaged_step "000001 is damaged: .*000001/pretrained_model/config.json: not valid JSON"
                      resume ${CKPT_FIXTURES}/corrupt_config/checkpoints/000001)
lrhost_expect_failure(resume_only_damaged "every complete checkpoint is damaged .*config.json: not valid JSON"
                      resume ${CKPT_FIXTURES}/corrupt_config)
# A diverged run never passes as success: ACT (tiny, one process) with an absurd lr stops at the
# first non-finite step with an error naming the step, the metric and the last good checkpoint
# (saved every step, so the previous one), and exits non-zero.
lrhost_expect_failure(act_ddp_diverges
  "training diverged at step [2-9]: the (loss|gradient norm) is [-a-z]+.* The update was not applied; last good checkpoint: [^ ]*/checkpoints/00000[1-8]"
  ${PROJECT_SOURCE_DIR}/recipes/act_ddp.lua --device cpu steps=8 save_freq=1 log_freq=1 policy.optimizer_lr=1e12
  output_dir=${CMAKE_CURRENT_BINARY_DIR}/runs/fail.act_ddp_diverges/out policy.dim_model=64 policy.dim_feedforward=128
  policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1 eval_batches=2)
set_property(TEST lua.fail.act_ddp_diverges APPEND PROPERTY ENVIRONMENT
             "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
# `lrhost dataset verify` on the synthetic dataset and broken copies of it (truncated parquet and mp4,
# a wrong total_frames): each named with its file, all listed when several are broken.
add_test(NAME lua.dataset_verify COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lua/dataset_verify.sh $<TARGET_FILE:lrhost>
                                         ${CMAKE_CURRENT_BINARY_DIR}/runs/dataset_verify)
set_tests_properties(lua.dataset_verify PROPERTIES LABELS lua TIMEOUT 120)
# A plain run that fails before it starts removes the default run folder it claimed; a started one keeps it.
add_test(NAME lua.run_dir_cleanup COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lua/run_dir_cleanup.sh $<TARGET_FILE:lrhost>
                                          ${CMAKE_CURRENT_BINARY_DIR}/runs/run_dir_cleanup ${CMAKE_CURRENT_SOURCE_DIR}/lua/cases)
set_tests_properties(lua.run_dir_cleanup PROPERTIES LABELS lua TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=1")
lrhost_expect_failure(dataset_verify_missing "problem: /nonexistent/lrhost_ds: dataset folder /nonexistent/lrhost_ds does not exist.*; 1 problem"
                      dataset verify /nonexistent/lrhost_ds)
# steps must be >= 1, whatever the recipe's default.
lrhost_expect_failure(steps_zero "config key 'steps' must be a whole number >= 1, got 0"
                      ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_regression.lua steps=0)
lrhost_expect_failure(steps_negative "config key 'steps' must be a whole number >= 1, got -5"
                      ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_regression.lua steps=-5)
lrhost_expect_failure(show_steps_zero "config key 'steps' must be a whole number >= 1, got 0"
                      show ${PROJECT_SOURCE_DIR}/recipes/examples/mlp_regression.lua steps=0)
# "did you mean" looks at leaf names too: ACT's learning rate lives at policy.optimizer_lr.
lrhost_expect_failure(unknown_key_leaf "unknown config key 'optimizer.lr'.*did you mean 'policy.optimizer_lr'"
                      show ${PROJECT_SOURCE_DIR}/recipes/act_ddp.lua optimizer.lr=1)
# `show --json`: stdout is one JSON document with the config and the memory plan (DDP and FSDP).
set(SHOW_TINY_ACT policy.dim_model=64 policy.dim_feedforward=128 policy.n_encoder_layers=1 policy.n_vae_encoder_layers=1)
foreach(case "ddp;ddp;act_ddp.lua" "fsdp;fsdp zero-3;act_fsdp.lua")
  list(POP_FRONT case name strategy recipe)
  add_test(NAME lua.show_json_${name}
           COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lua/show_json.sh $<TARGET_FILE:lrhost>
                   ${CMAKE_CURRENT_BINARY_DIR}/runs/show_json_${name} ${strategy} ${PROJECT_SOURCE_DIR}/recipes/${recipe}
                   --nproc 2 ${SHOW_TINY_ACT})
  set_tests_properties(lua.show_json_${name} PROPERTIES LABELS lua TIMEOUT 180
                       ENVIRONMENT "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
endforeach()
# pi05 planned at LeRobot's full size from a config.json-only folder, without building it.
add_test(NAME lua.show_pi05_full_size
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lua/show_pi_full_size.sh $<TARGET_FILE:lrhost>
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/show_pi05_full_size ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
                 ${PROJECT_SOURCE_DIR}/recipes)
set_tests_properties(lua.show_pi05_full_size PROPERTIES LABELS lua TIMEOUT 600
                     ENVIRONMENT "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
# GR00T N1.7 planned at LeRobot's full size from a config.json-only base folder, without building it.
add_test(NAME lua.show_groot_full_size
         COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/lua/show_groot_full_size.sh $<TARGET_FILE:lrhost>
                 ${CMAKE_CURRENT_BINARY_DIR}/runs/show_groot_full_size ${CMAKE_CURRENT_SOURCE_DIR}/fixtures
                 ${PROJECT_SOURCE_DIR}/recipes)
set_tests_properties(lua.show_groot_full_size PROPERTIES LABELS lua TIMEOUT 300
                     ENVIRONMENT "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
# Number options say what they expect (not CLI11's "Value 0 not in range 0.000000 to 1.79e308").
lrhost_expect_failure(show_gpus_zero "--gpus: expected a number greater than 0, got '0'" show cases/config_recipe.lua --gpus 0)
# `lrhost tokenize`: bad folders and options name what was expected (the ids themselves are checked
# against Hugging Face tokenizers by interop.tokenizer).
lrhost_expect_failure(tokenize_missing_dir "tokenizer folder /nonexistent/lrhost_tok does not exist" tokenize /nonexistent/lrhost_tok hello)
lrhost_expect_failure(tokenize_no_tokenizer_json "tokenizer.json not found" tokenize ${CMAKE_CURRENT_SOURCE_DIR} hello)
lrhost_expect_failure(tokenize_max_length_zero "--max-length: expected a number greater than 0, got '0'" tokenize ${CMAKE_CURRENT_SOURCE_DIR} --max-length 0 hello)
# `lrhost plot`: each bad input names the path or option and what was expected (the drawing itself is
# checked by unit.test_cli_plot, which decodes the PNG).
set(PLOT_RUNS ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/metrics)
lrhost_expect_failure(plot_missing_dir "run folder /nonexistent/lrhost_run does not exist" plot /nonexistent/lrhost_run)
lrhost_expect_failure(plot_no_metrics_file "fixtures/metrics.jsonl not found.*write metrics.jsonl .* since lrhost 0.1.0"
                      plot ${CMAKE_CURRENT_SOURCE_DIR}/fixtures)
lrhost_expect_failure(plot_empty_file "empty/metrics.jsonl has no data lines" plot ${PLOT_RUNS}/empty)
lrhost_expect_failure(plot_bad_middle_line "bad_middle/metrics.jsonl:2: not valid JSON" plot ${PLOT_RUNS}/bad_middle)
lrhost_expect_failure(plot_unknown_metric
                      "no run has a metric named 'nope'.*metrics in these runs: elapsed_s, eval/success_rate, l1_loss, loss, lr, time"
                      plot ${PLOT_RUNS}/run_a ${PLOT_RUNS}/run_b --metrics loss,nope)
lrhost_expect_failure(plot_width_zero "--width: expected a number greater than 0, got '0'" plot ${PLOT_RUNS}/run_a --width 0)
lrhost_expect_failure(plot_height_huge "--height: expected a number of pixels from 100 to 16384, got 100000"
                      plot ${PLOT_RUNS}/run_a --height 100000)
lrhost_expect_failure(plot_out_uncreatable_folder "cannot write the plot to /proc/lrhost_plot/x.png: cannot create folder /proc/lrhost_plot: "
                      plot ${PLOT_RUNS}/run_a --out /proc/lrhost_plot/x.png)
lrhost_expect_failure(plot_out_unwritable "cannot write the plot to /proc/lrhost_plot.png: "
                      plot ${PLOT_RUNS}/run_a --out /proc/lrhost_plot.png)
lrhost_expect_failure(plot_no_gnuplot "gnuplot not found on PATH.*sudo apt-get install gnuplot-nox"
                      plot ${PLOT_RUNS}/run_a --out ${CMAKE_CURRENT_BINARY_DIR}/runs/plot_no_gnuplot.png)
set_property(TEST lua.fail.plot_no_gnuplot APPEND PROPERTY ENVIRONMENT "PATH=/nonexistent")
lrhost_expect_failure(plot_gnuplot_fails "gnuplot \\(.*failing_gnuplot/gnuplot\\) failed with exit code 1; its output:\nfake gnuplot: line 1: unknown terminal type"
                      plot ${PLOT_RUNS}/run_a --out ${CMAKE_CURRENT_BINARY_DIR}/runs/plot_gnuplot_fails.png)
set_property(TEST lua.fail.plot_gnuplot_fails APPEND PROPERTY ENVIRONMENT "PATH=${PLOT_RUNS}/failing_gnuplot")
# Two runs (the second with a half-written last line), every default, through the real binary: prints the path.
file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/runs)
lrhost_expect_success(plot_two_runs "^[^\n]*runs/plot_two_runs.png\n$"
                      plot ${PLOT_RUNS}/run_a ${PLOT_RUNS}/run_b --out ${CMAKE_CURRENT_BINARY_DIR}/runs/plot_two_runs.png)
# --out in folders that do not exist yet creates them (removed first, so the test sees a fresh path).
set(PLOT_NEW_FOLDER ${CMAKE_CURRENT_BINARY_DIR}/runs/plot_new_folder)
add_test(NAME lua.ok.plot_new_folder.clean COMMAND ${CMAKE_COMMAND} -E rm -rf ${PLOT_NEW_FOLDER})
set_tests_properties(lua.ok.plot_new_folder.clean PROPERTIES LABELS lua FIXTURES_SETUP plot_new_folder)
lrhost_expect_success(plot_new_folder "^[^\n]*runs/plot_new_folder/figures/x.png\n$"
                      plot ${PLOT_RUNS}/run_a --out ${PLOT_NEW_FOLDER}/figures/x.png)
set_tests_properties(lua.ok.plot_new_folder PROPERTIES FIXTURES_REQUIRED plot_new_folder)
# `lrhost eval`: bad arguments name the option or folder (the evaluation itself: dist.closed_loop_eval).
lrhost_expect_failure(eval_no_checkpoint "checkpoint is required" eval)
lrhost_expect_failure(eval_episodes_zero "--episodes: expected a number greater than 0, got '0'" eval ${CMAKE_CURRENT_SOURCE_DIR} --episodes 0)
lrhost_expect_failure(eval_videos_negative "--videos: expected a number of 0 or more, got '-1'" eval ${CMAKE_CURRENT_SOURCE_DIR} --videos -1)
lrhost_expect_failure(eval_not_a_checkpoint "checkpoint=.*/tests: not a run folder, checkpoint step folder or pretrained folder"
                      eval ${CMAKE_CURRENT_SOURCE_DIR} --run-dir ${CMAKE_CURRENT_BINARY_DIR}/runs/eval_not_a_checkpoint)
lrhost_expect_success(help_eval "--episodes.*--videos.*--max-steps.*--nproc" eval --help)
# SmolVLA: `show` plans the small recipe model with its schedule shrunk as LeRobot does for runs
# shorter than scheduler_decay_steps; pretrained folders and VLMs named by hub id come from the local
# Hugging Face cache only, and a missing one names the id and the download command.
lrhost_expect_success(show_smolvla_schedule
  "lr schedule: cosine_decay_with_warmup: warmup 3 steps, cosine decay over 1000 steps to 0.025 x lr \\(steps = 1000 < decay_steps = 30000: warmup 100 -> 3, decay 30000 -> 1000"
  show ${PROJECT_SOURCE_DIR}/recipes/smolvla.lua steps=1000)
lrhost_expect_failure(show_smolvla_pretrained_not_cached
  "nobody/no_such_policy.*hf download nobody/no_such_policy"
  show ${PROJECT_SOURCE_DIR}/recipes/smolvla.lua policy.pretrained_path=nobody/no_such_policy)
lrhost_expect_failure(show_smolvla_vlm_not_cached
  "policy.vlm_model_name.*nobody/no_such_vlm.*hf download nobody/no_such_vlm"
  show ${PROJECT_SOURCE_DIR}/recipes/smolvla.lua policy.vlm_model_name=nobody/no_such_vlm)
# `lrhost lerobot-train` (tests/lua/lerobot_train.sh runs it end to end): its table, and a refusal.
lrhost_expect_success(lerobot_train_help "--policy.path .*--dataset.repo_id .*--num_processes .*--mixed_precision" lerobot-train --help)
lrhost_expect_failure(lerobot_train_push_to_hub "--policy.push_to_hub=true cannot be honoured: true is refused: lrhost never uploads"
                      lerobot-train --policy.type=act --policy.push_to_hub=true)
lrhost_expect_failure(lerobot_style_flag_on_recipe "hint: lrhost takes config overrides as key=value, without dashes: batch_size=4"
                      cases/config_recipe.lua --batch_size=4)
# `show` takes run's --device (and --nproc/--gpus) so that a run's command line can be shown as it is;
# a subcommand that launches nothing names the launch option it refused, not a lerobot-train flag.
lrhost_expect_success(show_run_flags "\"optimizer\"" show cases/config_recipe.lua --nproc 2 --device cpu)
lrhost_expect_failure(launch_flag_on_dataset "hint: --device is a launch option of `lrhost run`, `resume` and `eval`, not of this subcommand"
                      dataset info cases --device cpu)
# A recipe's policy table is one type's: policy.type=act on the pi05 recipe says so and names act's recipe.
lrhost_expect_failure(recipe_policy_type_changed
  "policy.type=act: .*recipes/pi05.lua is a 'pi05' recipe .*policy.type cannot change here.*hint: recipes/act_ddp.lua trains 'act'"
  show ${PROJECT_SOURCE_DIR}/recipes/pi05.lua policy.type=act)
# accelerate's --multi_gpu alone means every visible GPU; with none visible it is refused.
lrhost_expect_failure(lerobot_train_multi_gpu_without_gpu "--multi_gpu without --num_processes uses every GPU, and none is visible"
                      lerobot-train --multi_gpu --policy.type=act --dry-run)
set_property(TEST lua.fail.lerobot_train_multi_gpu_without_gpu APPEND PROPERTY ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
# policy.dtype=bfloat16 on a recipe without accelerator.mixed_precision=bf16 trains bf16 weights
# without autocast, unlike lerobot-train: the startup line says so (the tiny pi05, one step, CPU).
lrhost_expect_success(pi05_bf16_weights_without_autocast
  "warning\\] precision: policy weights bfloat16[^\n]*, accelerator\\.mixed_precision=no: forward and backward run in [^\n]* without autocast; LeRobot's lerobot-train adds bf16 autocast"
  ${PROJECT_SOURCE_DIR}/recipes/pi05.lua --device cpu steps=1 batch_size=2 num_workers=1 policy.dtype=bfloat16
  eval_episodes=0 save_checkpoint=false)
set_property(TEST lua.ok.pi05_bf16_weights_without_autocast APPEND PROPERTY ENVIRONMENT
             "OMP_NUM_THREADS=1;LRHOST_CACHE=${CMAKE_BINARY_DIR}/cache")
