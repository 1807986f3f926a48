"""Where a cached decoding step's time goes at the book's size: arithmetic or Python.

Times one cached step of ``Transformer.decode`` (one new token for a batch of 8, with 30
positions already in the cache) against the same tensor operations written as one flat
function of plain ``torch.nn.functional`` calls. Both give the same logits (checked); the
difference is what tx's modules, helper functions and checks cost in Python per step.
Then, to show where that cost sits, it puts back one part of the step at a time (the
embedding, each kind of sub-layer with its residual and norm, the output layer) through
tx's own modules, the rest staying flat.
This is a measurement, not a second implementation: tx decodes with its modules only.

    python bench/decode_step_overhead.py
"""

from __future__ import annotations

import argparse
import time
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor

import tx

PARTS = ("embedding", "self-attention", "cross-attention", "feed-forward", "output layer")


def hybrid_step(
    model: tx.Transformer, cache: tx.DecoderCache, memory: Tensor, memory_mask: Tensor, modular: set[str]
) -> Callable[[Tensor, int], Tensor]:
    """Build step(tokens [B, 1], t) -> logits [B, 1, V] for a post-LN model in eval mode.

    The parts named in ``modular`` run through tx's modules; the others as flat functional
    calls on weights fetched beforehand.
    """
    cfg = model.config
    H, D = cfg.n_heads, cfg.d_model
    emb, gen = model.tgt_embed, model.generator

    def layer_parts(layer: tx.DecoderLayer, own: tx.KVCache, cross: tx.KVCache) -> list[Callable[[Tensor, int], Tensor]]:
        sa, ca, ff = layer.self_attn, layer.cross_attn, layer.feed_forward
        w_qkv, b_qkv = torch.cat([sa.w_q.weight, sa.w_k.weight, sa.w_v.weight]), torch.cat([sa.w_q.bias, sa.w_k.bias, sa.w_v.bias])
        n1, n2, n3 = ((r.norm.weight, r.norm.bias) for r in (layer.residual1, layer.residual2, layer.residual3))
        sa_o, ca_q, ca_o = (sa.w_o.weight, sa.w_o.bias), (ca.w_q.weight, ca.w_q.bias), (ca.w_o.weight, ca.w_o.bias)
        ff1, ff2 = (ff.linear1.weight, ff.linear1.bias), (ff.linear2.weight, ff.linear2.bias)

        def self_attention(x: Tensor, t: int) -> Tensor:
            B = x.size(0)
            q, k, v = F.linear(x, w_qkv, b_qkv).view(B, 1, 3 * H, D // H).transpose(1, 2).chunk(3, dim=1)
            own.k[:, :, t : t + 1] = k
            own.v[:, :, t : t + 1] = v
            z = F.scaled_dot_product_attention(q, own.k[:, :, : t + 1], own.v[:, :, : t + 1])
            return F.layer_norm(x + F.linear(z.transpose(1, 2).reshape(B, 1, D), *sa_o), (D,), *n1)

        def cross_attention(x: Tensor, t: int) -> Tensor:
            B = x.size(0)
            q = F.linear(x, *ca_q).view(B, 1, H, D // H).transpose(1, 2)
            z = F.scaled_dot_product_attention(q, cross.k, cross.v, attn_mask=memory_mask)
            return F.layer_norm(x + F.linear(z.transpose(1, 2).reshape(B, 1, D), *ca_o), (D,), *n2)

        def feed_forward(x: Tensor, t: int) -> Tensor:
            return F.layer_norm(x + F.linear(F.linear(x, *ff1).relu(), *ff2), (D,), *n3)

        modules = {
            "self-attention": lambda x, t: layer.residual1(x, lambda y: sa(y, y, y, cache=own)),
            "cross-attention": lambda x, t: layer.residual2(x, lambda y: ca(y, memory, memory, memory_mask, cache=cross)),
            "feed-forward": lambda x, t: layer.residual3(x, ff),
        }
        flat = {"self-attention": self_attention, "cross-attention": cross_attention, "feed-forward": feed_forward}
        return [modules[p] if p in modular else flat[p] for p in ("self-attention", "cross-attention", "feed-forward")]

    layers = [layer_parts(*args) for args in zip(model.decoder.layers, cache.self_attn, cache.cross_attn)]
    w_emb, pe, scale = emb.token.weight, emb.pe, emb.scale
    w_out = (gen.weight, gen.bias)

    def step(tokens: Tensor, t: int) -> Tensor:
        x = emb(tokens, t) if "embedding" in modular else F.embedding(tokens, w_emb) * scale + pe[t : t + 1]
        for parts in layers:
            for part in parts:
                x = part(x, t)
        return gen(x) if "output layer" in modular else F.linear(x, *w_out)

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab, B, t = 300, 8, 30
    model = tx.Transformer(src_vocab_size=vocab, tgt_vocab_size=vocab, d_model=128, n_heads=4, n_layers=2, d_ff=256, dropout=0.0, max_len=65).eval()
    src, tokens = torch.randint(4, vocab, (B, 20)), torch.randint(4, vocab, (B, 1))
    with torch.inference_mode():
        memory = model.encode(src)
        cache = model.new_cache(64)
        for _ in range(t):  # fill the cache up to position t
            model.decode(memory, src, tokens, cache)

        def rewound(run: Callable[[], Tensor]) -> Callable[[], Tensor]:
            def again() -> Tensor:
                for c in cache.self_attn:
                    c.length = t  # every timed step writes position t again
                return run()
            return again

        def hybrid(modular: set[str]) -> Callable[[], Tensor]:
            step = hybrid_step(model, cache, memory, cache.src_mask, modular)
            return rewound(lambda: step(tokens, t))

        runs = {"flat functional": hybrid(set())}
        runs.update({f"+ {part} via modules": hybrid({part}) for part in PARTS})
        runs["all parts via modules"] = hybrid(set(PARTS))
        def in_loop() -> Tensor:
            # as greedy_decode and beam_search run a step: inside their one checked call
            with tx.checks.checked_once():
                return model.decode(memory, src, tokens, cache)

        runs["tx modules"] = rewound(in_loop)
        expected = runs["tx modules"]()
        for run in runs.values():
            torch.testing.assert_close(run(), expected, atol=1e-5, rtol=1e-5)
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(args.rounds):  # interleaved; the best of each is the least disturbed
            for name, run in runs.items():
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    run()
                best[name] = min(best[name], (time.perf_counter() - t0) / args.steps)
    flat = best["flat functional"]
    print(f"one cached step, batch {B}, {t} cached positions, threads={torch.get_num_threads()}")
    for name, seconds in best.items():
        print(f"{name:32s} {seconds * 1e6:7.1f} us  ({(seconds - flat) * 1e6:+6.1f})")
    print(f"Python overhead of the modules: {best['tx modules'] / flat - 1:.0%} on top of the flat step")


if __name__ == "__main__":
    main()
