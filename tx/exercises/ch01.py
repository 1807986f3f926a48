"""Checkers for chapter 1, A high-level look: the parts of the model and how they connect.

Axes: B batch, S source length, T target length, D d_model, F d_ff.
"""

from __future__ import annotations

import copy
import operator
from typing import Any, Callable

import torch
from torch import nn

from . import CheckFailed, as_count, call, forbids, keeps_random_state, part, parts, passed, seeded
from ..config import LayerConfig
from ..layers import FeedForward
from ..multi_head import MultiHeadAttention
from ..decoder import DecoderLayer
from ..encoder import Encoder, EncoderLayer

__all__ = ["check_encoder_layer_params", "check_changed_by_memory", "check_find_shared"]

_SMALL = LayerConfig(d_model=8, n_heads=2, d_ff=16)  # the layers the checks build


def _count(module: nn.Module) -> int:
    """Parameters of ``module``, each shared tensor counted once."""
    return sum(p.numel() for p in module.parameters())


@forbids([(EncoderLayer, "__init__"), (MultiHeadAttention, "__init__"), (FeedForward, "__init__")],
"count from a formula; building the layer is what the exercise asks you to do without.")
@parts("small layers", "larger layers, the paper's included")
@keeps_random_state
def check_encoder_layer_params(fn: Callable[[int, int], Any]) -> None:
    """``fn(d_model, d_ff)`` must give the parameter count of one :class:`~tx.encoder.EncoderLayer`."""
    sizes = {  # (d_model, d_ff, n_heads)
        "small layers": ((4, 8, 2), (6, 10, 3)),
        "larger layers, the paper's included": ((128, 256, 4), (512, 2048, 8)),
    }
    for name, cases in sizes.items():
        with part(name):
            for d_model, d_ff, n_heads in cases:
                _check_encoder_layer_params(fn, d_model, d_ff, n_heads)
    passed("one encoder layer has 4(D² + D) + (2·D·F + F + D) + 4D parameters; the paper's has 3,152,384.")


def _check_encoder_layer_params(fn: Callable[[int, int], Any], d_model: int, d_ff: int, n_heads: int) -> None:
    layer = EncoderLayer(LayerConfig(d_model=d_model, n_heads=n_heads, d_ff=d_ff))
    expected = _count(layer)
    got = call(fn, d_model, d_ff)
    got = as_count(got, "return a whole number of parameters, got {kind} {got!r}.")
    if got == expected:
        return
    attn, ffn = _count(layer.self_attn), _count(layer.feed_forward)
    norms = expected - attn - ffn
    hint = ""
    if got == expected - norms:
        hint = " You left out the two LayerNorms: each has a gain and a bias of d_model entries."
    elif got == expected - 4 * d_model - d_ff - d_model:
        hint = " You left out the biases of the linear layers: every nn.Linear(n_in, n_out) adds n_out of them."
    elif got == expected - attn // 4:
        hint = " Self-attention has four d_model x d_model projections: W^Q, W^K, W^V and the output W^O."
    raise CheckFailed(
        f"for d_model={d_model}, d_ff={d_ff} you gave {got}, but tx.EncoderLayer has {expected} "
        f"parameters: self-attention {attn}, feed-forward {ffn}, LayerNorms {norms}.{hint}"
    )


_DECODER_SUBLAYERS = ("self_attn", "cross_attn", "feed_forward")


def _changed_by_memory(layer: DecoderLayer) -> set[str]:
    """Names of the sub-layers of ``layer`` whose output changes when only the memory does, found with hooks.

    The layer runs twice on one input y [B, T, D], with two different memories [B, S, D].
    """
    B, S, T, D = 1, 5, 3, layer.self_attn.d_model
    g = torch.Generator().manual_seed(1)
    y = torch.randn(B, T, D, generator=g)
    memories = [torch.randn(B, S, D, generator=g) for _ in range(2)]
    outputs: list[dict[str, torch.Tensor]] = []
    handles = []
    for name in _DECODER_SUBLAYERS:
        def hook(module: nn.Module, args: tuple, output: torch.Tensor, name: str = name) -> None:
            outputs[-1][name] = output
        handles.append(getattr(layer, name).register_forward_hook(hook))
    try:
        with torch.no_grad():
            for memory in memories:
                outputs.append({})
                layer.eval()(y, memory)
    finally:
        for h in handles:
            h.remove()
    first, second = outputs
    return {name for name in _DECODER_SUBLAYERS if not torch.allclose(first[name], second[name])}


