"""Checks `lrhost tokenize` on Qwen2Tokenizer folders (GR00T N1.7's backbone tokenizer, nvidia/Cosmos-Reason2-2B)
against transformers' AutoTokenizer -> Qwen2Tokenizer, which rebuilds the pipeline in code (NFC, Qwen2's Split
regex, ByteLevel without regex), and against Hugging Face `tokenizers` running tokenizer.json as it is (lrhost
--pipeline file). The tokenizers are built offline as groot_oracle.py's make_hf_cache builds COSMOS's: a byte-level
BPE trained on a small corpus, Qwen2Tokenizer(vocab, merges), the Qwen special tokens as extra special tokens,
save_pretrained. The strings cover contractions in any case, digit runs, punctuation and newline runs, "\\r\\n",
space runs, decomposed accents (NFC must matter), CJK, emoji, the GR00T chat prompt, and a sweep of every code
point and combining mark (tokenizers' NFC uses Unicode 9.0 tables). Exits 1 on any mismatch.

    tokenizer_qwen2_interop.py LRHOST_EXE WORK_DIR
"""

import copy
import json
import random
import shutil
import sys
import unicodedata
from pathlib import Path

from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, Qwen2Tokenizer

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_interop  # noqa: E402  (the shared corpus and the comparison helpers)

SEED = 2718
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>",
            "<|video_pad|>"]
GROOT_PROMPT = ("<|im_start|>user\n<|vision_start|>" + "<|image_pad|>" * 16 + "<|vision_end|>pick up the red cube"
                "<|im_end|>\n<|im_start|>assistant\n")


def qwen_corpus(rng):
    pieces = ["DON'T", "you'Re", "I'M", "it's", "We'LL", "they'D", "'ve", "''s", "o'clock", "12345", "3.14159", "2024",
              "٣٤٥", "１２３", "!!!", "...", "?!\n", ",\n\n", ";\r\n", "\r\n", "\r\r\n", "\n\r", "--\n", "  ", "   word",
              "\t\t", " \n ", "trailing   ", "e\u0301", "E\u0301COLE", "cafe\u0301", "n\u0303", "A\u030a", "\u212b",
              "\u1100\u1161\u11a8", "o\u0308\u0304", "a\u0316\u0301", "机器人抓取红色方块", "ロボット", "로봇", "🤖", "👍🏽",
              "👨‍👩‍👧", "🇫🇷", "Привет", "مرحبا", "नमस्ते", "<|im_start|>", "<|im_end|>", "<|image_pad|>",
              "<|vision_start|>", "<|vision_end|>", "<|endoftext|>", "<|video_pad|>", "<|im_end", "<<|im_end|>>",
              "<|im_start|>\u0301", "pick up the red cube", "place it in the bowl", "user", "assistant"]
    corpus = ["", " ", "\n", "\r\n", "DON'T you'Re", "e\u0301", "\u00e9", "   multiple spaces before", "trailing  ",
              GROOT_PROMPT, GROOT_PROMPT.replace("<|image_pad|>" * 16, "<|video_pad|>" * 4), "a\r\nb\r\n\r\nc",
              "x = 10000000 + 2", "Wait...\n\n\nOK!!\r\n", "<|im_start|>system\nYou are a robot.<|im_end|>\n"]
    for _ in range(800):
        n = rng.randint(1, 10)
        corpus.append("".join(rng.choice(pieces) + rng.choice(["", " ", "  ", "\n", "\r\n", "\t", "."])
                              for _ in range(n)))
    return corpus + tokenizer_interop.build_corpus(random.Random(tokenizer_interop.SEED))


def unicode_sweep():
    """Every code point (in runs of 128) and every combining mark around U+0301: where Unicode 9.0's NFC (the
    tokenizers crate's tables) and a newer one differ."""
    cps = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    out = ["".join(chr(c) for c in cps[i:i + 128]) for i in range(0, len(cps), 128)]
    for mark in (c for c in cps if unicodedata.combining(chr(c))):
        out += ["a" + chr(mark) + "\u0301", "a\u0301" + chr(mark)]
    out += ["\U00011935\U00011930", "\U00011131\U00011127", "\u0d46\u0d3e"]  # compositions of new and old scripts
    return out


