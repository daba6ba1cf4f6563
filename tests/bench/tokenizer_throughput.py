"""Tokenizer throughput on one core: `lrhost tokenize --bench` vs Hugging Face `tokenizers` (Rust, single
thread), same SmolVLM2-style tokenizer (trained offline, as in tests/interop/tokenizer_interop.py) and the same
corpus, no truncation or padding. Prints tokens/s with the commands. Run by `scripts/bench tokenizer`.

    tokenizer_throughput.py LRHOST_EXE [--passes N]
"""

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ["TOKENIZERS_PARALLELISM"] = "false"  # single thread for encode_batch too
os.environ["RAYON_NUM_THREADS"] = "1"
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "interop"))
import tokenizer_interop  # noqa: E402  (the offline SmolVLM2-style tokenizer and the corpus)
from tokenizers import Tokenizer  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lrhost")
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        corpus = tokenizer_interop.build_corpus(random.Random(tokenizer_interop.SEED))
        folder = work / "smolvlm"
        tokenizer_interop.make_smolvlm(folder, corpus[:1500])
        corpus_file = work / "corpus.jsonl"
        corpus_file.write_text("".join(json.dumps(t) + "\n" for t in corpus))

        command = [args.lrhost, "tokenize", str(folder), "--stdin", "--bench", str(args.passes)]
        print("$ " + " ".join(command[:2]) + " <smolvlm-style dir> --stdin --bench " + str(args.passes) +
              f" < corpus ({len(corpus)} strings)")
        with open(corpus_file, "rb") as stdin:
            result = subprocess.run(command, stdin=stdin, capture_output=True, text=True, check=True)
        print(result.stderr.strip().splitlines()[-1])

        raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tokens = sum(len(e.ids) for e in raw.encode_batch(corpus))  # also warms the cache
        print(f"$ python tokenizers {__import__('tokenizers').__version__}: Tokenizer.encode_batch / encode, "
              f"TOKENIZERS_PARALLELISM=false, {args.passes} passes")
        start = time.perf_counter()
        for _ in range(args.passes):
            raw.encode_batch(corpus)
        batch_s = time.perf_counter() - start
        start = time.perf_counter()
        for _ in range(args.passes):
            for text in corpus:
                raw.encode(text)
        single_s = time.perf_counter() - start
        print(f"tokenizers: {len(corpus)} texts, {tokens} tokens per pass; encode_batch {tokens * args.passes / batch_s:.0f} "
              f"tokens/s; encode one by one {tokens * args.passes / single_s:.0f} tokens/s")


if __name__ == "__main__":
    main()
