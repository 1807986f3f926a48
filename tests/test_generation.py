"""tx.generation: greedy and sampled generation, top-k, top-p, the cache and left padding."""

from __future__ import annotations

import pytest
import torch

from tx.config import LanguageModelConfig
from tx.generation import filter_top_k, filter_top_p, generate, left_pad, next_token_probs
from tx.language_model import LanguageModel


@pytest.fixture
def model() -> LanguageModel:
    torch.manual_seed(0)
    return LanguageModel(LanguageModelConfig.small(23, d_model=32, n_heads=4, n_layers=2, d_ff=64,
                                                   dropout=0.0, max_len=32)).eval()


def test_cache_equals_no_cache_greedy_and_sampled(model):
    prompt = left_pad([[1, 5, 6, 7, 8], [1, 9]])
    for kw in (dict(temperature=0.0), dict(temperature=1.3, top_k=8), dict(top_p=0.9)):
        a = generate(model, prompt, 12, use_cache=True, generator=torch.Generator().manual_seed(3), **kw)
        b = generate(model, prompt, 12, use_cache=False, generator=torch.Generator().manual_seed(3), **kw)
        assert torch.equal(a, b), kw


def test_greedy_is_the_argmax_step_by_step(model):
    prompt = torch.tensor([[1, 4, 9]])
    out = generate(model, prompt, 8, temperature=0)
    seq = prompt
    for _ in range(8):
        logits = model(seq)[0, -1]
        logits[model.config.pad_id] = float("-inf")  # generate never writes padding
        seq = torch.cat([seq, logits.argmax().view(1, 1)], dim=1)
    assert torch.equal(out, seq)


def test_left_padded_batch_equals_each_prompt_alone(model):
    prompts = [[1, 5, 6, 7, 8, 9], [1, 9], [1, 3, 3]]
    batch = generate(model, left_pad(prompts), 6, temperature=0)
    width = max(map(len, prompts))
    for row, p in zip(batch, prompts):
        alone = generate(model, torch.tensor([p]), 6, temperature=0)[0]
        assert torch.equal(row[width - len(p):], alone)
        assert (row[: width - len(p)] == 0).all()  # padding stays on the left


def test_top_k_never_samples_outside_the_k_best(model):
    prompt = torch.tensor([[1, 4, 9]])
    logits = model(prompt)[0, -1]
    logits[0] = float("-inf")
    best = set(logits.topk(3).indices.tolist())
    g = torch.Generator().manual_seed(0)
    firsts = {int(generate(model, prompt, 1, temperature=2.0, top_k=3, generator=g)[0, -1]) for _ in range(200)}
    assert firsts <= best and len(firsts) > 1  # within the 3 best, and not always the same one


def test_top_k_filter_keeps_k_and_ties():
    x = torch.tensor([[3.0, 1.0, 2.0, 0.5], [1.0, 1.0, 0.0, 1.0]])
    kept = torch.isfinite(filter_top_k(x, 2))
    assert kept[0].tolist() == [True, False, True, False]
    assert kept[1].tolist() == [True, True, False, True]  # a tie at the k-th is kept
    assert torch.isfinite(filter_top_k(x, 10)).all()  # k beyond V keeps everything


@pytest.mark.parametrize("p", [0.05, 0.3, 0.5, 0.7, 0.9, 0.99, 1.0])
def test_top_p_keeps_the_smallest_set_that_reaches_p(p):
    g = torch.Generator().manual_seed(1)
    logits = torch.randn(50, 12, generator=g) * 2
    kept = torch.isfinite(filter_top_p(logits, p))
    probs = logits.softmax(-1)
    for row, keep in zip(probs, kept):
        n = int(keep.sum())
        order = row.argsort(descending=True)
        assert set(order[:n].tolist()) == set(keep.nonzero()[:, 0].tolist())  # the most likely ones
        assert row[order[:n]].sum() >= p - 1e-6  # reaches p
        assert n == 1 or row[order[: n - 1]].sum() < p  # one fewer does not


def test_next_token_probs_temperature():
    logits = torch.tensor([2.0, 1.0, 0.0])
    assert next_token_probs(logits, 0.0).tolist() == [1.0, 0.0, 0.0]
    torch.testing.assert_close(next_token_probs(logits, 2.0), (logits / 2).softmax(-1))
    hot, cold = next_token_probs(logits, 5.0), next_token_probs(logits, 0.2)
    assert hot.max() < logits.softmax(-1).max() < cold.max()


def test_seeded_generator_gives_the_same_text_twice(model):
    prompt = torch.tensor([[1, 4]])
    runs = [generate(model, prompt, 15, generator=torch.Generator().manual_seed(7)) for _ in range(2)]
    other = generate(model, prompt, 15, generator=torch.Generator().manual_seed(8))
    assert torch.equal(*runs)
    assert not torch.equal(runs[0], other)


def test_stops_at_eos_and_pads_after_it(model):
    prompt = left_pad([[1, 4], [1, 5, 6]])  # [2, 3]: generated tokens start at column 3
    out = generate(model, prompt, 20, temperature=0)
    eos = int(out[0, 3])  # call the first generated token of row 0 its end
    out2 = generate(model, prompt, 20, temperature=0, eos_id=eos)
    assert int(out2[0, 3]) == eos and (out2[0, 4:] == 0).all()  # row 0 ends, then pads
    assert out2.size(1) <= out.size(1) and torch.equal(out2[1, :4], out[1, :4])


def test_stops_when_the_context_is_full(model):
    out = generate(model, torch.ones(1, 30, dtype=torch.long), 50, temperature=0)
    assert out.shape == (1, 32)


def test_bad_input_gets_a_clear_error(model):
    ok = torch.tensor([[1, 4]])
    with pytest.raises(ValueError, match="empty"):
        generate(model, torch.zeros(1, 0, dtype=torch.long), 3)
    with pytest.raises(ValueError, match="empty"):
        generate(model, torch.tensor([[1, 4], [0, 0]]), 3)
    with pytest.raises(ValueError, match="temperature must be at least 0"):
        generate(model, ok, 3, temperature=-0.5)
    with pytest.raises(ValueError, match="top_k must be at least 1"):
        generate(model, ok, 3, top_k=0)
    for p in (0.0, 1.5, -0.1):
        with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
            generate(model, ok, 3, top_p=p)
    with pytest.raises(ValueError, match="context is 32"):
        generate(model, torch.ones(1, 40, dtype=torch.long), 3)
    with pytest.raises(TypeError, match="LanguageModel"):
        generate(torch.nn.Linear(2, 2), ok, 3)
    with pytest.raises(ValueError, match="every prompt at least one token"):
        left_pad([[1], []])
