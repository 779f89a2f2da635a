#!/usr/bin/env bash
# Fixed-seed outputs of the main commands (bench, cubeful bench, league, eval, moves, rollout, benchmark,
# a dataset shard, a short TD run and a short supervised run), for a before/after check of a refactor:
#   bash scripts/fixed_seed_outputs.sh OUT_DIR        (run on each version; then diff the two OUT_DIRs:
#   the .out/.json files differ only in times, and the checkpoint and shard hashes printed at the end match)
set -u
OUT=${1:?out dir}; mkdir -p "$OUT"; rm -rf "$OUT"/*
cd "${REPO:-.}"
export PYTHONHASHSEED=0
B=checkpoints/bgtrain-default.pt
S=checkpoints/bgtrain-supervised.pt
run(){ name=$1; shift; "$@" > "$OUT/$name.out" 2> "$OUT/$name.err"; echo "rc=$?" >> "$OUT/$name.out"; }
run bench bgtrain bench $B pubeval --games 200 --seed 3 --threads 1 --json "$OUT/bench.json"
run benchcube bgtrain bench $B pubeval --games 40 --cube --seed 4 --threads 1 --json "$OUT/benchcube.json"
run league bgtrain league $B pubeval random --games 40 --seed 5 --threads 1 --out "$OUT/league"
run eval bgtrain eval 4HPwATDgc/ABMA --dice 31 --ply 1 --json
run evalsup bgtrain eval 4HPwATDgc/ABMA --dice 42 --model $S --json
run eval2 bgtrain eval "XGID=-b----E-C---eE---c-e----B-:1:1:1:00:2:4:0:7:10" --model $B --json
run moves bgtrain moves 4HPwATDgc/ABMA 31 4HPwATDgc/ABMA 66
run rollout bgtrain rollout 4HPwATDgc/ABMA --model $B --trials 72 --truncate 7 --seed 6 --threads 1 --json
run benchmark bgtrain benchmark $B --class race --json "$OUT/benchmark.json"
run dataset bgtrain dataset generate --model $B --out "$OUT/ds" --positions 60 --seed 7 --threads 1
run td bgtrain train --config configs/quick.toml --out "$OUT/td" --threads 1 train.total_games=128 evaluation.every_games=128 evaluation.games=20 checkpoint.every_games=128
cat > "$OUT/sup.toml" <<T
[run]
name = "sup"
seed = 11
[model]
encoder = "gnubg_contact"
hidden = [16]
[train]
method = "supervised"
[supervised]
datasets = ["$OUT/ds"]
epochs = 2
batch_size = 16
[evaluation]
games = 20
T
run sup bgtrain train --config "$OUT/sup.toml" --out "$OUT/sup" --threads 1
python - "$OUT" <<'P'
import sys, torch, hashlib, pathlib
out = pathlib.Path(sys.argv[1])
for p in sorted(out.rglob("*.pt")):
    ck = torch.load(p, map_location="cpu", weights_only=False)
    h = hashlib.sha256()
    def walk(x):
        if isinstance(x, torch.Tensor): h.update(x.detach().cpu().contiguous().numpy().tobytes())
        elif isinstance(x, dict): [walk(x[k]) for k in sorted(x, key=str)]
        elif isinstance(x, (list, tuple)): [walk(v) for v in x]
    keys = [key for key in ("weights",) if isinstance(ck, dict) and key in ck]
    walk({key: ck[key] for key in keys} if keys else ck)
    print(p.relative_to(out), h.hexdigest()[:16])
P
