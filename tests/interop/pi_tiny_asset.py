"""Writes recipes/assets/pi_tiny: the offline stand-in for pi0/pi05's tokenizer and geometry that the
out-of-the-box recipes (recipes/pi0.lua, recipes/pi05.lua) train from scratch on CPU.

- geometry.json: lrhost's geometry file (host/policy/pi/pi_geometry.hpp): a 2-layer VLM of width 64
  and an expert of width 32 with pi0's head layout (8 query heads × 16, 1 KV head), a 2-layer SigLIP of
  width 32 with 8-pixel patches, vocabularies of 1024;
- tokenizer.json / tokenizer_config.json: a Gemma-style byte-fallback BPE (GemmaTokenizer layout:
  specials at 0..4, the 256 byte pieces, trained pieces; tokenizer_gemma_interop.make_gemma) trained on
  lrhost's built-in task strings and general robot phrases, well under 1024 ids.

Deterministic. Run with the interop python: "$(scripts/setup-interop --python)" tests/interop/pi_tiny_asset.py OUT
"""
import json
import random
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tokenizer_gemma_interop as tg  # noqa: E402

GEOMETRY = {
    "vlm": {"hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 8,
            "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 1024},
    "expert": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 8,
               "num_key_value_heads": 1, "head_dim": 16, "vocab_size": 1024},
    "vision": {"hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2,
               "patch_size": 8},
}
# host/data/synthetic_push.cpp's tasks, and the pi05 prompt's fixed words.
TASKS = [f"push the blue block onto the green target on the {side}" for side in ("left", "right")]
PROMPT_WORDS = ["Task: ", ", State: ", ";\nAction: "] + [str(i) for i in range(256)]


def main() -> int:
    out = Path(sys.argv[1])
    shutil.rmtree(out / "tokenizer.json", ignore_errors=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "geometry.json"):
        (out / name).unlink(missing_ok=True)
    rng = random.Random(11)
    corpus = TASKS * 50 + PROMPT_WORDS * 5 + tg.gemma_corpus(rng)[:400]
    tmp = out / "tmp_tokenizer"
    shutil.rmtree(tmp, ignore_errors=True)
    size = tg.make_gemma(tmp, corpus, 500, {"add_bos_token": True, "add_eos_token": False})
    assert size <= GEOMETRY["vlm"]["vocab_size"], size
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.move(str(tmp / name), str(out / name))
    tmp.rmdir()
    (out / "geometry.json").write_text(json.dumps(GEOMETRY, indent=2) + "\n")
    print(f"wrote {out}: {size} tokenizer ids, geometry {GEOMETRY['vlm']['hidden_size']}/{GEOMETRY['expert']['hidden_size']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
