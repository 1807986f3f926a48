import pytest
import torch

import tx


def n_params(model):
    return sum(p.numel() for p in model.parameters())  # tied weights counted once


@pytest.mark.parametrize("preset, millions", [("base", 65), ("big", 213)])
def test_paper_parameter_counts_within_3_5_percent(preset, millions):
    cfg = getattr(tx.TransformerConfig, preset)(37000)
    assert cfg.share_embeddings
    with torch.device("meta"):  # shapes only: no memory, no initialisation time
        count = n_params(tx.Transformer.from_config(cfg))
    assert abs(count / (millions * 1e6) - 1) < 0.035, count


def test_small_preset_and_replace():
    cfg = tx.TransformerConfig.small(100, 120)
    assert (cfg.d_model, cfg.n_layers, cfg.src_vocab_size, cfg.tgt_vocab_size) == (128, 2, 100, 120)
    assert cfg.replace(n_layers=3).n_layers == 3 and cfg.n_layers == 2
    model = tx.Transformer.from_config(cfg)
    assert model.config == cfg
    assert len(model.encoder.layers) == 2 and len(model.decoder.layers) == 2


def test_config_is_frozen():
    cfg = tx.TransformerConfig.small(10, 10)
    with pytest.raises(Exception):
        cfg.d_model = 3


def test_share_embeddings_with_different_vocabularies_is_a_clear_error():
    with pytest.raises(ValueError, match="vocabularies differ.*joint vocabulary"):
        tx.Transformer(src_vocab_size=100, tgt_vocab_size=120, d_model=16, n_heads=2, share_embeddings=True)


def test_bad_head_count_in_config():
    with pytest.raises(ValueError, match="not divisible"):
        tx.TransformerConfig(src_vocab_size=10, tgt_vocab_size=10, d_model=10, n_heads=4)


def test_device_is_cpu_or_cuda():
    import torch

    assert tx.device().type == ("cuda" if torch.cuda.is_available() else "cpu")
