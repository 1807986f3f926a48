"""tx.language_model: the decoder-only model, its causal mask, its cache and GPT-2 small's size."""

from __future__ import annotations

import pytest
import torch

import tx
from tx.config import LanguageModelConfig
from tx.language_model import LanguageModel, lm_mask


def tiny(**overrides) -> LanguageModel:
    return LanguageModel(LanguageModelConfig.small(17, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                                                   dropout=0.0, max_len=24, **overrides)).eval()


def test_gpt2_small_has_its_published_parameter_count():
    with torch.device("meta"):  # no memory, no time: only the shapes
        model = LanguageModel(LanguageModelConfig.gpt2_small())
    assert model.n_parameters() == 124_439_808
    assert model.lm_head.weight is model.embed.token.weight  # tied: counted once
    assert isinstance(model.layers.norm, torch.nn.LayerNorm)  # pre-LN ends with a final LayerNorm


def test_untied_adds_one_vocabulary_matrix():
    tied, untied = tiny(), tiny(tie_embeddings=False)
    assert untied.n_parameters() - tied.n_parameters() == 17 * 32


def test_block_is_an_encoder_layer_and_no_cross_attention():
    names = tiny().attention_layers()
    assert sorted(names) == ["layers.layers.0.self_attn", "layers.layers.1.self_attn"]


@pytest.mark.parametrize("norm_first", [True, False])
@pytest.mark.parametrize("positions", ["learned", "sinusoidal"])
def test_future_tokens_never_change_earlier_logits(norm_first, positions):
    model = tiny(norm_first=norm_first, positions=positions)
    x = torch.randint(1, 17, (2, 10))
    y = x.clone()
    y[:, 6:] = torch.randint(1, 17, (2, 4))
    assert not torch.equal(x, y)
    a, b = model(x), model(y)
    torch.testing.assert_close(a[:, :6], b[:, :6])
    assert not torch.allclose(a[:, 6:], b[:, 6:])  # the changed positions do change


def test_without_the_mask_a_position_sees_the_future():
    # The reason the mask is there: the same block with a full mask lets position 0 read position 5.
    model = tiny()
    x = torch.randint(1, 17, (1, 6))
    y = x.clone()
    y[0, 5] = (x[0, 5] % 16) + 1
    emb = model.embed(x), model.embed(y)
    full = torch.ones(6, 6, dtype=torch.bool)
    a, b = (model.layers(e, full) for e in emb)
    assert not torch.allclose(a[:, 0], b[:, 0])


def test_padding_on_either_side_never_changes_the_real_tokens_logits():
    model = tiny()
    x = torch.randint(1, 17, (1, 7))
    alone = model(x)
    left = model(torch.cat([torch.zeros(1, 3, dtype=torch.long), x], dim=1))[:, 3:]
    right = model(torch.cat([x, torch.zeros(1, 3, dtype=torch.long)], dim=1))[:, :7]
    torch.testing.assert_close(left, alone)
    torch.testing.assert_close(right, alone)


def test_cache_gives_the_same_logits_token_by_token():
    model = tiny()
    x = torch.cat([torch.zeros(2, 2, dtype=torch.long), torch.randint(1, 17, (2, 9))], dim=1)
    full = model(x)
    cache = model.new_cache()
    steps = [model(x[:, :4], cache)] + [model(x[:, t : t + 1], cache) for t in range(4, x.size(1))]
    torch.testing.assert_close(torch.cat(steps, dim=1), full)
    assert cache.length == x.size(1)


def test_encoder_without_cache_is_unchanged_and_with_caches_matches():
    enc = tx.Encoder(tx.LayerConfig(n_layers=2, d_model=16, n_heads=2, d_ff=32, dropout=0.0)).eval()
    x = torch.randn(2, 5, 16)
    mask = tx.causal_mask(5)
    full = enc(x, mask)
    caches = [tx.KVCache(8) for _ in range(2)]
    first = enc(x[:, :3], mask[:3, :3], caches)
    last = enc(x[:, 3:], mask[3:, :5], caches)
    torch.testing.assert_close(torch.cat([first, last], 1), full)
    with pytest.raises(ValueError, match="one KVCache per layer"):
        enc(x, mask, caches[:1])


def test_lm_mask_is_causal_and_hides_padding():
    real = torch.tensor([[False, True, True, True]])
    m = lm_mask(real, 2)  # the last two of four positions
    assert m.shape == (1, 1, 2, 4)
    assert m[0, 0].tolist() == [[False, True, True, False], [False, True, True, True]]


def test_learns_to_continue_a_pattern():
    torch.manual_seed(0)
    model = LanguageModel(LanguageModelConfig.small(8, d_model=32, n_heads=2, n_layers=1, d_ff=64, dropout=0.0))
    seq = torch.tensor([[1, 4, 5, 6, 7, 4, 5, 6, 7, 4, 5, 6]])
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        loss = torch.nn.functional.cross_entropy(model(seq[:, :-1])[0], seq[0, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1


def test_bad_input_gets_a_clear_error():
    model = tiny()
    with pytest.raises(TypeError, match="LanguageModelConfig"):
        LanguageModel({"vocab_size": 5})
    with pytest.raises(ValueError, match="max_len is 24"):
        model(torch.ones(1, 25, dtype=torch.long))
    with pytest.raises(ValueError, match="outside the vocabulary"):
        model(torch.full((1, 3), 17))
    with pytest.raises(TypeError, match="new_cache"):
        model(torch.ones(1, 3, dtype=torch.long), cache=object())
    cache = model.new_cache()
    model(torch.ones(2, 3, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="new batch"):
        model(torch.ones(3, 1, dtype=torch.long), cache)
    with pytest.raises(ValueError, match="positions"):
        LanguageModelConfig(vocab_size=10, positions="rotary")
    with pytest.raises(ValueError, match="n_heads"):
        LanguageModelConfig(vocab_size=10, d_model=30, n_heads=4)
    with pytest.raises(ValueError, match="pad_id"):
        LanguageModelConfig(vocab_size=10, pad_id=10)
