"""Chapter 1's checkers accept the reference answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import pytest
from torch import nn

from tx.exercises import ch01


# ----------------------------------------------------------------- encoder layer parameters


def params_right(d_model, d_ff):
    return 4 * (d_model * d_model + d_model) + (2 * d_model * d_ff + d_ff + d_model) + 4 * d_model


def test_params_accepts_the_formula(capsys):
    ch01.check_encoder_layer_params(params_right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    (lambda d, f: params_right(d, f) - 4 * d, "LayerNorms"),
    (lambda d, f: params_right(d, f) - 5 * d - f, "biases"),
    (lambda d, f: params_right(d, f) - d * d - d, "W\\^O"),
    (lambda d, f: 2 * d * f, "tx.EncoderLayer has 172"),
    (lambda d, f: "172", "whole number"),
    (lambda d, f: sum(p.numel() for p in __import__("tx").EncoderLayer(d, 2, f).parameters()), "calls EncoderLayer.__init__"),
    (lambda d, f: 3_152_384, "tx.EncoderLayer has 172"),  # the paper's count, hard-coded
    (lambda d, f: params_right(d, f) + 0.5, "whole number"),
])
def test_params_rejects_wrong_counts(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch01.check_encoder_layer_params(wrong)


# ----------------------------------------------------------------- what a new memory changes


@pytest.mark.parametrize("right", [
    lambda: {"cross_attn", "feed_forward"}, lambda: ["feed_forward", "cross_attn"], lambda: ("cross_attn", "feed_forward"),
])
def test_changed_by_memory_accepts_cross_attn_and_feed_forward(right, capsys):
    ch01.check_changed_by_memory(right)
    assert capsys.readouterr().out.startswith("Correct:")


@pytest.mark.parametrize("wrong, hint", [
    ({"cross_attn"}, "what does the memory do to c"),  # the sub-layer that reads it, and no further
    ({"cross_attn", "feed_forward", "self_attn"}, "self_attn reads only y"),
    ({"self_attn", "cross_attn"}, "self_attn reads only y"),
    ({"feed_forward"}, "keys and values from the memory"),
    (set(), "keys and values from the memory"),
    ({"cross_attn", "residual3"}, "residual3: name sub-layers"),
    ({"encoder_attn"}, "encoder_attn: name sub-layers"),
    ("cross_attn", "even when it holds one name"),  # the old question's answer, a single name
    (1, "set of strings"),
    ({1, 2}, "set of strings"),
])
def test_changed_by_memory_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch01.check_changed_by_memory(lambda: wrong)


def test_changed_by_memory_is_found_by_running_a_layer():
    from tx import DecoderLayer

    assert ch01._changed_by_memory(DecoderLayer(8, 2, 16)) == {"cross_attn", "feed_forward"}


# ----------------------------------------------------------------- layers share no weights


def share_none(layers):
    seen = set()
    for layer in layers:
        own = {id(p) for p in layer.parameters()}
        if own & seen:
            return False
        seen |= own
    return True


def test_sharing_accepts_identity_comparison(capsys):
    ch01.check_layers_share_no_weights(share_none)
    assert capsys.readouterr().out.startswith("Correct:")


def by_value(layers):
    first = [p for p in layers[0].parameters()]
    return not any(all(bool((p == q).all()) for p, q in zip(first, layer.parameters())) for layer in layers[1:])


def neighbours_only(layers):
    return all(not ({id(p) for p in a.parameters()} & {id(p) for p in b.parameters()})
               for a, b in zip(layers, layers[1:]))


def first_against_the_rest(layers):
    first = {id(p) for p in layers[0].parameters()}
    return all(not (first & {id(p) for p in layer.parameters()}) for layer in layers[1:])


def dedup_count(layers):
    # stack.parameters() lists a shared tensor once, so [layer, layer] looks like one layer
    return len(list(layers.parameters())) == len(list(layers[0].parameters()))


@pytest.mark.parametrize("wrong, hint", [
    (lambda layers: True, "same layer appears twice"),
    (lambda layers: False, "built on its own"),
    (dedup_count, "built on its own"),
    (by_value, "by identity"),
    (lambda layers: "yes", "True or False"),
    (neighbours_only, "not only neighbours"),
    (first_against_the_rest, "not only layer 0 with the others"),
])
def test_sharing_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch01.check_layers_share_no_weights(wrong)


def test_sharing_catches_a_single_tied_tensor():
    def whole_layers_only(layers):
        return len({id(layer) for layer in layers}) == len(layers)

    with pytest.raises(AssertionError, match="one weight matrix is shared"):
        ch01.check_layers_share_no_weights(whole_layers_only)
