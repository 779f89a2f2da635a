"""Export a checkpoint's network as one self-describing ONNX or TorchScript file.

    bgtrain export CKPT --format onnx -o model.onnx
    bgtrain export CKPT --format torchscript -o model.ts
    bgtrain export CKPT --format onnx -o bare.onnx --bare
    bgtrain export --variant dutch --format onnx -o dutch.onnx

Without CKPT, the ``--variant``'s shipped model is exported (``bgtrain.model.shipped``).

By default the file takes the raw position, int8[batch, 28] from the side to move, with the encoder
inside the graph, and returns probabilities float32[batch, 5] (WIN, WIN_GAMMON, WIN_BACKGAMMON,
LOSE_GAMMON, LOSE_BACKGAMMON for the side to move) and equity float32[batch]. --bare exports the
network alone, on the encoder's units float32[batch, size]. The encoder, the output contract, the
network shape and the training summary are embedded (ONNX metadata properties; the TorchScript extra
file bgtrain.json). docs/export.md documents the format. ONNX export needs pip install 'bgtrain[onnx]'.
"""

from __future__ import annotations

import argparse
import json

from bgtrain.commands import add_variant
from bgtrain.export import DEFAULT_FIRST_LAYER, FIRST_LAYERS, FORMATS, export_checkpoint
from bgtrain.files import check_output_file
from bgtrain.model.shipped import MODEL_HELP, shipped_model


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", metavar="CKPT", nargs="?", help=f"a bgtrain checkpoint (.pt; default {MODEL_HELP})")
    add_variant(parser, default=None, help="with no CKPT: export this variant's shipped model (default backgammon)")
    parser.add_argument("--format", required=True, choices=FORMATS, help="file format")
    parser.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write")
    parser.add_argument("--bare", action="store_true",
                        help="the network alone, taking the encoded inputs instead of the raw position")
    parser.add_argument("--first-layer", choices=FIRST_LAYERS,
                        help="how the graph computes the first layer (default: "
                        + ", ".join(f"{name} for {fmt}" for fmt, name in DEFAULT_FIRST_LAYER.items())
                        + "; all give the same numbers, see bgtrain/export.py)")


def run(args: argparse.Namespace) -> int:
    if args.bare and args.first_layer:
        raise ValueError("--first-layer applies to the encoder inside the graph; a --bare export has none")
    if args.checkpoint and args.variant:
        raise ValueError("give CKPT or --variant (its shipped model), not both")
    check_output_file(args.output, "-o")
    checkpoint = args.checkpoint or shipped_model(args.variant)
    metadata = export_checkpoint(checkpoint, args.output, args.format, args.bare, args.first_layer)
    counters = json.loads(metadata["training.counters"])
    print(f"wrote {args.output}: {args.format}, encoder {metadata['encoder.name']} v{metadata['encoder.version']}, "
          f"model {metadata['model']}, input {metadata['input']}, games trained {counters.get('games', '?')}")
    return 0
