"""Build and inspect labelled position datasets (``bgtrain.datasets``, format in ``docs/datasets.md``).

    bgtrain dataset generate --model M --out DIR --positions N [--shard-size S] [--seed K]
                             [--labeller ply:1] [--epsilon E] [--temperature T] [--sample-rate R]
                             [--select-ply P] [--select-threshold X] [--keep-agreeing F]
                             [--kinds race] [--opponent gnubg:0ply]
                             [--executor process|ray [--address A] [--workers N]]
    bgtrain dataset relabel SOURCE --out DIR [--model M] [--labeller ply:1] [--kinds crashed]
                            [--executor process|ray [--address A] [--workers N]]
    bgtrain dataset plays SOURCE --out DIR [--model M] [--labeller ply:0] [--top 6] [--others 3] [--seed K]
                          [--rival gnubg:0ply] [--executor process|ray [--address A] [--workers N]]
    bgtrain dataset select SOURCE --out PREFIX [--against DIR] [--threshold 0.03] [--keep 0.15] [--parts 2]
                           [--shard-size 5000] [--seed K]
    bgtrain dataset info DIR [--json]

``generate`` plays noisy self-play games with the model (with ``--opponent``, games against that agent,
the model's turns taken only), keeps positions where its 0-ply and its ``--select-ply`` evaluations
disagree by more than ``--select-threshold`` equity (others with probability ``--keep-agreeing``),
labels them with the labeller (``ply:N``: the model's N-ply evaluation; ``rollout:TRIALS[:truncate=K]``:
rollout means, with their standard errors; ``gnubg:N``: GNU Backgammon's N-ply, a teacher outside our
models) and writes shards of ``--shard-size`` positions.
``--kinds race`` (or ``contact,crashed``) takes only positions of those kinds, for a network of one phase.
Rerun the same command after a kill: complete shards are kept, the rest are written, and the result is
the same as an uninterrupted run's.

Both take their teacher from ``--model``, by default ``checkpoints/bgtrain-plus.pt`` for both. One process
at a time writes a dataset directory (``dataset.lock``); a rerun checks each listed shard against the
size and sha256 its manifest records and writes a damaged or missing one again, as ``info`` checks them.

``relabel`` labels the positions of an existing dataset again (those of ``--kinds``, all by default)
with another model or labeller, shard for shard (``bgtrain.datasets.relabel``): a stronger teacher for
positions already found (``SOURCE@N``: its first N shards only; ``SOURCE@A:B``: its shards A to B - 1).
It resumes after a kill the same way.

``plays`` takes, for each position of SOURCE, a roll and the positions after its ``--top`` best plays by
the model's 0-ply and about ``--others`` more of the rest (``bgtrain.datasets.plays``), and labels them:
what a student needs to rank plays as its teacher does (a distillation's positions). It resumes the same way.
With ``--rival AGENT`` only the rolls where AGENT plays otherwise than the model's 0-ply are kept, the
rival's play among their plays: deep labels where two players part.

``select`` takes the positions of a dataset labelled at 1-ply (or deeper) where its label and its model's
0-ply differ by more than ``--threshold`` in cubeless equity, and ``--keep`` of the others, and writes them
as ``--parts`` datasets ``PREFIX-0``, ``PREFIX-1``, ... (``PREFIX`` itself for one) of small shards, one
for each process that relabels them deeper (``bgtrain.datasets.selection``): the deep labels go where the
model's 0-ply is wrong. With ``relabel --executor ray`` one part (``--parts 1``) uses every core.
``--against DIR``, a relabelling of SOURCE by a second teacher (``relabel`` with no ``--kinds``), compares
the two teachers' labels instead: the positions where they disagree, for a third, deeper label.

``--executor ray`` makes (``generate``) or labels (``relabel``, ``plays``) the shards on a Ray cluster
(``bgtrain.distributed.datasets``: one shard per work unit; this process writes them and the manifest as
they arrive), byte for byte the files an in-process run writes; a rerun after a kill resumes the same
way. Without ``--address`` the cluster is a private one on this machine: every core labels.
"""

