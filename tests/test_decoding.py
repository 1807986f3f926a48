import itertools

import pytest
import torch

import tx
from conftest import tiny_model

BOS, EOS = 1, 2


def test_greedy_shapes_bos_and_padding_after_eos():
    model = tiny_model()
    src = torch.randint(3, 13, (4, 6))
    out = tx.greedy_decode(model, src, max_len=10, bos_id=BOS, eos_id=EOS)
    assert out.dtype == torch.long and out.size(0) == 4 and out.size(1) <= 11
    assert torch.all(out[:, 0] == BOS)
    for row in out.tolist():
        if EOS in row[1:]:
            end = row.index(EOS, 1)
            assert all(t == model.config.pad_id for t in row[end + 1 :])


def test_greedy_takes_the_argmax_at_every_step():
    model = tiny_model()
    src = torch.randint(3, 13, (3, 5))
    out = tx.greedy_decode(model, src, max_len=6, bos_id=BOS, eos_id=EOS)
    logits = model(src, out[:, :-1])
    for b in range(3):
        for t in range(out.size(1) - 1):
            if EOS in out[b, 1 : t + 1].tolist():
                break
            assert out[b, t + 1] == logits[b, t].argmax()


@pytest.mark.parametrize("norm_first", [False, True])
def test_cached_decoding_equals_uncached(norm_first):
    model = tiny_model(norm_first=norm_first)
    src = torch.randint(3, 13, (5, 7))
    src[2, 4:] = 0
    a = tx.greedy_decode(model, src, 15, BOS, EOS, use_cache=True)
    b = tx.greedy_decode(model, src, 15, BOS, EOS, use_cache=False)
    assert torch.equal(a, b)


def test_cached_logits_equal_full_decoder_logits():
    model = tiny_model()
    src, tgt = torch.randint(3, 13, (2, 5)), torch.randint(3, 11, (2, 6))
    memory = model.encode(src)
    cache = model.new_cache(8)
    first = model.decode(memory, src, tgt[:, :2], cache)  # a two-token step, then one at a time
    rest = [model.decode(memory, src, tgt[:, t : t + 1], cache) for t in range(2, 6)]
    torch.testing.assert_close(torch.cat([first, *rest], 1), model.decode(memory, src, tgt), atol=1e-5, rtol=1e-5)


def test_beam_size_one_equals_greedy():
    model = tiny_model()
    src = torch.randint(3, 13, (6, 5))
    greedy = tx.greedy_decode(model, src, 9, BOS, EOS)
    beams = tx.beam_search(model, src, beam_size=1, max_len=9, bos_id=BOS, eos_id=EOS)
    for row, hyps in zip(greedy, beams):
        tokens = hyps[0][0]
        assert torch.equal(row[: len(tokens)], tokens)
        assert torch.all(row[len(tokens) :] == model.config.pad_id)


@torch.no_grad()
def sequence_log_prob(model, src, seq):
    logits = model(src[None], torch.tensor([seq[:-1]]))[0].log_softmax(-1)
    return sum(float(logits[t, tok]) for t, tok in enumerate(seq[1:]))


def brute_force_best(model, src, vocab, max_len, alpha, gnmt=False):
    """Score every possible output: sequences that end at <eos>, or run max_len tokens, each
    divided by n ** alpha, or by GNMT's ((5 + n) / 6) ** alpha."""
    best = (None, float("-inf"))
    for n in range(1, max_len + 1):
        for body in itertools.product(range(vocab), repeat=n):
            if EOS in body[:-1] or (n < max_len and body[-1] != EOS):
                continue
            seq = [BOS, *body]
            score = sequence_log_prob(model, src, seq) / (((5 + n) / 6) if gnmt else n) ** alpha
            if score > best[1]:
                best = (seq, score)
    return best


@pytest.mark.parametrize("alpha", [0.0, 1.0])
def test_wide_beam_finds_the_brute_force_best(alpha):
    torch.manual_seed(3)
    model = tiny_model(src_vocab_size=5, tgt_vocab_size=5)
    src = torch.tensor([[3, 4, 3, 2]])
    seq, score = brute_force_best(model, src[0], vocab=5, max_len=3, alpha=alpha)
    found = tx.beam_search(model, src, beam_size=25, max_len=3, bos_id=BOS, eos_id=EOS, length_penalty=alpha)
    tokens, beam_score = found[0][0]
    assert tokens.tolist() == seq
    assert beam_score == pytest.approx(score, abs=1e-4)


