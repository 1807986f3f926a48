"""Chapter 1's checkers accept the reference answers and reject wrong ones with a useful hint."""

from __future__ import annotations

import pytest
import torch

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
    from tx import DecoderLayer, LayerConfig

    assert ch01._changed_by_memory(DecoderLayer(LayerConfig(d_model=8, n_heads=2, d_ff=16))) == {"cross_attn", "feed_forward"}


# ----------------------------------------------------------------- where do layers share a weight?


def find_shared(layers):
    seen = {}  # id of each tensor -> (layer, name) where it was first met
    for i, layer in enumerate(layers):
        for name, p in layer.named_parameters():
            if id(p) in seen:
                return seen[id(p)], (i, name)
            seen[id(p)] = (i, name)
    return None


def test_sharing_accepts_identity_comparison(capsys):
    ch01.check_find_shared(find_shared)
    assert capsys.readouterr().out.startswith("Correct:")


def test_sharing_accepts_any_shared_place_in_either_order():
    def last_pair_reversed(layers):
        found = None
        places = [dict(layer.named_parameters()) for layer in layers]
        for i, a in enumerate(places):
            for j, b in enumerate(places):
                for name_i, p in a.items():
                    for name_j, q in b.items():
                        if i != j and p is q:
                            found = [[j, name_j], (i, name_i)]  # lists are fine too
        return found

    ch01.check_find_shared(last_pair_reversed)


def pairs(layers):
    return [(i, j) for i in range(len(layers)) for j in range(i + 1, len(layers))]


def by_value(layers):
    for i, j in pairs(layers):
        for (a, p), (b, q) in zip(layers[i].named_parameters(), layers[j].named_parameters()):
            if torch.equal(p, q):
                return (i, a), (j, b)
    return None


def same_names_only(layers):
    for i, j in pairs(layers):
        other = dict(layers[j].named_parameters())
        for name, p in layers[i].named_parameters():
            if other[name] is p:
                return (i, name), (j, name)
    return None


def neighbours_only(layers):
    return next(((i, a), (i + 1, b)) for i in range(len(layers) - 1)
                for a, p in layers[i].named_parameters()
                for b, q in layers[i + 1].named_parameters() if p is q) if _any(layers, 1) else None


def _any(layers, gap):
    return any(p is q for i in range(len(layers) - gap)
               for p in layers[i].parameters() for q in layers[i + gap].parameters())


def first_against_the_rest(layers):
    for j in range(1, len(layers)):
        for a, p in layers[0].named_parameters():
            for b, q in layers[j].named_parameters():
                if p is q:
                    return (0, a), (j, b)
    return None


def through_the_stack(layers):
    # stack.parameters() lists a shared tensor once, so [layer, layer] looks like one layer
    names = [name for name, _ in layers.named_parameters()]
    return None if len(names) == len(set(id(p) for p in layers.parameters())) else names[:2]


def one_based(layers):
    found = find_shared(layers)
    return found and tuple((i + 1, name) for i, name in found)


def layer_twice(layers):
    found = find_shared(layers)
    return found and (found[0], (found[0][0], found[1][1]))


@pytest.mark.parametrize("wrong, hint", [
    (lambda layers: None, "same layer appears twice"),
    (lambda layers: ((0, "self_attn.w_q.weight"), (1, "self_attn.w_q.weight")), "built on its own"),
    (lambda layers: find_shared(layers) is None, "not only whether"),
    (lambda layers: "yes", "return None, or the two places"),
    (lambda layers: find_shared(layers) and (0, 1), "return None, or the two places"),
    (lambda layers: find_shared(layers) and ((0, 1), (1, 2)), "the names are strings"),
    (lambda layers: find_shared(layers) and ((0, "w_q"), (1, "w_q")), "named_parameters"),
    (through_the_stack, "same layer appears twice"),
    (by_value, "compare by identity"),
    (same_names_only, "not only those of the same name"),
    (neighbours_only, "not only neighbours"),
    (first_against_the_rest, "not only layer 0 with the others"),
    (one_based, "numbered 0 to"),
    (layer_twice, "named layer 0 twice"),
])
def test_sharing_rejects_wrong_answers(wrong, hint):
    with pytest.raises(AssertionError, match=hint):
        ch01.check_find_shared(wrong)


def test_sharing_catches_a_single_tied_tensor():
    def whole_layers_only(layers):
        ids = [id(layer) for layer in layers]
        twice = next((j for j in range(len(ids)) if ids[j] in ids[:j]), None)
        if twice is None:
            return None
        name = next(iter(dict(layers[0].named_parameters())))
        return (ids.index(ids[twice]), name), (twice, name)

    with pytest.raises(AssertionError, match="one weight matrix is shared"):
        ch01.check_find_shared(whole_layers_only)
