"""Checks `lrhost tokenize` against Hugging Face `tokenizers` and transformers' AutoTokenizer (the call LeRobot
makes for SmolVLA) on tokenizers trained offline with SmolVLM2's exact pipeline and special-token layout, and on
a GPT-2-style variant, over a fixed-seed corpus of >= 2,000 strings. Exits 1 on any mismatch.

    tokenizer_interop.py LRHOST_EXE WORK_DIR
"""

import json
import random
import shutil
import subprocess
import sys
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import AutoTokenizer, PreTrainedTokenizerFast

SEED = 1234
MAX_LENGTH = 48  # LeRobot's tokenizer_max_length for SmolVLA
SMOLLM_SPECIALS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<repo_name>", "<reponame>", "<file_sep>", "<filename>",
    "<gh_stars>", "<issue_start>", "<issue_comment>", "<issue_closed>", "<jupyter_start>", "<jupyter_text>",
    "<jupyter_code>", "<jupyter_output>", "<jupyter_script>", "<empty_output>",
]
SMOLVLM_ADDED = (["<global-img>"] + [f"<row_{r}_col_{c}>" for r in range(1, 7) for c in range(1, 7)]
                 + ["<fake_token_around_image>", "<image>"]
                 + [f"<|reserved_special_token_{i}|>" for i in range(88)] + ["<end_of_utterance>"])
BASE_VOCAB = 49152


def build_corpus(rng):
    colors = ["red", "blue", "green", "yellow", "purple", "Orange", "BLACK", "white"]
    objects = ["cube", "cubes", "block", "mug", "sponge", "pen", "banana", "T-shape", "lego brick"]
    places = ["box", "bowl", "drawer", "left bin", "tray", "basket"]
    pieces = [
        "it's", "don't", "I'm", "we'll", "they'd", "you've", "we're", "IT'S", "DON'T", "o'clock", "'s", "''",
        "3.5cm", "12,345", "2024-06-01", "v1.2.3", "x2", "0.001", "1e-5", "007", "٣٤٥", "²³", "½", "Ⅻ", "１２３",
        "!!!", "...", "?!", "---", "((()))", "@#$%", "**bold**", "__init__", "a/b\\c", "~~", "<>", "{}", "[x]",
        "  ", "\t", "\n\n\n", "\r\n", " \t \n", "   ", "\u00a0", "\u3000", "\u2003",
        "café", "naïve", "Ångström", "e\u0301", "Ærøskøbing", "Straße", "ĳ",
        "机器人抓取红色方块", "ロボットアーム", "로봇 팔", "把杯子放到桌子上",
        "🤖", "👍🏽", "👨‍👩‍👧", "🇫🇷", "✅", "🍌🍌",
        "Привет мир", "مرحبا بالعالم", "नमस्ते", "สวัสดี", "Γειά σου", "שלום",
        "<|im_start|>", "<|im_end|>", "<image>", "<row_1_col_2>", "<|im_end", "<<|im_end|>>", "<image><image>",
        "<global-img>", "<end_of_utterance>", "<|endoftext|>", "<fake_token_around_image>", "<|reserved_special_token_7|>",
        "<extra_tool>",
    ]
    corpus = ["", " ", "\n", "Pick up 12 red cubes, it's 3.5cm\n"]
    for _ in range(700):
        corpus.append(f"{rng.choice(['Pick up', 'Grasp', 'Push', 'Move', 'put'])} the {rng.choice(colors)} "
                      f"{rng.choice(objects)} {rng.choice(['into', 'onto', 'next to'])} the {rng.choice(places)}"
                      f"{rng.choice(['', '.', '!', ' ' + str(rng.randint(0, 999))])}\n")
    for _ in range(1000):
        n = rng.randint(1, 8)
        parts = [rng.choice(pieces) for _ in range(n)]
        separators = [rng.choice(["", " ", "  ", "\t", "\n", ", "]) for _ in range(n)]
        corpus.append("".join(p + s for p, s in zip(parts, separators)))
    for _ in range(300):  # random characters from many categories
        pool = "aZ09 \t\n.,;:'\"!?-_()[]{}<>|/\\@#$%^&*+=~`éüñçøßЖж中文字ひらカナ한글🤖😀٣²½Ⅻ\u00a0\u200b\u2028"
        corpus.append("".join(rng.choice(pool) for _ in range(rng.randint(1, 40))))
    for _ in range(150):  # long strings, beyond 48 tokens: truncation
        corpus.append(" ".join(rng.choice(pieces + colors + objects) for _ in range(rng.randint(30, 120))))
    return corpus


