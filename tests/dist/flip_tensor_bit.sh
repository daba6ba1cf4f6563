# Sourced by corrupt_resume.sh and bit_flips.sh: flip_tensor_bit FILE flips one random bit (from
# $RANDOM, so a seeded RANDOM repeats it) of a safetensors file's tensor data — after the 8-byte
# header length and the JSON header — in place, and sets `bit` and `offset` to what it flipped.
flip_tensor_bit() {
  local target=$1 size header byte
  size=$(stat -c %s "$target")
  header=$(od -An -t u8 -N8 "$target" | tr -d ' ')
  offset=$((8 + header + (RANDOM * 32768 + RANDOM) % (size - 8 - header)))
  bit=$((RANDOM % 8))
  byte=$(od -An -t u1 -j "$offset" -N1 "$target" | tr -d ' ')
  printf "\\$(printf %03o $((byte ^ (1 << bit))))" | dd of="$target" bs=1 seek="$offset" conv=notrunc status=none
}
