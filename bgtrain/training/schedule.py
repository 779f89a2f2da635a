"""The learning-rate schedules and the loss, shared by both training methods.

TD self-play measures progress in games played (``[train]``), supervised training in optimizer steps
(``[supervised]``); both decay by the same formulas (``cosine_decay``, ``linear_decay``). The loss
compares predicted and target outcome probabilities: ``bce`` (cross-entropy of each of the five
probabilities) or ``mse``.
"""

from __future__ import annotations

import math

import torch


def cosine_decay(base: float, final_fraction: float, progress: float) -> float:
    """From ``base`` at progress 0 down to ``base * final_fraction`` at progress 1, along half a cosine."""
    return base * (final_fraction + (1 - final_fraction) * 0.5 * (1 + math.cos(math.pi * progress)))


def linear_decay(base: float, final_fraction: float, progress: float) -> float:
    """From ``base`` at progress 0 down to ``base * final_fraction`` at progress 1, in a straight line."""
    return base * (1 - (1 - final_fraction) * progress)


def td_learning_rate(config, games: int) -> float:
    """The learning rate of TD self-play after ``games`` games (``[train]``: a warm-up, then
    ``lr_schedule`` = constant, linear, cosine or inverse_sqrt over ``total_games``)."""
    train = config.train
    base = train.learning_rate
    if train.lr_warmup_games and games < train.lr_warmup_games:
        return base * games / train.lr_warmup_games
    progress = min(1.0, games / train.total_games)
    if train.lr_schedule == "linear":
        return linear_decay(base, train.lr_final_fraction, progress)
    if train.lr_schedule == "cosine":
        return cosine_decay(base, train.lr_final_fraction, progress)
    if train.lr_schedule == "inverse_sqrt":
        return base / math.sqrt(1 + games / train.lr_decay_games)
    return base


def supervised_learning_rate(config, step: int, steps_per_epoch: int) -> float:
    """The learning rate of supervised training at optimizer ``step`` (``[supervised]``: constant,
    cosine over every epoch's steps, or ``step``: times ``lr_step_factor`` every ``lr_step_epochs``)."""
    supervised = config.supervised
    base = supervised.learning_rate
    if supervised.lr_schedule == "cosine":
        progress = min(1.0, step / max(1, supervised.epochs * steps_per_epoch))
        return cosine_decay(base, supervised.lr_final_fraction, progress)
    if supervised.lr_schedule == "step":
        return base * supervised.lr_step_factor ** ((step // max(1, steps_per_epoch)) // supervised.lr_step_epochs)
    return base


def loss_function(name: str):
    """``loss(predicted, target, reduction="mean")`` for the config's ``loss`` name (``bce`` or ``mse``)."""
    if name == "bce":
        return torch.nn.functional.binary_cross_entropy
    return torch.nn.functional.mse_loss