def make_qwen2(folder, training, config_flags=None, shift_added=0):
    """A Qwen2Tokenizer folder as make_hf_cache writes COSMOS's; config_flags go into tokenizer_config.json,
    shift_added moves the added tokens' ids in tokenizer.json (transformers assigns its own)."""
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.train_from_iterator(training, trainers.BpeTrainer(
        vocab_size=1200, special_tokens=[], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in json.loads(bpe.to_str())["model"]["merges"]]
    tok = Qwen2Tokenizer(vocab=bpe.get_vocab(), merges=merges)
    tok.add_special_tokens({"additional_special_tokens": SPECIALS[1:]})
    tok.save_pretrained(str(folder))
    if config_flags:
        path = folder / "tokenizer_config.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), **config_flags}, indent=2))
    if shift_added:
        path = folder / "tokenizer.json"
        data = json.loads(path.read_text())
        for token in data["added_tokens"]:
            token["id"] += shift_added
        path.write_text(json.dumps(data, ensure_ascii=False))


def check_decoded(label, corpus, auto, got):
    mismatches = 0
    for i, text in enumerate(corpus):
        expected = auto.decode(got[i]["ids"])
        if got[i]["decoded"] != expected:
            mismatches += 1
            if mismatches <= 5:
                print(f"  mismatch {label} #{i} {text!r}\n    expected {expected!r}\n    lrhost   {got[i]['decoded']!r}")
    print(f"{'ok  ' if mismatches == 0 else 'FAIL'} {label}: {len(corpus)} strings, {mismatches} mismatches")
    return mismatches


def check_qwen2_folder(lrhost, folder, corpus, corpus_file, sweep_file, sweep, check_file=True):
    failures = 0
    compare, run_lrhost = tokenizer_interop.compare, tokenizer_interop.run_lrhost
    auto = AutoTokenizer.from_pretrained(str(folder))
    assert type(auto).__name__ == "Qwen2Tokenizer", type(auto).__name__
    if check_file:
        raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
        raw_ids = [e.ids for e in raw.encode_batch(corpus, add_special_tokens=True)]
        failures += compare(f"{folder.name}: tokenizers (tokenizer.json as is) vs --pipeline file", corpus, raw_ids,
                            None, run_lrhost(lrhost, folder, corpus_file, "--pipeline", "file"))
    plain = auto(corpus)
    got = run_lrhost(lrhost, folder, corpus_file, "--decode")
    failures += compare(f"{folder.name}: AutoTokenizer ({type(auto).__name__}) vs lrhost", corpus,
                        plain["input_ids"], plain["attention_mask"], got)
    failures += check_decoded(f"{folder.name}: AutoTokenizer.decode vs lrhost --decode", corpus, auto, got)
    sweep_ids = auto(sweep)["input_ids"]
    failures += compare(f"{folder.name}: AutoTokenizer vs lrhost on the Unicode sweep", sweep, sweep_ids, None,
                        run_lrhost(lrhost, folder, sweep_file))
    # Padding: to the longest with the config's side; to max_length 64 with left padding and truncation.
    longest = auto(corpus[:400], padding="longest")
    short_file = corpus_file.with_suffix(".400.jsonl")
    short_file.write_text("".join(json.dumps(t) + "\n" for t in corpus[:400]))
    failures += compare(f"{folder.name}: AutoTokenizer padding=longest (config side {auto.padding_side}) vs lrhost",
                        corpus[:400], longest["input_ids"], longest["attention_mask"],
                        run_lrhost(lrhost, folder, short_file, "--padding", "longest"))
    left = auto(corpus, max_length=64, truncation=True, padding="max_length", padding_side="left")
    failures += compare(f"{folder.name}: AutoTokenizer max_length 64, left padding vs lrhost", corpus,
                        left["input_ids"], left["attention_mask"],
                        run_lrhost(lrhost, folder, corpus_file, "--max-length", "64", "--padding", "max_length",
                                   "--padding-side", "left"))
    # NFC must matter: without the normalizer the ids differ on some strings (and on e + U+0301).
    bare = copy.deepcopy(auto.backend_tokenizer)
    bare.normalizer = None
    bare.no_padding()  # the calls above left padding and truncation set on the backend
    bare.no_truncation()
    bare_ids = [e.ids for e in bare.encode_batch(corpus, add_special_tokens=True)]
    differ = sum(a != b for a, b in zip(bare_ids, plain["input_ids"]))
    print(f"     {folder.name}: NFC changes the ids of {differ} strings; pad {auto.pad_token!r} = {auto.pad_token_id}")
    if differ < 50 or auto("e\u0301")["input_ids"] != auto("\u00e9")["input_ids"]:
        print(f"FAIL {folder.name}: expected NFC to change the ids of many strings")
        failures += 1
    return failures


def main():
    lrhost, work = sys.argv[1], Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    corpus = qwen_corpus(random.Random(SEED))
    corpus_file = work / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(t) + "\n" for t in corpus))
    sweep = unicode_sweep()
    sweep_file = work / "sweep.jsonl"
    sweep_file.write_text("".join(json.dumps(t) + "\n" for t in sweep))
    training = corpus[:1500]
    failures = 0
    make_qwen2(work / "qwen2", training)
    # add_eos_token given: transformers drops it next to a tokenizer.json (no <|im_end|> added); eos and left
    # padding by config.
    make_qwen2(work / "qwen2_add_eos", training,
               {"add_eos_token": True, "eos_token": "<|im_end|>", "padding_side": "left"})
    # Added-token ids in tokenizer.json past a gap: transformers re-adds them right after the vocabulary.
    make_qwen2(work / "qwen2_added_gap", training, shift_added=40)
    for folder in ("qwen2", "qwen2_add_eos", "qwen2_added_gap"):
        # tokenizers re-adds tokenizer.json's added tokens past the gap too, where lrhost's --pipeline file keeps
        # the ids written in the file: only AutoTokenizer is compared there.
        failures += check_qwen2_folder(lrhost, work / folder, corpus, corpus_file, sweep_file, sweep,
                                       check_file=folder != "qwen2_added_gap")
    print(f"tokenizer qwen2 interop: {len(corpus)} strings and {len(sweep)} sweep strings per case, "
          f"{failures} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
