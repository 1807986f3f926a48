"""Checkers for chapter 1, A high-level look: the parts of the model and how they connect.

Axes: B batch, S source length, T target length, D d_model, F d_ff.
"""

from __future__ import annotations

import copy
from typing import Any, Callable

import torch
from torch import nn

from . import CheckFailed, call, forbidding, keeps_random_state, passed
from ..layers import FeedForward
from ..multi_head import MultiHeadAttention
from ..decoder import DecoderLayer
from ..encoder import Encoder, EncoderLayer

__all__ = ["check_encoder_layer_params", "check_memory_sublayer", "check_layers_share_no_weights"]


def _count(module: nn.Module) -> int:
    """Parameters of ``module``, each shared tensor counted once."""
    return sum(p.numel() for p in module.parameters())


@keeps_random_state
def check_encoder_layer_params(fn: Callable[[int, int], Any]) -> None:
    """``fn(d_model, d_ff)`` must give the parameter count of one :class:`~tx.encoder.EncoderLayer`."""
    for d_model, d_ff, n_heads in ((4, 8, 2), (6, 10, 3), (128, 256, 4), (512, 2048, 8)):
        layer = EncoderLayer(d_model, n_heads, d_ff)
        expected = _count(layer)
        with forbidding([(EncoderLayer, "__init__"), (MultiHeadAttention, "__init__"), (FeedForward, "__init__")],
                        "count from a formula; building the layer is what the exercise asks you to do without."):
            got = call(fn, d_model, d_ff)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = got.item()
        if isinstance(got, float) and got.is_integer():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool):
            raise CheckFailed(f"return a whole number of parameters, got {type(got).__name__} {got!r}.")
        if got == expected:
            continue
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
    passed("one encoder layer has 4(D² + D) + (2·D·F + F + D) + 4D parameters; the paper's has 3,152,384.")


def _reads_memory(layer: DecoderLayer) -> set[str]:
    """Names of the sub-layers of ``layer`` that receive the encoder's output, found with hooks."""
    B, S, T, D = 1, 5, 3, layer.self_attn.d_model
    x, memory = torch.randn(B, T, D), torch.randn(B, S, D)  # [B, T, D], [B, S, D]
    readers: set[str] = set()
    handles = []
    for name, child in layer.named_children():
        def hook(module: nn.Module, args: tuple, kwargs: dict, name: str = name) -> None:
            if any(a is memory for a in (*args, *kwargs.values())):
                readers.add(name)
        handles.append(child.register_forward_pre_hook(hook, with_kwargs=True))
    try:
        with torch.no_grad():
            layer.eval()(x, memory)
    finally:
        for h in handles:
            h.remove()
    return readers


@keeps_random_state
def check_memory_sublayer(fn: Callable[[], Any]) -> None:
    """``fn()`` must name the attribute of :class:`~tx.decoder.DecoderLayer` that reads the encoder's output."""
    layer = DecoderLayer(8, 2, 16)
    children = [name for name, _ in layer.named_children()]
    got = call(fn)
    if not isinstance(got, str):
        raise CheckFailed(f"return the attribute's name as a string, one of {children}; got {type(got).__name__}.")
    if got not in children:
        raise CheckFailed(f"tx.DecoderLayer has no sub-layer named {got!r}; its sub-layers are {children}.")
    readers = _reads_memory(layer)
    if got in readers:
        passed(f"{got} takes its keys and values from the encoder's output (the memory [B, S, D]).")
        return
    hints = {
        "self_attn": "self_attn attends from the target positions to the target positions themselves.",
        "feed_forward": "the feed-forward network sees one position at a time and nothing else.",
    }
    hint = hints.get(got, f"{got} wraps a sub-layer in a residual connection and a LayerNorm; look at what it wraps.")
    raise CheckFailed(f"{hint} Which sub-layer is called with `memory` in tx.DecoderLayer.forward?")


@keeps_random_state
def check_layers_share_no_weights(fn: Callable[[nn.ModuleList], Any]) -> None:
    """``fn(layers)`` must say whether the layers of a stack hold separate parameter tensors."""
    torch.manual_seed(0)
    one = EncoderLayer(8, 2, 16)
    tied = nn.ModuleList([EncoderLayer(8, 2, 16), EncoderLayer(8, 2, 16)])
    tied[1].feed_forward.linear1.weight = tied[0].feed_forward.linear1.weight
    # Three layers, the first and the last sharing a bias: comparing only neighbours misses it.
    far = nn.ModuleList([EncoderLayer(8, 2, 16) for _ in range(3)])
    far[2].feed_forward.linear2.bias = far[0].feed_forward.linear2.bias
    # Three layers, the second and the third sharing a weight: comparing layer 0 with the others misses it.
    later = nn.ModuleList([EncoderLayer(8, 2, 16) for _ in range(3)])
    later[2].self_attn.w_o.weight = later[1].self_attn.w_o.weight
    cases = [
        ("the layers of tx.Encoder(3, 8, 2, 16)", Encoder(3, 8, 2, 16).layers, True,
         "each layer of tx.Encoder is built on its own, so no tensor is shared."),
        ("[layer, copy.deepcopy(layer)]", nn.ModuleList([one, copy.deepcopy(one)]), True,
         "the two layers hold equal values but separate tensors, so training changes them independently. "
         "Compare tensors by identity (`p is q`), not by value."),
        ("[layer, layer]", nn.ModuleList([one, one]), False,
         "the same layer appears twice, so every weight is shared. Note that stack.parameters() lists "
         "a shared tensor only once; compare each layer's own parameters."),
        ("two layers whose feed_forward.linear1.weight is one tensor", tied, False,
         "one weight matrix is shared between the layers; a single shared tensor is enough to answer False."),
        ("three layers, the first and the third sharing feed_forward.linear2.bias", far, False,
         "layers 0 and 2 share a tensor. Compare every layer with every other, not only neighbours."),
        ("three layers, the second and the third sharing self_attn.w_o.weight", later, False,
         "layers 1 and 2 share a tensor while layer 0 shares none. Compare every pair of layers, "
         "not only layer 0 with the others."),
    ]
    for what, layers, expected, why in cases:
        got = call(fn, layers)
        if isinstance(got, torch.Tensor) and got.numel() == 1:
            got = bool(got.item())
        if not isinstance(got, bool):
            raise CheckFailed(f"return True or False, got {type(got).__name__} {got!r}.")
        if got != expected:
            raise CheckFailed(f"for {what} you returned {got}, expected {expected}: {why}")
    passed("you can tell separate layers from shared ones; tx's encoder and decoder layers share nothing.")
