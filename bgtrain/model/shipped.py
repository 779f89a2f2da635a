"""The models we ship, one per rules variant: ``shipped_model(variant)`` is the checkpoint every command
(``bgtrain eval``, ``rollout``, ``play``, ``export``, and the ``shipped`` agent of ``bench`` and
``league``) plays with when it is given ``--variant`` and no model of its own.

Standard backgammon's is ``bgtrain-gen9-deep.pt``: generation 8 (``bgtrain-supervised.pt``, three networks a
phase) distilled into one network a phase (``bgtrain-distilled.pt``, about three times faster), re-distilled
from its own 1-ply and one step of expert iteration further (``bgtrain-iterated.pt``), taught by two
teachers at once, its own 1-ply and GNU Backgammon's (``bgtrain-two-teachers.pt``), three more such steps
(the last with a loss on the differences between a roll's plays), then by its own 2-ply
(``bgtrain-gen9.pt``), and last its contact network given a narrow second hidden layer (64 units) trained on
more 2-ply labels, its own and GNU Backgammon's (ahead of ``bgtrain-gen9.pt`` in games, at about its speed);
each other variant's is the TD self-play model ``bgtrain-<variant>.pt`` that ``configs/<variant>.toml`` trains
(lineage and measured strength in ``checkpoints/README.md``).
"""

from __future__ import annotations

from pathlib import Path

from engine.variants import get_rules

CHECKPOINTS = Path("checkpoints")
STANDARD_MODEL = CHECKPOINTS / "bgtrain-gen9-deep.pt"
# The variants with a model of their own; acey-deucey-single (the other reading of acey-deucey's pay) has none.
SHIPPED_VARIANTS = ("backgammon", "nackgammon", "hypergammon", "hypergammon2", "hypergammon1", "dutch", "acey-deucey",
                    "play-to-lose")


def shipped_model_name(variant: str | None = None) -> Path:
    """The shipped checkpoint of ``variant`` (None: standard backgammon), relative to the source checkout;
    a ValueError naming the variants that have one when it has none."""
    name = get_rules(variant or "backgammon").name
    if name not in SHIPPED_VARIANTS:
        raise ValueError(f"no model is shipped for variant {name!r} (shipped: {', '.join(SHIPPED_VARIANTS)}); "
                         "pass a model of your own")
    return STANDARD_MODEL if name == "backgammon" else CHECKPOINTS / f"bgtrain-{name}.pt"


def shipped_model(variant: str | None = None) -> Path:
    """``shipped_model_name(variant)`` in the working directory, else in the source checkout; a
    FileNotFoundError with one line when neither holds it."""
    relative = shipped_model_name(variant)
    for candidate in (relative, Path(__file__).resolve().parents[2] / relative):
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(f"no model: pass --model PATH (the default {relative} does not exist)")

MODEL_HELP = f"the --variant's shipped model: {STANDARD_MODEL} for backgammon, {CHECKPOINTS}/bgtrain-VARIANT.pt else"
