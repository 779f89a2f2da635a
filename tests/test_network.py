"""The value network: shapes, rebuilding from its arguments, the fast path against the plain one."""

from __future__ import annotations

import json

import pytest
import torch
from helpers import random_boards

from bgtrain.model.encoding import ENCODERS
from bgtrain.model.network import ACTIVATIONS, ValueNetwork
from engine.rules import STANDARD, Rules


@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
@pytest.mark.parametrize("encoder", sorted(ENCODERS))
def test_shapes_and_range(encoder: str, activation: str) -> None:
    torch.manual_seed(0)
    net = ValueNetwork(encoder=encoder, hidden=[24, 12], activation=activation)
    boards = random_boards(64, seed=1)
    probs = net(boards)
    assert probs.shape == (64, 5) and probs.dtype == torch.float32
    assert ((probs > 0) & (probs < 1)).all()
    assert torch.allclose(net.evaluate(boards), probs.detach(), atol=1e-5)


def test_a_compound_activation_applies_its_first_after_the_first_layer_and_its_second_after_the_others() -> None:
    torch.manual_seed(0)
    net = ValueNetwork(encoder="tesauro198", hidden=[24, 12, 8], activation="sigmoid-relu")
    boards = random_boards(64, seed=1)
    hidden = torch.sigmoid(net.hidden_layers[0](net.encoder.encode(boards, STANDARD)))
    for layer in net.hidden_layers[1:]:
        hidden = torch.relu(layer(hidden))
    expected = torch.sigmoid(net.output_layer(hidden))
    torch.testing.assert_close(net(boards), expected, rtol=0, atol=0)
    torch.testing.assert_close(net.evaluate(boards), expected.detach(), rtol=0, atol=1e-6)
    assert ValueNetwork.from_args(net.model_args()).layer_activation_names == ("sigmoid", "relu")
    for name in ("sigmoid-softmax", "sigmoid-", "-relu"):
        with pytest.raises(ValueError, match=f"unknown activation '{name}'"):
            ValueNetwork(hidden=[8, 4], activation=name)


def test_initial_weights_are_random_and_outputs_near_priors() -> None:
    torch.manual_seed(0)
    net = ValueNetwork()
    first = net.hidden_layers[0].weight
    assert first.std() > 0.01 and net.output_layer.weight.abs().sum() > 0
    # Different hidden units see the start position differently.
    hidden = torch.sigmoid(net.hidden_layers[0](net.encoder.encode(STANDARD.start_board()[None], STANDARD)))
    assert hidden.std() > 0.01
    probs = net.evaluate(random_boards(500, seed=2)).mean(0)
    assert probs[0].item() == pytest.approx(0.5, abs=0.2)
    assert probs[2].item() < 0.1 and probs[4].item() < 0.1


def test_model_args_round_trip() -> None:
    torch.manual_seed(0)
    net = ValueNetwork(encoder="tesauro_plus", hidden=[30, 20], activation="silu")
    args = json.loads(json.dumps(net.model_args()))  # plain data, storable anywhere
    assert args == {"encoder": "tesauro_plus", "encoder_version": 1, "hidden": [30, 20], "activation": "silu"}
    rebuilt = ValueNetwork.from_args(args)
    rebuilt.load_state_dict(net.state_dict())
    boards = random_boards(100, seed=3)
    assert torch.equal(rebuilt(boards), net(boards))
    assert rebuilt.model_args() == args


def test_from_args_rejects_another_encoder_version() -> None:
    args = ValueNetwork().model_args()
    args["encoder_version"] += 1
    with pytest.raises(ValueError, match="version"):
        ValueNetwork.from_args(args)


def test_evaluate_equals_forward_and_follows_weight_updates() -> None:
    torch.manual_seed(0)
    net = ValueNetwork(hidden=[40])
    boards = torch.cat((random_boards(1000, seed=4), random_boards(100, seed=5, in_hand=True)))
    assert torch.allclose(net.evaluate(boards), net(boards).detach(), atol=1e-5)
    assert not net.evaluate(boards).requires_grad

    # An optimizer step changes the weights in place: the cached table must follow.
    for optimizer in (torch.optim.Adam(net.parameters(), lr=0.1), torch.optim.SGD(net.parameters(), lr=1.0)):
        before = net.evaluate(boards)
        net(boards).square().mean().backward()
        optimizer.step()
        optimizer.zero_grad()
        after = net.evaluate(boards)
        assert not torch.allclose(after, before, atol=1e-4)
        assert torch.allclose(after, net(boards).detach(), atol=1e-5)

    # So must loading other weights.
    other = ValueNetwork(hidden=[40])
    net.load_state_dict(other.state_dict())
    assert torch.allclose(net.evaluate(boards), other(boards).detach(), atol=1e-5)


def test_evaluate_under_other_rules() -> None:
    short = Rules(name="short", start_points=((6, 4), (8, 3), (13, 3)))
    net = ValueNetwork(hidden=[16])
    boards = random_boards(200, seed=6, rules=short)
    assert torch.allclose(net.evaluate(boards, short), net(boards, short).detach(), atol=1e-5)
    # borne-off counts depend on the rules, so the outputs do too
    assert not torch.allclose(net.evaluate(boards, short), net.evaluate(boards, STANDARD))


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="activation"):
        ValueNetwork(activation="gelu")
    with pytest.raises(ValueError, match="hidden"):
        ValueNetwork(hidden=[])
    with pytest.raises(ValueError, match="encoder"):
        ValueNetwork(encoder="nope")


def test_evaluate_flipped_equals_evaluating_the_flipped_board():
    from engine.board import flip_board

    boards = random_boards(400, seed=21)
    for encoder in ("tesauro198", "tesauro_plus"):
        network = ValueNetwork(encoder, [24])
        expected = network.evaluate(flip_board(boards))
        assert torch.allclose(network.evaluate_flipped(boards), expected, atol=1e-6)
        # The flipped table follows weight changes like the plain one.
        with torch.no_grad():
            network.hidden_layers[0].weight.mul_(1.5)
        assert torch.allclose(network.evaluate_flipped(boards), network.evaluate(flip_board(boards)), atol=1e-6)