def test_n_best_are_sorted_and_scores_follow_the_formula():
    model = tiny_model()
    src = torch.randint(3, 13, (2, 5))
    found = tx.beam_search(model, src, beam_size=4, max_len=6, bos_id=BOS, eos_id=EOS, length_penalty=0.6, n_best=3)
    for b, hyps in enumerate(found):
        assert len(hyps) == 3
        scores = [s for _, s in hyps]
        assert scores == sorted(scores, reverse=True)
        for tokens, score in hyps:
            assert tokens[0] == BOS
            n = len(tokens) - 1
            assert score == pytest.approx(sequence_log_prob(model, src[b], tokens.tolist()) / n**0.6, abs=1e-4)


def test_trace_records_the_tree():
    model = tiny_model()
    trace = []
    tx.beam_search(model, torch.randint(3, 13, (1, 5)), beam_size=2, max_len=4, bos_id=BOS, eos_id=EOS, trace=trace)
    assert trace[0] == [{"parent": None, "token": BOS, "score": 0.0, "finished": False}]
    for prev, step in zip(trace, trace[1:]):
        alive = [n for n in prev if not n.get("finished") and not n.get("pruned")]
        assert all(0 <= n["parent"] < len(alive) for n in step)
        assert sum(not n["finished"] and not n["pruned"] for n in step) <= 2


def test_trace_marks_the_beams_alive_when_the_search_stops():
    model = tiny_model()
    stopped = 0
    for src in torch.randint(3, 13, (8, 1, 5), generator=torch.Generator().manual_seed(0)):
        trace = []
        tx.beam_search(model, src, beam_size=1, max_len=6, bos_id=BOS, eos_id=EOS, trace=trace)
        *before, last = trace
        assert not any(n.get("stopped") for step in before for n in step)
        # the last step's kept beams (pruned or finished nodes are not) end with the search
        assert all(n.get("stopped", False) == (not n["finished"] and not n["pruned"]) for n in last)
        stopped += sum(n.get("stopped", False) for n in last)
    assert stopped  # some search ended on <eos> with a beam still alive


def test_decoding_restores_training_mode():
    model = tiny_model().train()
    tx.greedy_decode(model, torch.randint(3, 13, (1, 4)), 3, BOS, EOS)
    assert model.training


def test_bad_decoding_arguments():
    model = tiny_model()
    src = torch.randint(3, 13, (1, 4))
    with pytest.raises(ValueError, match="exceeds the model's max_len"):
        tx.greedy_decode(model, src, 100, BOS, EOS)
    with pytest.raises(ValueError, match=r"n_best .*at most beam_size.* must be in \[1, 2\], got 3"):
        tx.beam_search(model, src, beam_size=2, max_len=4, bos_id=BOS, eos_id=EOS, n_best=3)


def test_decoded_tokens_can_be_fed_back_with_gradients_on():
    model = tiny_model()
    src = torch.randint(3, 13, (2, 5))
    out = tx.greedy_decode(model, src, 5, BOS, EOS)
    (tokens, _), = tx.beam_search(model, src[:1], 2, 5, BOS, EOS)[0]
    for ys in (out, tokens[None]):
        model(src[: ys.size(0)], ys).sum().backward()  # would fail on an inference-mode tensor


def test_cached_decoding_follows_weight_updates():
    model = tiny_model()
    src = torch.randint(3, 13, (3, 5))
    before = tx.greedy_decode(model, src, 8, BOS, EOS)
    with torch.no_grad():  # an in-place update, as an optimizer step makes
        for layer in model.decoder.layers:
            layer.self_attn.w_v.weight.mul_(-3.0)
    after = tx.greedy_decode(model, src, 8, BOS, EOS, use_cache=True)
    assert torch.equal(after, tx.greedy_decode(model, src, 8, BOS, EOS, use_cache=False))
    assert not torch.equal(before, after)  # the update changed the translation, and the cache saw it


# --------------------------------------------------------------------------- the paper's (GNMT's) length penalty


