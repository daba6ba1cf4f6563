"""Gemma-style tokenizer throughput on one core: `lrhost tokenize --bench` vs Hugging Face `tokenizers` (Rust, single
thread) on the same PaliGemma-sized tokenizer and the same corpus, no truncation or padding (<bos> added).

The tokenizer is built offline: a byte-fallback BPE trained with `tokenizers` on the generated corpus of
tests/interop/tokenizer_gemma_interop.py (8,000 pieces, limited alphabet), extended with synthetic merges of existing
pieces up to 256,000 model entries, plus 1,024 <locNNNN> and 128 <segNNN> added tokens: 257,152 ids, as PaliGemma.
Prints tokens/s with the commands. Run by `scripts/bench tokenizer`.

    tokenizer_gemma_throughput.py LRHOST_EXE [--passes N]
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
import tokenizer_gemma_interop as gemma  # noqa: E402  (the corpus and the Gemma-style folder)
from tokenizers import Tokenizer  # noqa: E402

MODEL_SIZE = 256000
LOC, SEG = 1024, 128


def make_large(folder, corpus):
    """The interop test's Gemma folder, grown to PaliGemma's 257,152 ids."""
    gemma.make_gemma(folder, corpus[:1500], 8000, {"add_bos_token": True, "add_eos_token": False})
    path = folder / "tokenizer.json"
    data = json.loads(path.read_text())
    vocab, merges = data["model"]["vocab"], data["model"]["merges"]
    added = [t for t in data["added_tokens"] if t["content"] in gemma.GEMMA_SPECIALS]
    for t in data["added_tokens"]:  # drop the small <loc>/<seg> set; re-added below at Gemma's ids
        if t["content"] not in gemma.GEMMA_SPECIALS:
            del vocab[t["content"]]
    pieces = [t for t in vocab if not t.startswith("<")]
    rng = random.Random(7)
    while len(vocab) < MODEL_SIZE:
        left, right = rng.choice(pieces), rng.choice(pieces)
        merged = left + right
        if merged in vocab or len(merged) > 24:
            continue
        vocab[merged] = len(vocab)
        merges.append([left, right])
        pieces.append(merged)
    for content in [f"<loc{i:04d}>" for i in range(LOC)] + [f"<seg{i:03d}>" for i in range(SEG)]:
        vocab[content] = len(vocab)
        added.append({"id": vocab[content], "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    data["added_tokens"] = added
    path.write_text(json.dumps(data, ensure_ascii=False))
    return len(vocab), len(merges)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("lrhost")
    parser.add_argument("--passes", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as work:
        work = Path(work)
        corpus = gemma.gemma_corpus(random.Random(gemma.SEED))
        folder = work / "gemma_257k"
        ids, merges = make_large(folder, corpus)
        corpus_file = work / "corpus.jsonl"
        corpus_file.write_text("".join(json.dumps(t) + "\n" for t in corpus))
        print(f"gemma-style tokenizer: {ids} ids, {merges} merges, byte fallback; corpus {len(corpus)} strings")

        command = [args.lrhost, "tokenize", str(folder), "--stdin", "--bench", str(args.passes)]
        print("$ " + " ".join(command[:2]) + " <gemma-257k dir> --stdin --bench " + str(args.passes) +
              f" < corpus ({len(corpus)} strings)")
        with open(corpus_file, "rb") as stdin:
            result = subprocess.run(command, stdin=stdin, capture_output=True, text=True, check=True)
        print(result.stderr.strip().splitlines()[-1])

        raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
        start, cpu_start = time.perf_counter(), time.process_time()
        tokens = sum(len(e.ids) for e in raw.encode_batch(corpus))  # first pass: empty cache
        first_s, first_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
        print(f"$ python tokenizers {__import__('tokenizers').__version__}: Tokenizer.encode_batch / encode, "
              f"TOKENIZERS_PARALLELISM=false, {args.passes} passes")
        # Process CPU time as well (one thread): on a shared machine wall time also counts waiting for a core.
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(args.passes):
            raw.encode_batch(corpus)
        batch_s, batch_cpu_s = time.perf_counter() - start, time.process_time() - cpu_start
        start = time.perf_counter()
        for _ in range(args.passes):
            for text in corpus:
                raw.encode(text)
        single_s = time.perf_counter() - start
        print(f"tokenizers: {len(corpus)} texts, {tokens} tokens per pass; first pass {tokens / first_s:.0f} tokens/s; "
              f"encode_batch {tokens * args.passes / batch_s:.0f} tokens/s; encode one by one "
              f"{tokens * args.passes / single_s:.0f} tokens/s (per second of CPU time: first pass "
              f"{tokens / first_cpu_s:.0f}, encode_batch {tokens * args.passes / batch_cpu_s:.0f})")


if __name__ == "__main__":
    main()
