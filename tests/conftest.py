import sys
from pathlib import Path

import pytest
import torch

sys.path.insert(0, str(Path(__file__).parent))  # for torch_reference


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(0)


def rng_untouched(fn, *args) -> bool:
    """Call ``fn(*args)`` and say whether torch's global random stream is where it was."""
    before = torch.get_rng_state()
    fn(*args)
    return torch.equal(before, torch.get_rng_state())


def tiny_model(**overrides):
    """A small tx.Transformer for fast property tests."""
    import tx

    kw = dict(src_vocab_size=13, tgt_vocab_size=11, d_model=32, n_heads=4, n_layers=2, d_ff=64,
              dropout=0.0, max_len=24)
    kw.update(overrides)
    return tx.Transformer(**kw).eval()


@pytest.fixture(scope="session")
def grammar() -> dict[str, str]:
    """Every pair the book's grammar makes, French -> English."""
    from tx.grammar import grammar_pairs

    return dict(grammar_pairs())
