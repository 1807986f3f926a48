"""A reference model made of torch's own layers, and copying tx's weights into it.

nn.Embedding (scaled, plus the same sinusoids) + torch.nn.Transformer + nn.Linear: the
baseline tx is checked against (tests/test_model.py) and timed against (bench/).
"""

from __future__ import annotations

import math

import torch
from torch import nn

import tx


class TorchReference(nn.Module):
    """An encoder-decoder with tx's interface, built from torch.nn.Transformer (batch first)."""

    def __init__(self, src_vocab, tgt_vocab, d_model, n_heads, n_layers, d_ff, dropout=0.1,
                 max_len=256, pad_id=0, norm_first=False):
        super().__init__()
        self.src_embed, self.tgt_embed = nn.Embedding(src_vocab, d_model), nn.Embedding(tgt_vocab, d_model)
        self.register_buffer("pe", tx.positional_encoding(max_len, d_model))
        self.drop = nn.Dropout(dropout)
        self.core = nn.Transformer(d_model, n_heads, n_layers, n_layers, d_ff, dropout,
                                   batch_first=True, norm_first=norm_first)
        if not norm_first:
            # nn.Transformer always ends each stack with a LayerNorm; the paper's post-LN
            # layers already end in one, so tx has none there.
            self.core.encoder.norm = None
            self.core.decoder.norm = None
        self.generator = nn.Linear(d_model, tgt_vocab)
        self.scale, self.pad_id = math.sqrt(d_model), pad_id

    def forward(self, src, tgt):
        s = self.drop(self.src_embed(src) * self.scale + self.pe[: src.size(1)])
        t = self.drop(self.tgt_embed(tgt) * self.scale + self.pe[: tgt.size(1)])
        causal = nn.Transformer.generate_square_subsequent_mask(tgt.size(1), dtype=torch.bool)
        pad = src == self.pad_id  # torch's key_padding_mask: True = ignore (the opposite of tx)
        out = self.core(s, t, tgt_mask=causal, src_key_padding_mask=pad, memory_key_padding_mask=pad)
        return self.generator(out)


def copy_attention(ours: tx.MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    """Copy W^Q, W^K, W^V (stacked in torch's in_proj) and W^O."""
    with torch.no_grad():
        theirs.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        theirs.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        theirs.out_proj.weight.copy_(ours.w_o.weight)
        theirs.out_proj.bias.copy_(ours.w_o.bias)


def reference_from(model: tx.Transformer) -> TorchReference:
    """A TorchReference with every weight copied from ``model``."""
    c = model.config
    ref = TorchReference(c.src_vocab_size, c.tgt_vocab_size, c.d_model, c.n_heads, c.n_layers, c.d_ff,
                         c.dropout, c.max_len, c.pad_id, c.norm_first)
    sd = {
        "src_embed.weight": model.src_embed.token.weight, "tgt_embed.weight": model.tgt_embed.token.weight,
        "generator.weight": model.generator.weight, "generator.bias": model.generator.bias,
    }
    stacks = [("encoder", model.encoder, ref.core.encoder), ("decoder", model.decoder, ref.core.decoder)]
    for kind, ours, theirs in stacks:
        for layer, tl in zip(ours.layers, theirs.layers):
            copy_attention(layer.self_attn, tl.self_attn)
            if kind == "decoder":
                copy_attention(layer.cross_attn, tl.multihead_attn)
            residuals = [layer.residual1, layer.residual2] + ([layer.residual3] if kind == "decoder" else [])
            norms = [tl.norm1, tl.norm2] + ([tl.norm3] if kind == "decoder" else [])
            with torch.no_grad():
                for r, n in zip(residuals, norms):
                    n.weight.copy_(r.norm.weight)
                    n.bias.copy_(r.norm.bias)
                for name in ("linear1", "linear2"):
                    getattr(tl, name).weight.copy_(getattr(layer.feed_forward, name).weight)
                    getattr(tl, name).bias.copy_(getattr(layer.feed_forward, name).bias)
        if c.norm_first:
            with torch.no_grad():
                theirs.norm.weight.copy_(ours.norm.weight)
                theirs.norm.bias.copy_(ours.norm.bias)
    with torch.no_grad():
        for k, v in sd.items():
            ref.state_dict()[k].copy_(v)
    return ref