from __future__ import annotations

import argparse
import json

from bgtrain.commands import add_device, add_seed, add_threads, apply_threads
from bgtrain.distributed.executor import add_executor_arguments, executor_from_args

# One teacher by default for generate and relabel: the model that played and labelled the positions of
# every shipped dataset. Name a stronger one with --model (the shipped crashed relabels used
# checkpoints/bgtrain-supervised-fast.pt, generation 7; see checkpoints/README.md).
DEFAULT_TEACHER = "checkpoints/bgtrain-plus.pt"
LABELLER_HELP = ("ply:N, rollout:TRIALS[:truncate=K][:ply=N][:luck=pruned][:batch=B], or gnubg:N (GNU Backgammon at "
                 "N ply; needs gnubg-nn)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    generate = actions.add_parser("generate", help="generate and label a dataset")
    generate.add_argument("--model", default=DEFAULT_TEACHER,
                          help=f"model that plays and labels (default {DEFAULT_TEACHER})")
    generate.add_argument("--out", required=True, help="dataset directory")
    generate.add_argument("--positions", type=int, required=True)
    generate.add_argument("--shard-size", type=int, default=10_000)
    add_seed(generate)
    generate.add_argument("--labeller", default="ply:1", help=LABELLER_HELP)
    generate.add_argument("--games", type=int, default=512, help="self-play games in lock step")
    generate.add_argument("--epsilon", type=float, default=0.05, help="probability of a random play")
    generate.add_argument("--temperature", type=float, default=0.0, help="softmax play on equity / T (0: greedy)")
    generate.add_argument("--sample-rate", type=float, default=0.25, help="fraction of positions taken as candidates")
    generate.add_argument("--select-ply", type=int, default=1, help="0 keeps every candidate")
    generate.add_argument("--select-threshold", type=float, default=0.04)
    generate.add_argument("--keep-agreeing", type=float, default=0.25)
    generate.add_argument("--kinds", default="", metavar="KIND[,KIND...]",
                          help="take only positions of these kinds (contact, crashed, race); default: all")
    generate.add_argument("--opponent", metavar="AGENT", default="",
                          help="play the model against this agent (e.g. gnubg:0ply) instead of itself; only the "
                               "model's own turns are candidates")
    add_device(generate)
    add_threads(generate)
    generate.add_argument("--no-progress", action="store_true")
    add_executor_arguments(generate, work_dir=False)
    relabel = actions.add_parser("relabel", help="label an existing dataset's positions again")
    add_source_arguments(relabel, "the dataset whose positions are labelled (DIR@N: its first N shards only; "
                         "DIR@A:B: its shards A to B-1)",
                         f"model that labels (default {DEFAULT_TEACHER}, as for generate)", "ply:1")
    add_executor_arguments(relabel, work_dir=False)
    plays = actions.add_parser("plays", help="the positions after the plays a teacher ranks, labelled")
    add_source_arguments(plays, "the dataset whose positions' plays are taken (DIR@N: its first N shards only; "
                         "DIR@A:B: its shards A to B-1)",
                         f"model that ranks the plays and labels (default {DEFAULT_TEACHER})", "ply:0")
    plays.add_argument("--top", type=int, default=6, help="best plays kept per position (by the model's 0-ply)")
    plays.add_argument("--others", type=float, default=3.0, help="about this many of the other plays kept, drawn")
    plays.add_argument("--rival", metavar="AGENT", default=None,
                       help="keep only the move choices where this agent (e.g. gnubg:0ply) plays otherwise than "
                            "the model's 0-ply, with the agent's play among the kept ones")
    add_seed(plays)
    add_executor_arguments(plays, work_dir=False)
    select = actions.add_parser("select", help="the positions where a dataset's label and its 0-ply disagree")
    select.add_argument("source", help="a dataset labelled at 1-ply or deeper")
    select.add_argument("--out", required=True, help="prefix of the new datasets (PREFIX-0, PREFIX-1, ...; "
                        "PREFIX itself with --parts 1)")
    select.add_argument("--against", help="a relabelling of SOURCE by another teacher: compare the two labels "
                        "instead of the label and its 0-ply")
    select.add_argument("--threshold", type=float, default=0.03, help="cubeless equity difference kept")
    select.add_argument("--keep", type=float, default=0.15, help="probability of keeping any other position")
    select.add_argument("--parts", type=int, default=2, help="datasets written, one for each relabelling process")
    select.add_argument("--shard-size", type=int, default=5000)
    add_seed(select)
    info = actions.add_parser("info", help="summarise a dataset")
    info.add_argument("directory")
    info.add_argument("--json", action="store_true", help="print the manifest")


def add_source_arguments(parser: argparse.ArgumentParser, source_help: str, model_help: str, labeller: str) -> None:
    """What ``relabel`` and ``plays`` share: a source dataset, the new one's directory, the teacher, its
    labeller, the kinds kept, device, threads and progress."""
    parser.add_argument("source", help=source_help)
    parser.add_argument("--out", required=True, help="directory of the new dataset")
    parser.add_argument("--model", default=DEFAULT_TEACHER, help=model_help)
    parser.add_argument("--labeller", default=labeller, help=f"{LABELLER_HELP} (default {labeller})")
    parser.add_argument("--kinds", default="", metavar="KIND[,KIND...]",
                        help="keep only positions of these kinds (contact, crashed, race); default: all")
    add_device(parser)
    add_threads(parser)
    parser.add_argument("--no-progress", action="store_true")


def run(args: argparse.Namespace) -> int:

    from bgtrain.datasets import read_manifest
    from bgtrain.datasets.shards import verify_shards

    if args.action == "info":
        manifest = read_manifest(args.directory)
        verify_shards(args.directory, manifest)  # what the manifest claims: each shard's size and sha256
        if args.json:
            print(json.dumps(manifest, indent=1, sort_keys=True))
            return 0
        kinds: dict[str, int] = {}
        for shard in manifest["shards"]:
            for kind, count in shard["kinds"].items():
                kinds[kind] = kinds.get(kind, 0) + count
        labelled = sum(shard["positions"] for shard in manifest["shards"])
        seconds = sum(shard["label_seconds"] for shard in manifest["shards"])
        print(f"{args.directory}: {labelled:,} positions in {len(manifest['shards'])} of "
              f"{manifest['shards_planned']} shards; labeller {manifest['labeller']}; source {manifest['source_model']}")
        opponent = manifest.get("settings", {}).get("opponent")
        if opponent:
            print(f"games: the source model against {opponent}, its own turns")
        print("kinds: " + ", ".join(f"{kind} {count:,}" for kind, count in sorted(kinds.items())))
        if seconds:
            print(f"selection and labelling: {seconds:,.1f} s, {labelled / seconds:,.1f} positions/s")
        return 0

    if args.action == "select":
        from bgtrain.datasets.selection import SelectionSettings, part_directories, select_disagreements

        settings = SelectionSettings(args.threshold, args.keep, args.parts, args.shard_size, args.seed)
        manifests = select_disagreements(args.source, args.out, settings, args.against)
        written = ", ".join(f"{manifest['positions']:,} in {name}" for manifest, name in
                            zip(manifests, part_directories(args.out, args.parts)))
        views = "its 0-ply" if args.against is None else f"the labels of {args.against}"
        print(f"dataset: the positions of {args.source} where its label and {views} disagree: {written}")
        return 0

    from bgtrain.arena.specs import make_agent
    from bgtrain.datasets.generate import GenerationSettings, generate_dataset
    from bgtrain.datasets.labellers import GnubgLabeller, PlyLabeller, labeller_from_spec
    from bgtrain.values.evaluator import Evaluator

    apply_threads(args)
    if args.action in ("relabel", "plays"):
        from bgtrain.datasets.plays import PlaySelection
        from bgtrain.datasets.relabel import relabel_dataset

        kinds = tuple(kind.strip() for kind in args.kinds.split(",") if kind.strip())
        plays = PlaySelection(args.top, args.others, args.seed, args.rival) if args.action == "plays" else None
        from bgtrain.datasets.shards import dataset_spec

        # A missing or foreign source: its error before the model loads.
        rules = read_manifest(dataset_spec(args.source)[0])["rules"]
        labeller = labeller_from_spec(args.labeller, args.model, args.device)
        if isinstance(labeller, GnubgLabeller) and plays is not None:
            raise ValueError(f"dataset plays: --labeller {args.labeller}: the labeller's model picks the plays; "
                             "take them with ply:0, then relabel that dataset with gnubg")
        check_rules(labeller, rules, args)
        if args.executor == "process" and args.address is None:
            manifest = relabel_dataset(args.out, args.source, labeller, kinds, progress=not args.no_progress,
                                       plays=plays)
        else:
            from bgtrain.distributed.datasets import relabel_dataset_distributed

            executor = executor_from_args(args)
            try:
                manifest = relabel_dataset_distributed(args.out, args.source, args.model, labeller.describe(), kinds,
                                                       plays, executor, progress=not args.no_progress)
            finally:
                executor.close()
        taken = "the plays of the positions" if plays is not None else "positions"
        print(f"dataset: {args.out} ({manifest['positions']:,} {taken} of {args.source} in "
              f"{len(manifest['shards'])} shards, labelled by {args.labeller} of {args.model})")
        return 0
    settings = GenerationSettings(
        positions=args.positions, shard_size=args.shard_size, seed=args.seed, games_in_parallel=args.games,
        epsilon=args.epsilon, temperature=args.temperature, sample_rate=args.sample_rate,
        select_ply=args.select_ply, select_threshold=args.select_threshold, keep_agreeing=args.keep_agreeing,
        kinds=tuple(kind.strip() for kind in args.kinds.split(",") if kind.strip()), opponent=args.opponent.strip(),
    )
    evaluator = Evaluator.from_path(args.model, args.device)
    if settings.opponent:
        make_agent(settings.opponent, evaluator.rules)  # an unknown agent: its one-line error, now
    kind, _, argument = args.labeller.partition(":")
    if kind == "ply" and argument.isdigit():
        labeller = PlyLabeller(evaluator, int(argument), args.model)  # shares the self-play evaluator
    else:
        labeller = labeller_from_spec(args.labeller, args.model, args.device)
    check_rules(labeller, evaluator.rules.name, args)
    if args.executor == "process" and args.address is None:
        manifest = generate_dataset(args.out, evaluator, labeller, settings, args.model,
                                    progress=not args.no_progress)
    else:
        from bgtrain.distributed.datasets import generate_dataset_distributed

        executor = executor_from_args(args)
        try:
            manifest = generate_dataset_distributed(args.out, args.model, labeller.describe(), settings, args.model,
                                                    executor, progress=not args.no_progress)
        finally:
            executor.close()
    print(f"dataset: {args.out} ({manifest['positions']:,} positions in {len(manifest['shards'])} shards)")
    return 0


def check_rules(labeller, rules: str, args: argparse.Namespace) -> None:
    """GNU Backgammon labels the boards of standard backgammon and nackgammon only."""
    from bgtrain.datasets.labellers import GnubgLabeller

    if isinstance(labeller, GnubgLabeller) and rules not in ("backgammon", "nackgammon"):
        raise ValueError(f"dataset {args.action}: --labeller {args.labeller} labels backgammon and nackgammon "
                         f"positions, not {rules!r}")