@parts("the sub-layers a new memory changes")
@keeps_random_state
def check_changed_by_memory(fn: Callable[[], Any]) -> None:
    """``fn()`` must name the sub-layers of :class:`~tx.decoder.DecoderLayer` whose output a new memory changes,
    the layer's input staying the same."""
    with part("the sub-layers a new memory changes"):
        _check_changed_by_memory(fn)
    passed("the memory reaches cross_attn, which reads it, and feed_forward through cross_attn's output; "
           "self_attn sees only y. In the layer above, whose input this layer's output is, all three change.")


def _check_changed_by_memory(fn: Callable[[], Any]) -> None:
    got = call(fn)
    if isinstance(got, str):
        raise CheckFailed(f"return a set of names, such as {{{got!r}}}, even when it holds one name.")
    try:
        names = set(got)
    except TypeError:
        raise CheckFailed("return the names as a set of strings, such as {'self_attn'}; "
                          f"got {type(got).__name__}.") from None
    if not all(isinstance(n, str) for n in names):
        raise CheckFailed(f"return the names as a set of strings, such as {{'self_attn'}}; got {got!r:.80}.")
    unknown = sorted(names - set(_DECODER_SUBLAYERS))
    if unknown:
        raise CheckFailed(
            f"{', '.join(unknown)}: name sub-layers among {', '.join(_DECODER_SUBLAYERS)}. (residual1, 2 and 3 "
            "only add each sub-layer's input back and normalise; count the sub-layer they wrap.)"
        )
    changed = _changed_by_memory(DecoderLayer(_SMALL))
    if names == changed:
        return
    if "self_attn" in names:
        raise CheckFailed("self_attn reads only y, which stays the same: its queries, keys and values all come from "
                          "the English words, so a new memory leaves its output as it was.")
    if "cross_attn" not in names:
        raise CheckFailed("cross_attn takes its keys and values from the memory: new keys and values give it "
                          "something new to mix.")
    raise CheckFailed("feed_forward reads nothing but its own input, yet that input is c = LN(a + Attention(a, M, M)) "
                      "of the chapter's equation: what does the memory do to c?")


Place = tuple[int, str]  # (layer index, parameter name in that layer)


def _shared_places(layers: nn.ModuleList) -> set[frozenset[Place]]:
    """Every pair of places, in two different layers, that hold one tensor."""
    places: dict[int, list[Place]] = {}
    for i, layer in enumerate(layers):
        for name, p in layer.named_parameters():
            places.setdefault(id(p), []).append((i, name))
    return {frozenset((a, b)) for where in places.values() for a in where for b in where if a[0] != b[0]}


def _as_places(got: Any, n: int) -> tuple[Place, Place]:
    """The learner's answer as ((i, name_i), (j, name_j)), or CheckFailed saying what to return."""
    form = ("return None, or the two places of one shared tensor as ((i, name_i), (j, name_j)), such as "
            "((0, 'feed_forward.linear1.weight'), (1, 'feed_forward.linear1.weight'))")
    if isinstance(got, bool):
        raise CheckFailed(f"{form}; got {got}. Say where the sharing is, not only whether there is any.")
    try:
        (i, name_i), (j, name_j) = got
        i, j = operator.index(i), operator.index(j)
    except (TypeError, ValueError):
        raise CheckFailed(f"{form}; got {got!r:.120}.") from None
    if not (isinstance(name_i, str) and isinstance(name_j, str)):
        raise CheckFailed(f"{form}: the names are strings, as layer.named_parameters() gives them; got {got!r:.120}.")
    for k in (i, j):
        if not 0 <= k < n:
            raise CheckFailed(f"you named layer {k}, but the stack has {n} layers, numbered 0 to {n - 1}.")
    if i == j:
        raise CheckFailed(f"you named layer {i} twice: the two places must be in two different layers.")
    return (i, name_i), (j, name_j)


_WHOLE_LAYERS, _TIED, _FAR, _NAMES = ("whole layers: their own, copied or repeated", "one tied weight",
                                      "three layers: every pair compared", "one tensor under two names")