def train(corpus, pre_tokenizer, specials, vocab_size):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizer
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tokenizer.train_from_iterator(corpus, trainer)
    return tokenizer


def pad_vocab(tokenizer, size):
    """SmolLM's base vocabulary has 49,152 entries: fill the trained one up with unreachable tokens."""
    data = json.loads(tokenizer.to_str())
    vocab = data["model"]["vocab"]
    for i in range(len(vocab), size):
        vocab[f"<filler_{i}>"] = i
    return Tokenizer.from_str(json.dumps(data))


def make_smolvlm(folder, corpus):
    tokenizer = train(corpus, pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                                      pre_tokenizers.ByteLevel(add_prefix_space=False)]),
                      SMOLLM_SPECIALS, 2000)
    tokenizer = pad_vocab(tokenizer, BASE_VOCAB)
    tokenizer.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in SMOLVLM_ADDED])
    assert tokenizer.token_to_id("<global-img>") == 49152 and tokenizer.token_to_id("<end_of_utterance>") == 49279
    assert [tokenizer.token_to_id(t) for t in SMOLLM_SPECIALS] == list(range(17))
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, bos_token="<|im_start|>", eos_token="<end_of_utterance>", pad_token="<|im_end|>",
        unk_token="<|endoftext|>", truncation_side="left",
        extra_special_tokens={"fake_image_token": "<fake_token_around_image>", "image_token": "<image>",
                              "global_image_token": "<global-img>", "end_of_utterance_token": "<end_of_utterance>"})
    fast.save_pretrained(folder)


def make_gpt2_style(folder, corpus):
    """Plain GPT-2 pipeline (ByteLevel with add_prefix_space, no Digits), a non-special added token with
    normalized=true, right truncation and left padding: shows that the pipeline is read from the files."""
    tokenizer = train(corpus, pre_tokenizers.ByteLevel(add_prefix_space=True), ["<|endoftext|>", "<pad>"], 1500)
    tokenizer.add_tokens([AddedToken("<extra_tool>", special=False, normalized=True)])
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, eos_token="<|endoftext|>", pad_token="<pad>",
                                   truncation_side="right", padding_side="left")
    fast.save_pretrained(folder)


def with_class(source, folder, tokenizer_class):
    """A copy whose tokenizer_config.json names another class (as SmolLM2/SmolVLM2's name GPT2Tokenizer)."""
    shutil.copytree(source, folder)
    config_path = folder / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = tokenizer_class
    config_path.write_text(json.dumps(config, indent=2))


def run_lrhost(lrhost, folder, corpus_file, *flags):
    with open(corpus_file, "rb") as stdin:
        result = subprocess.run([lrhost, "tokenize", str(folder), "--stdin", *flags], stdin=stdin,
                                capture_output=True, check=False, timeout=120)
    if result.returncode != 0:
        sys.exit(f"lrhost tokenize {folder} {' '.join(flags)} failed:\n{result.stderr.decode()}")
    return [json.loads(line) for line in result.stdout.decode().split("\n") if line]


def compare(label, corpus, expected_ids, expected_masks, got):
    mismatches = 0
    if len(got) != len(corpus):
        print(f"FAIL {label}: lrhost printed {len(got)} lines for {len(corpus)} texts")
        return len(corpus)
    for i, text in enumerate(corpus):
        ok = got[i]["text"] == text and got[i]["ids"] == expected_ids[i]
        if expected_masks is not None:
            ok = ok and got[i]["attention_mask"] == expected_masks[i]
        if not ok:
            mismatches += 1
            if mismatches <= 5:
                print(f"  mismatch {label} #{i} {text!r}\n    expected {expected_ids[i]}\n    lrhost   {got[i]['ids']}")
    print(f"{'ok  ' if mismatches == 0 else 'FAIL'} {label}: {len(corpus)} strings, {mismatches} mismatches")
    return mismatches


