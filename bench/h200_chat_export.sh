#!/usr/bin/env bash
# A drafter people can serve, end to end on the device machine's H200, from the repo root,
# one call (~8 min):
#   1. a target with the medium preset's widths (hidden 1024, 16/8 heads, head_dim 128,
#      8 layers; random weights, built here) and the tests' chat tokenizer (tests/hf_models.py,
#      127 tokens, a ChatML-like template), saved as a local HF model;
#   2. chat data: 64 chats whose assistant turns `dflash-train regen` rewrites with that
#      target (greedy, batched, 192 new tokens);
#   3. `dflash-train --preset medium` on the regenerated chats (8 roles on GPU 0, compiled
#      flex), 60 steps, `--export-dir`;
#   4. upstream DFlash (PyPI `dflash`) decodes with the export against the target: mean
#      acceptance length, tokens/s, lossless versus the target's greedy output.
# Needs torch + transformers (there: torch 2.11, transformers 5.17) and upstream `dflash`
# importable, or its wheel in .whl/ (`pip download dflash==0.1.0 --no-deps -d .whl` here,
# then carry .whl). Results: $OUT/summary.txt, $OUT/train.log, $OUT/regen.log, $OUT/decode.json.
#   OUT=$OUT bash bench/h200_chat_export.sh
set -u
OUT=${OUT:-/tmp/h200-chat}
W=/tmp/h200-chat-work
mkdir -p "$OUT" "$W/py" "$W/neutral"
ROOT=$PWD
ln -sfn "$ROOT/dflash" "$W/py/dflash_train" # the import name, without installing the repo
export PYTHONPATH="$W/py:$ROOT/tests" PYTHONUNBUFFERED=1
T0=$(date +%s)
note() { echo "[$(($(date +%s) - T0)) s] $*" | tee -a "$OUT/summary.txt"; }
limit() { timeout -s USR1 -k 20 "$@"; }
up() { (cd "$W/neutral" && python3 -c 'from dflash.model import DFlashDraftModel' 2>/dev/null); }
if ! up && ls .whl/dflash-*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target "$W/py" .whl/dflash-*.whl
fi
up || { note "upstream dflash is not importable (carry .whl/dflash-0.1.0-*.whl)"; exit 3; }
note "env: $(python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.get_device_name(0))')"

python3 - "$W" <<'PY' 2>&1 | tee -a "$OUT/summary.txt"
import json, sys
from pathlib import Path
import torch
from transformers import Qwen3Config, Qwen3ForCausalLM
import hf_models
from dflash_train.presets import MEDIUM_TARGET
w = Path(sys.argv[1])
torch.manual_seed(0)
cfg = Qwen3Config(**{**MEDIUM_TARGET, "vocab_size": hf_models.VOCAB}, eos_token_id=2, pad_token_id=0)
Qwen3ForCausalLM(cfg).save_pretrained(w / "target")
hf_models.save_tokenizer(w / "target")
with open(w / "chat.jsonl", "w") as f:
    for k in range(64):
        f.write(json.dumps(hf_models.chat_record(k, turns=2)) + "\n")
print("target and 64 chats written")
PY
rm -f "$W/regen.jsonl"
t=$(date +%s)
limit 150 python3 -m dflash_train.train regen --target-model "$W/target" --data "$W/chat.jsonl" \
  --out "$W/regen.jsonl" --max-new-tokens 192 --batch-size 32 >"$OUT/regen.log" 2>&1
note "regen: rc=$? in $(($(date +%s) - t)) s, $(wc -l <"$W/regen.jsonl") records"

rm -rf "$W/run" "$W/export"
t=$(date +%s)
limit 330 python3 -m dflash_train.train --preset medium --target-model "$W/target" \
  --data "$W/regen.jsonl" --mask-token-id 3 --steps 60 --target-gpus 0 --drafter-gpus 0 \
  --allow-shared-gpus --target-workers 5 --drafter-workers 3 --attention flex \
  --stall-timeout 120 --out-dir "$W/run" --export-dir "$W/export" >"$OUT/train.log" 2>&1
note "train: rc=$? in $(($(date +%s) - t)) s"
grep -E '^(eval|dflash-train: (training|compil|warmed|done|exported|error|warning))' \
  "$OUT/train.log" | tail -n 12 | tee -a "$OUT/summary.txt"
grep -E '^step=' "$OUT/train.log" | sed -n '1p;$p' | tee -a "$OUT/summary.txt"
cp "$W/export/config.json" "$OUT/export_config.json" 2>/dev/null

for dt in bfloat16 float32; do # fp32 (TF32 off) tells arithmetic from a wrong drafter
  t=$(date +%s)
  (cd "$W/neutral" && DECODE_DTYPE=$dt limit 150 python3 "$ROOT/bench/h200_decode.py" \
    "$W/export" "$W/target" "$W/regen.jsonl" 4 128) >"$OUT/decode-$dt.json" 2>"$OUT/decode.err"
  note "decode $dt: rc=$? in $(($(date +%s) - t)) s: $(tail -1 "$OUT/decode-$dt.json")"
done
