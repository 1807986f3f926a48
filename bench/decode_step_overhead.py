"""Where a cached decoding step's time goes at the book's size: arithmetic or Python.

Times one cached step of ``Transformer.decode`` (one new token for a batch of 8, with 30
positions already in the cache) against the same tensor operations written as one flat
function of plain ``torch.nn.functional`` calls, with the weights fetched beforehand.
Both run the same ~65 tensor operations and give the same logits (checked); the
difference is what tx's modules, helper functions and checks cost in Python per step.
This is a measurement, not a second implementation: tx decodes with its modules only.

    python bench/decode_step_overhead.py
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

import tx


def flat_step(model: tx.Transformer, cache: tx.DecoderCache, memory_mask: torch.Tensor):
    """Build step(tokens [B, 1], t) -> logits [B, 1, V]: the decoder for one token, post-LN, eval mode."""
    cfg = model.config
    H, D = cfg.n_heads, cfg.d_model
    layers = []
    for layer, own, cross in zip(model.decoder.layers, cache.self_attn, cache.cross_attn):
        sa, ca, ff = layer.self_attn, layer.cross_attn, layer.feed_forward
        layers.append((
            torch.cat([sa.w_q.weight, sa.w_k.weight, sa.w_v.weight]), torch.cat([sa.w_q.bias, sa.w_k.bias, sa.w_v.bias]),
            sa.w_o.weight, sa.w_o.bias, ca.w_q.weight, ca.w_q.bias, ca.w_o.weight, ca.w_o.bias,
            ff.linear1.weight, ff.linear1.bias, ff.linear2.weight, ff.linear2.bias,
            [(r.norm.weight, r.norm.bias) for r in (layer.residual1, layer.residual2, layer.residual3)],
            own, cross,
        ))
    emb, pe, scale = model.tgt_embed.token.weight, model.tgt_embed.pe, model.tgt_embed.scale
    out_w, out_b = model.generator.weight, model.generator.bias

    def step(tokens: torch.Tensor, t: int) -> torch.Tensor:
        B = tokens.size(0)
        x = F.embedding(tokens, emb) * scale + pe[t : t + 1]
        for w_qkv, b_qkv, w_o, b_o, c_q, cb_q, c_o, cb_o, w1, b1, w2, b2, norms, own, cross in layers:
            q, k, v = F.linear(x, w_qkv, b_qkv).view(B, 1, 3 * H, D // H).transpose(1, 2).chunk(3, dim=1)
            own.k[:, :, t : t + 1] = k
            own.v[:, :, t : t + 1] = v
            z = F.scaled_dot_product_attention(q, own.k[:, :, : t + 1], own.v[:, :, : t + 1])
            x = F.layer_norm(x + F.linear(z.transpose(1, 2).reshape(B, 1, D), w_o, b_o), (D,), *norms[0])
            q = F.linear(x, c_q, cb_q).view(B, 1, H, D // H).transpose(1, 2)
            z = F.scaled_dot_product_attention(q, cross.k, cross.v, attn_mask=memory_mask)
            x = F.layer_norm(x + F.linear(z.transpose(1, 2).reshape(B, 1, D), c_o, cb_o), (D,), *norms[1])
            x = F.layer_norm(x + F.linear(F.linear(x, w1, b1).relu(), w2, b2), (D,), *norms[2])
        return F.linear(x, out_w, out_b)

    return step


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    torch.manual_seed(0)
    vocab, B, t = 300, 8, 30
    model = tx.Transformer(vocab, vocab, d_model=128, n_heads=4, n_layers=2, d_ff=256, dropout=0.0, max_len=65).eval()
    src, tokens = torch.randint(4, vocab, (B, 20)), torch.randint(4, vocab, (B, 1))
    with torch.inference_mode():
        memory = model.encode(src)
        cache = model.new_cache(64)
        for _ in range(t):  # fill the cache up to position t
            model.decode(memory, src, tokens, cache)

        def modular() -> torch.Tensor:
            for c in cache.self_attn:
                c.length = t  # rewind, so that every timed step writes position t again
            return model.decode(memory, src, tokens, cache)

        flat = flat_step(model, cache, cache.src_mask)
        torch.testing.assert_close(flat(tokens, t), modular(), atol=1e-5, rtol=1e-5)
        runs = {"tx modules": modular, "flat functional": lambda: flat(tokens, t)}
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(args.rounds):  # interleaved; the best of each is the least disturbed
            for name, run in runs.items():
                t0 = time.perf_counter()
                for _ in range(args.steps):
                    run()
                best[name] = min(best[name], (time.perf_counter() - t0) / args.steps)
    print(f"one cached step, batch {B}, {t} cached positions, threads={torch.get_num_threads()}")
    for name, seconds in best.items():
        print(f"{name:16s} {seconds * 1e6:7.1f} us")
    print(f"Python overhead of the modules: {best['tx modules'] / best['flat functional'] - 1:.0%} on top of the flat step")


if __name__ == "__main__":
    main()