def test_gnmt_penalty_follows_its_formula():
    from tx.decoding import normalised_score

    assert normalised_score(-3.0, 7, 0.6, "gnmt") == pytest.approx(-3.0 / ((5 + 7) / 6) ** 0.6)
    assert normalised_score(-3.0, 1, 0.6, "gnmt") == pytest.approx(-3.0)  # lp(1) = (6/6)^alpha = 1
    assert normalised_score(-3.0, 7, 0.0, "gnmt") == normalised_score(-3.0, 7, 0.0) == -3.0
    # For L > 1 the GNMT penalty divides by less than L ** alpha: a milder push towards length.
    for L in (2, 5, 20):
        assert normalised_score(-3.0, L, 0.6, "gnmt") < normalised_score(-3.0, L, 0.6, "power")


def test_unknown_penalty_form_is_refused_with_the_choices():
    model = tiny_model()
    with pytest.raises(ValueError, match="penalty_form must be one of"):
        tx.beam_search(model, torch.randint(3, 13, (1, 4)), 2, 4, BOS, EOS, length_penalty=0.6, penalty_form="wu")


def test_gnmt_scores_follow_the_formula():
    model = tiny_model()
    src = torch.randint(3, 13, (2, 5))
    found = tx.beam_search(model, src, beam_size=4, max_len=6, bos_id=BOS, eos_id=EOS,
                           length_penalty=0.6, n_best=3, penalty_form="gnmt")
    for b, hyps in enumerate(found):
        scores = [s for _, s in hyps]
        assert scores == sorted(scores, reverse=True)
        for tokens, score in hyps:
            n = len(tokens) - 1
            expected = sequence_log_prob(model, src[b], tokens.tolist()) / ((5 + n) / 6) ** 0.6
            assert score == pytest.approx(expected, abs=1e-4)



@pytest.mark.parametrize("alpha", [0.6, 2.0])
def test_wide_beam_finds_the_brute_force_best_under_gnmt(alpha):
    torch.manual_seed(3)
    model = tiny_model(src_vocab_size=5, tgt_vocab_size=5)
    src = torch.tensor([[3, 4, 3, 2]])
    seq, score = brute_force_best(model, src[0], vocab=5, max_len=3, alpha=alpha, gnmt=True)
    found = tx.beam_search(model, src, beam_size=25, max_len=3, bos_id=BOS, eos_id=EOS,
                           length_penalty=alpha, penalty_form="gnmt")
    tokens, beam_score = found[0][0]
    assert tokens.tolist() == seq
    assert beam_score == pytest.approx(score, abs=1e-4)


def test_translate_passes_the_penalty_form_on():
    from tx.evaluate import translate

    torch.manual_seed(0)
    corpus = tx.data.load_corpus(seed=0)
    model = tiny_model(src_vocab_size=len(corpus.src_vocab), tgt_vocab_size=len(corpus.tgt_vocab))
    sentences = [fr for fr, _ in corpus.test[:4]]
    kwargs = dict(beam_size=3, max_len=6, length_penalty=5.0)
    gnmt = translate(model, sentences, corpus.src_vocab, corpus.tgt_vocab, penalty_form="gnmt", **kwargs)
    src = tx.data.pad([corpus.src_vocab.encode(s, add_bos=False) for s in sentences], corpus.src_vocab.pad_id)
    bos, eos = corpus.tgt_vocab.bos_id, corpus.tgt_vocab.eos_id
    expected = tx.beam_search(model, src, 3, 6, bos, eos, length_penalty=5.0, penalty_form="gnmt")
    assert gnmt == [corpus.tgt_vocab.decode(hyps[0][0]) for hyps in expected]


def test_output_limit_is_the_source_length_plus_the_margin_within_the_model():
    from tx.decoding import LENGTH_MARGIN, output_limit

    assert output_limit(5, 63) == 5 + LENGTH_MARGIN
    assert output_limit(5, 63, margin=0) == 5 and output_limit(60, 63, margin=10) == 63
    assert output_limit(5, 63, margin=None) == 63  # no margin: the model's positions alone
    with pytest.raises(ValueError, match="margin"):
        output_limit(5, 63, margin=-1)
    with pytest.raises(ValueError, match="src_len"):
        output_limit(0, 63)