def check_folder(lrhost, folder, corpus, corpus_file, padding_side_call, pipelines_differ=False):
    failures = 0
    raw = Tokenizer.from_file(str(folder / "tokenizer.json"))
    raw.no_truncation()
    raw.no_padding()
    raw_ids = [e.ids for e in raw.encode_batch(corpus, add_special_tokens=True)]
    failures += compare(f"{folder.name}: tokenizers (tokenizer.json as is) vs --pipeline file", corpus, raw_ids, None,
                        run_lrhost(lrhost, folder, corpus_file, "--pipeline", "file"))
    auto = AutoTokenizer.from_pretrained(str(folder))
    # LeRobot's call (TokenizerProcessorStep): max_length=48, truncation, padding to max_length, right padding.
    batch = auto(corpus, max_length=MAX_LENGTH, truncation=True, padding="max_length", padding_side=padding_side_call)
    failures += compare(f"{folder.name}: AutoTokenizer ({type(auto).__name__}) as LeRobot calls it vs lrhost", corpus,
                        batch["input_ids"], batch["attention_mask"],
                        run_lrhost(lrhost, folder, corpus_file, "--max-length", str(MAX_LENGTH), "--padding",
                                   "max_length", "--padding-side", padding_side_call))
    # Padding to the longest with the config's own sides (no override).
    longest = auto(corpus[:300], truncation=True, max_length=MAX_LENGTH, padding="longest")
    short_file = corpus_file.with_suffix(".300.jsonl")
    short_file.write_text("".join(json.dumps(t) + "\n" for t in corpus[:300]))
    failures += compare(f"{folder.name}: AutoTokenizer padding=longest (config sides) vs lrhost", corpus[:300],
                        longest["input_ids"], longest["attention_mask"],
                        run_lrhost(lrhost, folder, short_file, "--max-length", str(MAX_LENGTH), "--padding", "longest"))
    # transformers 5 runs tokenizer.json's pipeline for TokenizersBackend, but rebuilds it (ByteLevel only, no
    # Digits) for GPT2Tokenizer: count the strings where that changes the ids, so the case is known to matter.
    differ = sum(a != b for a, b in zip(auto(corpus)["input_ids"], raw_ids))
    tokenizer_class = json.loads((folder / "tokenizer_config.json").read_text()).get("tokenizer_class")
    print(f"     {folder.name}: tokenizer_class {tokenizer_class}: AutoTokenizer's ids differ from tokenizer.json's "
          f"pipeline for {differ} strings")
    if pipelines_differ and differ == 0:
        print(f"FAIL {folder.name}: expected AutoTokenizer to differ from tokenizer.json's pipeline on some strings")
        failures += 1
    return failures


def main():
    lrhost, work = sys.argv[1], Path(sys.argv[2])
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    rng = random.Random(SEED)
    corpus = build_corpus(rng)
    corpus_file = work / "corpus.jsonl"
    corpus_file.write_text("".join(json.dumps(t) + "\n" for t in corpus))
    training = corpus[:1500]
    make_smolvlm(work / "smolvlm", training)
    with_class(work / "smolvlm", work / "smolvlm_gpt2_class", "GPT2Tokenizer")
    make_gpt2_style(work / "gpt2_style", training)
    failures = 0
    failures += check_folder(lrhost, work / "smolvlm", corpus, corpus_file, "right")
    failures += check_folder(lrhost, work / "smolvlm_gpt2_class", corpus, corpus_file, "right", pipelines_differ=True)
    failures += check_folder(lrhost, work / "gpt2_style", corpus, corpus_file, "left")
    print(f"tokenizer interop: {len(corpus)} strings per case, {failures} mismatches")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
