#!/usr/bin/env python3
"""Write many numeric-only LeRobot v3.0 datasets for the mixture scale benchmark (mixture_open.lua).

Each dataset has observation.state float32[14], action float32[14] and the five index columns
(timestamp, frame_index, episode_index, index, task_index); no cameras. The layout copies what
`lrhost dataset synth` writes: meta/info.json, meta/episodes/chunk-000/file-000.parquet (episode_index,
tasks, length, data/chunk_index, data/file_index, dataset_from_index, dataset_to_index,
meta/episodes/chunk_index, meta/episodes/file_index; no per-episode stats columns), meta/tasks.parquet,
meta/stats.json and one data file data/chunk-000/file-000.parquet with a row group per episode.
Written with pyarrow directly (no LeRobot), so 10^7 frames take about a minute.

    python tests/bench/make_mixture_datasets.py OUT --datasets 100 --frames-per-dataset 100000 --episode-length 500
    -> OUT/ds000 .. OUT/ds099; check one with `lrhost dataset verify OUT/ds000`
"""
import argparse
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

DIM = 14
FPS = 30
TASKS = ["move the arm to the left target", "move the arm to the right target"]
QUANTILES = (0.01, 0.10, 0.50, 0.90, 0.99)


def vector_type(dim):
    return pa.list_(pa.float32(), dim)


def feature_stats(values):
    """LeRobot's stats.json entry for an [N, D] array (D = 1 for the index columns)."""
    values = np.asarray(values, dtype=np.float64).reshape(len(values), -1)
    entry = {"min": values.min(0).tolist(), "max": values.max(0).tolist(), "mean": values.mean(0).tolist(),
             "std": values.std(0).tolist(), "count": [int(len(values))]}
    for q, row in zip(QUANTILES, np.quantile(values, QUANTILES, axis=0)):
        entry["q%02d" % round(q * 100)] = row.tolist()
    return entry


def info_json(episodes, frames):
    vector = lambda name: {"dtype": "float32", "shape": [DIM], "names": ["%s_%d" % (name, i) for i in range(DIM)]}
    scalar = lambda dtype: {"dtype": dtype, "shape": [1], "names": None}
    return {
        "codebase_version": "v3.0", "robot_type": "lrhost_mixture_bench",
        "total_episodes": episodes, "total_frames": frames, "total_tasks": len(TASKS),
        "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": FPS,
        "splits": {"train": "0:%d" % episodes},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": None,
        "features": {"observation.state": vector("joint"), "action": vector("joint"),
                     "timestamp": scalar("float32"), "frame_index": scalar("int64"),
                     "episode_index": scalar("int64"), "index": scalar("int64"), "task_index": scalar("int64")},
    }


def hf_schema_metadata():
    seq = {"feature": {"dtype": "float32", "_type": "Value"}, "length": DIM, "_type": "Sequence"}
    value = lambda dtype: {"dtype": dtype, "_type": "Value"}
    features = {"observation.state": seq, "action": seq, "timestamp": value("float32"),
                "frame_index": value("int64"), "episode_index": value("int64"), "index": value("int64"),
                "task_index": value("int64")}
    return {b"huggingface": json.dumps({"info": {"features": features}}).encode()}


def write_dataset(root, frames, episode_length, seed):
    rng = np.random.default_rng(seed)
    lengths = [episode_length] * (frames // episode_length)
    if frames % episode_length:
        lengths.append(frames % episode_length)
    episodes = len(lengths)
    from_index = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    episode_index = np.repeat(np.arange(episodes, dtype=np.int64), lengths)
    frame_index = np.arange(frames, dtype=np.int64) - from_index[episode_index]
    task_of_episode = np.arange(episodes, dtype=np.int64) % len(TASKS)
    task_index = task_of_episode[episode_index]
    # A smooth random walk, like joint positions; the action is the state plus noise.
    state = np.cumsum(rng.normal(0.0, 0.01, size=(frames, DIM)).astype(np.float32), axis=0)
    action = state + rng.normal(0.0, 0.01, size=(frames, DIM)).astype(np.float32)
    timestamp = (frame_index / FPS).astype(np.float32)
    index = np.arange(frames, dtype=np.int64)

    for sub in ("data/chunk-000", "meta/episodes/chunk-000"):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    schema = pa.schema([("observation.state", vector_type(DIM)), ("action", vector_type(DIM)),
                        ("timestamp", pa.float32()), ("frame_index", pa.int64()), ("episode_index", pa.int64()),
                        ("index", pa.int64()), ("task_index", pa.int64())], metadata=hf_schema_metadata())
    flat = lambda a: pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), DIM)
    data = pa.table([flat(state), flat(action), pa.array(timestamp), pa.array(frame_index),
                     pa.array(episode_index), pa.array(index), pa.array(task_index)], schema=schema)
    pq.write_table(data, os.path.join(root, "data/chunk-000/file-000.parquet"), row_group_size=episode_length)

    zeros = pa.array(np.zeros(episodes, dtype=np.int64))
    episodes_table = pa.table({
        "episode_index": pa.array(np.arange(episodes, dtype=np.int64)),
        "tasks": pa.array([[TASKS[t]] for t in task_of_episode], type=pa.list_(pa.string())),
        "length": pa.array(np.asarray(lengths, dtype=np.int64)),
        "data/chunk_index": zeros, "data/file_index": zeros,
        "dataset_from_index": pa.array(from_index),
        "dataset_to_index": pa.array(from_index + np.asarray(lengths, dtype=np.int64)),
        "meta/episodes/chunk_index": zeros, "meta/episodes/file_index": zeros,
    })
    pq.write_table(episodes_table, os.path.join(root, "meta/episodes/chunk-000/file-000.parquet"))
    pq.write_table(pa.table({"task_index": pa.array(np.arange(len(TASKS), dtype=np.int64)), "task": pa.array(TASKS)}),
                   os.path.join(root, "meta/tasks.parquet"))

    stats = {"observation.state": feature_stats(state), "action": feature_stats(action),
             "timestamp": feature_stats(timestamp), "frame_index": feature_stats(frame_index),
             "episode_index": feature_stats(episode_index), "index": feature_stats(index),
             "task_index": feature_stats(task_index)}
    with open(os.path.join(root, "meta/stats.json"), "w") as f:
        json.dump(stats, f, indent=4)
    info = info_json(episodes, frames)
    del info["video_path"]
    with open(os.path.join(root, "meta/info.json"), "w") as f:
        json.dump(info, f, indent=4)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out")
    parser.add_argument("--datasets", type=int, default=100)
    parser.add_argument("--frames-per-dataset", type=int, default=100000)
    parser.add_argument("--episode-length", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    for i in range(args.datasets):
        write_dataset(os.path.join(args.out, "ds%03d" % i), args.frames_per_dataset, args.episode_length, args.seed + i)
    print("wrote %d datasets x %d frames (episodes of %d) to %s"
          % (args.datasets, args.frames_per_dataset, args.episode_length, args.out))


if __name__ == "__main__":
    main()
