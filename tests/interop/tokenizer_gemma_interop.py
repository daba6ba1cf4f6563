"""Checks `lrhost tokenize` on Gemma-style tokenizers (BPE with byte fallback, PaliGemma's pipeline) against Hugging
Face `tokenizers` (tokenizer.json as it is) and transformers' AutoTokenizer -> GemmaTokenizer called as LeRobot calls
it for PI0 (max_length 48 and 200, truncation, padding="max_length", padding_side="right"). The tokenizers are trained
offline on a small generated corpus with a limited alphabet, so many code points of the test strings are not in the
vocabulary and take the <0xXX> byte fallback. Exits 1 on any mismatch.

    tokenizer_gemma_interop.py LRHOST_EXE WORK_DIR
"""

import json
import random
import shutil
import sys
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, trainers
from transformers import AutoTokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_interop  # noqa: E402  (the shared corpus and the comparison helpers)

SEED = 4321
GEMMA_SPECIALS = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]  # ids 0..4, as in Gemma
LOC_TOKENS = [f"<loc{i:04d}>" for i in range(16)] + [f"<seg{i:03d}>" for i in range(4)]


def gemma_corpus(rng):
    """The shared corpus plus what matters for Gemma: added-token text, '▁' and byte-token look-alikes in the
    text, runs of spaces, digits, underscores, long prompts (truncation at 48 and 200)."""
    corpus = tokenizer_interop.build_corpus(random.Random(tokenizer_interop.SEED))
    pieces = ["<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "<loc0001>", "<loc0015>", "<seg002>", "<image>", "<bos",
              "eos>", "<<bos>>", "<0x41>", "<0xC3>", "▁", "▁▁", "_", "__", "snake_case_name", " ", "  ", "    ", "\t\t",
              "\n", "\r", "0", "12", "3.14159", "1000000", "café", "Ωmega", "日本語", "🤖", "👍🏽", "\u2581pick",
              "pick up", "the red cube", "put it in the box", "zß", "ﬁ", "\u0000", "\x7f", "é", "ü", "ñ"]
    extra = ["", " ", "  leading", "trailing  ", "<bos>pick<eos> up\n", "pick up\n", "<bos><bos>", "<pad><pad> x"]
    for _ in range(600):
        n = rng.randint(1, 10)
        extra.append("".join(rng.choice(pieces) + rng.choice(["", " ", "  ", "\t", "\n", "_"]) for _ in range(n)))
    for _ in range(100):
        extra.append(" ".join(rng.choice(pieces) for _ in range(rng.randint(60, 260))))
    return corpus + extra


def make_gemma(folder, training, vocab_size, config_flags, file_post_processor=True, missing_bytes=()):
    """A GemmaTokenizer folder: specials at 0..4, the 256 <0xXX> byte pieces as ordinary vocabulary entries right
    after them (as in Gemma's vocabulary), then the trained pieces; <loc>/<seg> and a non-special normalized token
    as added tokens."""
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    tokenizer.normalizer = normalizers.Replace(" ", "▁")
    tokenizer.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse()])
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=GEMMA_SPECIALS, limit_alphabet=70,
                                  show_progress=False)
    tokenizer.train_from_iterator(training, trainer)
    data = json.loads(tokenizer.to_str())
    trained = sorted(data["model"]["vocab"].items(), key=lambda item: item[1])
    vocab = {token: i for i, token in enumerate(GEMMA_SPECIALS)}
    for byte in range(256):
        if byte not in missing_bytes:  # without its byte piece a character falls back to <unk>
            vocab[f"<0x{byte:02X}>"] = len(vocab)
    for token, _ in trained:
        vocab.setdefault(token, len(vocab))
    data["model"]["vocab"] = vocab
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in GEMMA_SPECIALS]
    for token in LOC_TOKENS:
        vocab[token] = len(vocab)
        added.append({"id": vocab[token], "content": token, "single_word": False, "lstrip": False, "rstrip": False,
                      "normalized": False, "special": True})
    data["added_tokens"] = added
    if file_post_processor:
        data["post_processor"] = {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"SpecialToken": {"id": "<bos>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [2], "tokens": ["<bos>"]}}}
    folder.mkdir(parents=True)
    (folder / "tokenizer.json").write_text(json.dumps(data, ensure_ascii=False))
    config = {"tokenizer_class": "GemmaTokenizer", "bos_token": "<bos>", "eos_token": "<eos>", "pad_token": "<pad>",
              "unk_token": "<unk>", "model_max_length": 1000000000000000019884624838656, **config_flags}
    (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return len(vocab)


def check_gemma_folder(lrhost, folder, corpus, corpus_file):
    failures = 0
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    raw_ids = [e.ids for e in raw.encode_batch(corpus, add_special_tokens=True)]
    failures += tokenizer_interop.compare(f"{folder.name}: tokenizers (tokenizer.json as is) vs --pipeline file", corpus,
                                          raw_ids, None,
                                          tokenizer_interop.run_lrhost(lrhost, folder, corpus_file, "--pipeline",
                                                                       "file"))
    auto = AutoTokenizer.from_pretrained(str(folder))
    assert type(auto).__name__ == "GemmaTokenizer", type(auto).__name__
    for max_length in (48, 200):
        # LeRobot's call for PI0 (TokenizerProcessorStep): truncation, padding to max_length, right padding.
        batch = auto(corpus, max_length=max_length, truncation=True, padding="max_length", padding_side="right")
        failures += tokenizer_interop.compare(
            f"{folder.name}: AutoTokenizer ({type(auto).__name__}) max_length {max_length} vs lrhost", corpus,
            batch["input_ids"], batch["attention_mask"],
            tokenizer_interop.run_lrhost(lrhost, folder, corpus_file, "--max-length", str(max_length), "--padding",
                                         "max_length", "--padding-side", "right"))
    byte_ids = {raw.token_to_id(f"<0x{b:02X}>") for b in range(256)} - {None}
    fallback = sum(any(i in byte_ids for i in ids) for ids in raw_ids)
    unk = sum(3 in ids for ids in raw_ids)
    print(f"     {folder.name}: {fallback} strings use byte-fallback tokens, {unk} contain <unk>")
    if "partial" in folder.name and unk < 50:
        print(f"FAIL {folder.name}: too few strings exercise <unk>")
        failures += 1
    if fallback < 200:
        print(f"FAIL {folder.name}: too few strings exercise the byte fallback")
        failures += 1
    return failures


def main():
    lrhost, work = sys.argv[1], Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = gemma_corpus(random.Random(SEED))
    corpus_file = work / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(t) + "\n" for t in corpus))
    training = corpus[:1500]
    failures = 0
    # PaliGemma-like: add_bos_token given (transformers rebuilds "<bos> $A"), the file's template as well.
    make_gemma(work / "gemma_add_bos", training, 1200, {"add_bos_token": True, "add_eos_token": False})
    # No flags in the config: transformers keeps the file's post-processor; default padding side of the class.
    make_gemma(work / "gemma_file_template", training, 900, {})
    # Lead bytes of 4-byte sequences missing: emoji fall back to <unk>, runs of them fused into one.
    make_gemma(work / "gemma_partial_bytes", training, 900, {"add_bos_token": True}, missing_bytes=range(0xF0, 0xF5))
    for folder in ("gemma_add_bos", "gemma_file_template", "gemma_partial_bytes"):
        failures += check_gemma_folder(lrhost, work / folder, corpus, corpus_file)
    print(f"tokenizer gemma interop: {len(corpus)} strings per case, {failures} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
