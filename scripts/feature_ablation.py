"""Which of GNU Backgammon's contact inputs help: the same network trained on the same labels with
groups of ``gnubg_contact`` features removed, scored on the move-error benchmark.

    python scripts/feature_ablation.py --dataset runs/datasets/ablation [--hidden 128] [--epochs 20]
                                       [--seeds 1,2] [--variants all,none,-shots,...] [--threads 1]
                                       [--json FILE]

Every variant is a ``gnubg_contact`` network (the 198 Tesauro units and the 50 contact features)
trained from scratch on the dataset (all its kinds; 5% held out, drawn under the seed) with AdamW,
a cosine learning rate and cross-entropy, exactly alike except that the removed features are set to
0 in every training input; their first-layer weights are then set to 0, so the network ignores them
at play as it did in training. ``all`` keeps every feature, ``none`` removes all 50 (the Tesauro
units alone), ``-GROUP`` removes one group (``GROUPS``) for both sides. Each is scored at 0-ply on
the shipped benchmark's contact and crashed decisions; printed: the held-out loss, the error rates
(x 1000, 95% intervals) and, paired on the same decisions, each variant's contact error minus
``all``'s. With several seeds every figure is the mean over the seeds, and the paired difference
pools the decisions of all seeds.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bgtrain.arena.specs import network_agent
from bgtrain.benchmark.decisions import load_decisions
from bgtrain.benchmark.scorer import decision_losses, mean_interval
from bgtrain.datasets import load_datasets
from bgtrain.files import atomic_write
from bgtrain.model.gnubg_inputs import FEATURES, HALF_SIZE
from bgtrain.model.network import ValueNetwork
from bgtrain.training.supervised import encode_all
from engine.rules import STANDARD

TESAURO_UNITS = 198
GROUPS = {
    "shots": ("pip_loss", "p1", "p2"),
    "escapes": ("back_escapes", "back_rescapes", "acontain", "acontain2", "contain", "contain2"),
    "mobility": ("mobility", "moment2"),
    "anchors": ("break_contact", "back_checker", "back_anchor", "forward_anchor"),
    "timing": ("timing", "free_pip"),
    "backgame": ("backg", "backg1", "backbone"),
    "entering": ("enter", "enter2"),
    "off": ("off1", "off2", "off3"),
}


def removed_columns(variant: str) -> list[int]:
    """The encoder columns a variant removes (both sides' copies of each feature)."""
    if variant == "all":
        names: tuple[str, ...] = ()
    elif variant == "none":
        names = FEATURES
    elif variant.startswith("-") and variant[1:] in GROUPS:
        names = GROUPS[variant[1:]]
    else:
        raise ValueError(f"unknown variant {variant!r}: all, none or -GROUP with GROUP one of {', '.join(GROUPS)}")
    return sorted(TESAURO_UNITS + side * HALF_SIZE + FEATURES.index(name) for name in names for side in (0, 1))


def train_variant(encoded: torch.Tensor, targets: torch.Tensor, removed: list[int], hidden: int, epochs: int,
                  seed: int, batch_size: int = 128, learning_rate: float = 3e-3) -> tuple[ValueNetwork, float]:
    """A network trained with ``removed`` columns zeroed; its held-out cross-entropy."""
    torch.manual_seed(seed)
    network = ValueNetwork("gnubg_contact", [hidden], "sigmoid")
    keep = torch.ones(encoded.shape[1])
    keep[removed] = 0.0
    order = torch.randperm(encoded.shape[0], generator=torch.Generator().manual_seed(seed))
    held = order[: encoded.shape[0] // 20]
    train = order[encoded.shape[0] // 20:]
    inputs = encoded * keep
    optimizer = torch.optim.AdamW(network.parameters(), lr=learning_rate, weight_decay=1e-4)
    shuffle = torch.Generator().manual_seed(seed + 1)
    steps = epochs * math.ceil(train.numel() / batch_size)
    step = 0
    for _ in range(epochs):
        for index in train[torch.randperm(train.numel(), generator=shuffle)].split(batch_size):
            for group in optimizer.param_groups:  # cosine from the base rate to 2% of it
                group["lr"] = learning_rate * (0.02 + 0.98 * 0.5 * (1 + math.cos(math.pi * step / steps)))
            loss = torch.nn.functional.binary_cross_entropy(network.forward_encoded(inputs[index]), targets[index])
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            step += 1
    with torch.no_grad():
        network.hidden_layers[0].weight[:, removed] = 0.0  # ignore at play what training never saw
        held_loss = float(torch.nn.functional.binary_cross_entropy(network.forward_encoded(inputs[held]),
                                                                   targets[held]))
    fresh = ValueNetwork("gnubg_contact", [hidden], "sigmoid")
    fresh.load_state_dict(network.state_dict())  # no cached first-layer tables of the old weights
    return fresh.eval(), held_loss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", required=True, action="append", help="dataset directory (repeatable)")
    parser.add_argument("--hidden", type=int, default=128)
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--seeds", default="1")
    parser.add_argument("--variants", default="all,none," + ",".join(f"-{group}" for group in GROUPS))
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--json", help="also write the figures as JSON to this file")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    variants = args.variants.split(",")
    removed = {variant: removed_columns(variant) for variant in variants}
    seeds = [int(seed) for seed in args.seeds.split(",")]

    data = load_datasets(args.dataset)
    started = time.perf_counter()
    encoded = encode_all(ValueNetwork("gnubg_contact", [1]), data.positions, STANDARD)
    targets = data.targets.clamp(0.0, 1.0)
    print(f"{len(data):,} positions from {', '.join(args.dataset)} encoded in {time.perf_counter() - started:.0f} s")
    benchmark = load_decisions()
    classes = {name: benchmark.of_class(name) for name in ("contact", "crashed")}
    results: dict[str, dict] = {}
    losses: dict[str, list[torch.Tensor]] = {}
    for variant in variants:
        held, rates, contact_losses = [], {name: [] for name in classes}, []
        for seed in seeds:
            started = time.perf_counter()
            network, held_loss = train_variant(encoded, targets, removed[variant], args.hidden, args.epochs, seed)
            held.append(held_loss)
            agent = network_agent(network, 0, variant, STANDARD)
            for name, decisions in classes.items():
                loss = decision_losses(agent, decisions)[0]
                rates[name].append(loss)
                if name == "contact":
                    contact_losses.append(loss)
            print(f"  {variant} seed {seed}: {time.perf_counter() - started:.0f} s", flush=True)
        losses[variant] = contact_losses
        results[variant] = {
            "removed_features": len(removed[variant]) // 2,
            "heldout_loss": sum(held) / len(held),
            **{name: mean_interval(torch.cat(values) * 1000) for name, values in rates.items()},
        }
    reference = "all" if "all" in losses else variants[0]
    print(f"\n{'variant':<12} {'features':>8} {'held-out':>9} {'contact':>15} {'crashed':>15} "
          f"{'contact - ' + reference:>18}")
    for variant in variants:
        row = results[variant]
        difference = mean_interval((torch.cat(losses[variant]) - torch.cat(losses[reference])) * 1000)
        row["contact_minus_reference"] = difference
        print(f"{variant:<12} {50 - 2 * row['removed_features']:>8} {row['heldout_loss']:>9.5f} "
              f"{row['contact'][0]:>7.2f} ± {row['contact'][1]:<5.2f} {row['crashed'][0]:>7.2f} ± {row['crashed'][1]:<5.2f} "
              f"{difference[0]:>+9.2f} ± {difference[1]:.2f}")
    if args.json:
        payload = {"datasets": args.dataset, "hidden": args.hidden, "epochs": args.epochs, "seeds": seeds,
                   "groups": GROUPS, "reference": reference, "results": results}
        atomic_write(args.json, (json.dumps(payload, indent=2) + "\n").encode())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
