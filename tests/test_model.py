import pytest
import torch
from torch.testing import assert_close

from conftest import tiny_model
from torch_reference import reference_from


@pytest.mark.parametrize("norm_first", [False, True])
def test_equals_torch_transformer_with_copied_weights(norm_first):
    model = tiny_model(norm_first=norm_first, src_vocab_size=17, tgt_vocab_size=17)
    ref = reference_from(model).eval()
    src = torch.randint(1, 17, (3, 7))
    src[1, 5:] = 0  # padding
    tgt = torch.randint(1, 17, (3, 6))
    with torch.no_grad():
        assert_close(model(src, tgt), ref(src, tgt), atol=1e-5, rtol=1e-5)


def test_layers_of_a_stack_share_no_weights():
    model = tiny_model()
    a, b = model.encoder.layers
    assert a.self_attn.w_q.weight.data_ptr() != b.self_attn.w_q.weight.data_ptr()
    assert not torch.equal(a.self_attn.w_q.weight, b.self_attn.w_q.weight)


def test_a_later_target_token_never_changes_earlier_logits():
    model = tiny_model()
    src, tgt = torch.randint(1, 13, (2, 5)), torch.randint(1, 11, (2, 6))
    changed = tgt.clone()
    changed[:, 4] = (changed[:, 4] % 10) + 1
    a, b = model(src, tgt), model(src, changed)
    assert_close(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_padding_the_source_never_changes_the_logits():
    model = tiny_model()
    src, tgt = torch.randint(1, 13, (2, 5)), torch.randint(1, 11, (2, 4))
    padded = torch.cat([src, torch.zeros(2, 3, dtype=torch.long)], dim=1)
    assert_close(model(src, tgt), model(padded, tgt), atol=1e-5, rtol=1e-5)


def test_shared_embeddings_are_one_tensor():
    model = tiny_model(src_vocab_size=15, tgt_vocab_size=15, share_embeddings=True)
    w = model.src_embed.token.weight
    assert model.tgt_embed.token.weight is w and model.generator.weight is w


def test_recording_attention_keeps_every_layers_weights():
    model = tiny_model()
    src, tgt = torch.randint(1, 13, (2, 5)), torch.randint(1, 11, (2, 4))
    with model.recording_attention() as maps:
        model(src, tgt)
    assert set(maps) == set(model.attention_layers())
    assert maps["decoder.layers.1.cross_attn"].shape == (2, 4, 4, 5)
    assert maps["encoder.layers.0.self_attn"].shape == (2, 4, 5, 5)
    # Masked self-attention puts no weight on the future.
    assert torch.all(maps["decoder.layers.0.self_attn"].triu(1) == 0)
    assert not any(m.record for m in model.attention_layers().values())


@pytest.mark.parametrize(
    "src, error, message",
    [
        (torch.tensor([[1, 2, 13]]), ValueError, r"token id 13, outside the vocabulary of 13"),
        (torch.tensor([[1.0, 2.0]]), TypeError, r"integer token ids.*\.long\(\)"),
        (torch.zeros(0, 4, dtype=torch.long), ValueError, r"empty"),
        (torch.ones(1, 30, dtype=torch.long), ValueError, r"max_len is 24.*Shorten"),
    ],
    ids=["id outside vocabulary", "float tokens", "empty batch", "longer than max_len"],
)
def test_bad_source_tokens_are_clear_errors(src, error, message):
    with pytest.raises(error, match=message):
        tiny_model().encode(src)


def test_bad_target_id_names_the_target():
    model = tiny_model()
    with pytest.raises(ValueError, match="tgt holds token id -1"):
        model(torch.tensor([[1, 2]]), torch.tensor([[1, -1]]))


def test_model_learns_to_copy():
    # A seeded tiny model learns the copy task: the loss falls well below its start.
    torch.manual_seed(0)
    model = tiny_model(src_vocab_size=12, tgt_vocab_size=12).train()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(150):
        seq = torch.randint(3, 12, (32, 6))
        tgt = torch.cat([torch.ones(32, 1, dtype=torch.long), seq], 1)
        logits = model(seq, tgt[:, :-1])
        loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 12), tgt[:, 1:].reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.2 * losses[0]