@parts(_WHOLE_LAYERS, _TIED, _FAR, _NAMES, drawn=True)
@keeps_random_state
def check_find_shared(fn: Callable[[nn.ModuleList], Any]) -> None:
    """``fn(layers)`` must return None when the layers of a stack hold separate parameter tensors, else
    ``((i, name_i), (j, name_j))``: two places in two layers that hold one tensor."""
    # The seed draws only the weights' values; which tensors are shared is fixed below.
    torch.manual_seed(seeded(0))
    one = EncoderLayer(_SMALL)
    tied = nn.ModuleList([EncoderLayer(_SMALL), EncoderLayer(_SMALL)])
    tied[1].feed_forward.linear1.weight = tied[0].feed_forward.linear1.weight
    # Three layers, the first and the last sharing a bias: comparing only neighbours misses it.
    far = nn.ModuleList([EncoderLayer(_SMALL) for _ in range(3)])
    far[2].feed_forward.linear2.bias = far[0].feed_forward.linear2.bias
    # Three layers, the second and the third sharing a weight: comparing layer 0 with the others misses it.
    later = nn.ModuleList([EncoderLayer(_SMALL) for _ in range(3)])
    later[2].self_attn.w_o.weight = later[1].self_attn.w_o.weight
    # One tensor under two names: comparing the same names only misses it.
    renamed = nn.ModuleList([EncoderLayer(_SMALL), EncoderLayer(_SMALL)])
    renamed[1].self_attn.w_k.weight = renamed[0].self_attn.w_q.weight
    cases = {
        # A stack that shares nothing comes with one that shares everything, so None alone earns nothing.
        _WHOLE_LAYERS: [
            ("the layers of a tx.Encoder of 3 layers", Encoder(_SMALL.replace(n_layers=3)).layers,
             "each layer of tx.Encoder is built on its own, so nothing is shared: return None."),
            ("[layer, copy.deepcopy(layer)]", nn.ModuleList([one, copy.deepcopy(one)]),
             "the two layers hold equal values but separate tensors, so training changes them independently "
             "and the answer is None."),
            ("[layer, layer]", nn.ModuleList([one, one]),
             "the same layer appears twice, so every weight is shared. Note that stack.parameters() lists "
             "a shared tensor only once; go through each layer's own named_parameters()."),
        ],
        _TIED: [
            ("two layers whose feed_forward.linear1.weight is one tensor", tied,
             "one weight matrix is shared between the layers; a single shared tensor is enough to name."),
        ],
        _FAR: [
            ("three layers, the first and the third sharing feed_forward.linear2.bias", far,
             "layers 0 and 2 share a tensor. Compare every layer with every other, not only neighbours."),
            ("three layers, the second and the third sharing self_attn.w_o.weight", later,
             "layers 1 and 2 share a tensor while layer 0 shares none. Compare every pair of layers, "
             "not only layer 0 with the others."),
        ],
        _NAMES: [
            ("two layers, layer 1's self_attn.w_k.weight being layer 0's self_attn.w_q.weight", renamed,
             "one tensor sits under two different names. Compare every parameter of one layer with every "
             "parameter of the other, not only those of the same name."),
        ],
    }
    for name, stacks in cases.items():
        with part(name):
            for what, layers, why in stacks:
                _check_find_shared(fn, what, layers, why)
    passed("you can find a shared tensor wherever it hides; tx's encoder and decoder layers share none.")


def _check_find_shared(fn: Callable[[nn.ModuleList], Any], what: str, layers: nn.ModuleList, why: str) -> None:
    shared = _shared_places(layers)
    got = call(fn, layers)
    if got is None:
        if shared:
            raise CheckFailed(f"for {what} you returned None, but a tensor is shared: {why}")
        return
    (i, name_i), (j, name_j) = _as_places(got, len(layers))
    try:
        p, q = layers[i].get_parameter(name_i), layers[j].get_parameter(name_j)
    except AttributeError as error:
        raise CheckFailed(f"for {what} you returned {got!r}: {error}. Use the names that "
                          "layer.named_parameters() gives.") from None
    if p is q:
        return  # any one shared tensor will do
    same = p.shape == q.shape and torch.equal(p, q)
    hint = (" They hold equal values, but they are two tensors: compare by identity (`p is q`, or id(p)), "
            "not by value.") if same else ""
    raise CheckFailed(f"for {what} you returned {got!r}, but layer {i}'s {name_i} and layer {j}'s "
                      f"{name_j} are separate tensors.{hint} Here {why}")
