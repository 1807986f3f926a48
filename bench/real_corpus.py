"""BLEU against training minutes on a real corpus: what `python -m tx.train --tsv` reaches in 1, 2, 5, 10 minutes.

One run trains with the real-corpus presets (the same split, cased BPE vocabularies and
model as the command) for the longest time asked for, and keeps a copy of the weights
when each shorter mark is passed. The learning-rate schedule depends on the step alone,
never on the budget, so the copy at 2 minutes is what a 2-minute run would end with.
Each copy is then measured on the held-out test split (no test source sentence is in
training): cased sacreBLEU and exact match, greedy, and the last one with beam search too.

    python bench/real_corpus.py                     # ../shared/data/tatoeba-eng-fra-75k.tsv
    python bench/real_corpus.py --tsv FILE --marks 1 2 5 10 --beam 4

With ``--measure CHECKPOINT`` it trains nothing: it measures a trained checkpoint on its own
held-out split (the corpus's SHA-256 and seed come from its metadata), namely the unknown-word
rate of a word vocabulary of the training split against the BPE vocabularies' unknown pieces
and pieces per word, and greedy against beam search, and writes the figures into the
checkpoint's metadata ``info`` ("subwords", "test_beam", "robustness", "deduplicated", "copying"), leaving
its tensors byte-identical. "robustness" is greedy BLEU on the test split as written and as people
type it (all in capitals, without accents, without the final mark), each typed form read as is and
through :func:`tx.subwords.tidy_typed`, cased and lowercased. "deduplicated" is greedy BLEU on the
test pairs left once :func:`tx.near_duplicates.drop_near_duplicates` takes out those whose French differs
from a training sentence only by a name, pronoun, number, case, accents or punctuation, beside
the same measure on all of them:

    python bench/real_corpus.py --measure tx/checkpoints/fr_en_real.safetensors

``--record-vocabularies CHECKPOINT TWO SHARED`` stores in the checkpoint's metadata
("vocabularies_compared") what two ``python -m tx.train --tsv`` runs of the same minutes
reached, one as the checkpoint was trained and one with ``--shared-vocab``, trained side by
side; chapter 12 reads it:

    python bench/real_corpus.py --record-vocabularies tx/checkpoints/fr_en_real.safetensors \
        runs/fr_en_two.safetensors runs/fr_en_shared.safetensors

The minutes are training time (validation included), on however many threads torch uses;
learning the BPE vocabularies and the final measurements come on top.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import struct
import time
import unicodedata
from pathlib import Path

import torch

import tx
from tx.subwords import tidy_typed, unknown_rate
from tx.data import subword_vocabs
from tx.train import TrainConfig, TrainState, fit

DEFAULT_TSV = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "tatoeba-eng-fra-75k.tsv"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tsv", type=Path, default=DEFAULT_TSV)
    parser.add_argument("--marks", type=float, nargs="+", default=[1, 2, 5, 10], help="training minutes to measure at")
    parser.add_argument("--beam", type=int, default=4, help="beam size for the last mark (1: greedy only)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--measure", type=Path, metavar="CHECKPOINT",
                        help="train nothing: measure this checkpoint on its held-out split and store the figures in it")
    parser.add_argument("--record-vocabularies", type=Path, nargs=3, metavar=("CHECKPOINT", "TWO", "SHARED"),
                        help="train nothing: store in CHECKPOINT's metadata the figures of two runs of the same "
                             "minutes, TWO with a vocabulary a language and SHARED with --shared-vocab")
    args = parser.parse_args()
    if args.record_vocabularies:
        return record_vocabularies(*args.record_vocabularies)
    if not args.tsv.is_file():
        parser.error(f"no corpus at {args.tsv}; give one with --tsv (Tatoeba's English<TAB>French layout).")
    if args.measure:
        return measure(args.measure, args.tsv, max(args.beam, 2))
    marks = sorted(args.marks)
    corpus = tx.data.split_corpus(tx.data.load_parallel_tsv(args.tsv), seed=args.seed)
    src_vocab, tgt_vocab = subword_vocabs(corpus)
    torch.manual_seed(args.seed)
    model = tx.Transformer.from_config(tx.TransformerConfig.real(len(src_vocab), len(tgt_vocab)))
    snapshots: dict[float, tuple[int, dict]] = {}

    def keep(state: TrainState) -> None:  # every 20 steps: copy the weights once past each mark
        for mark in marks:
            if mark not in snapshots and state.seconds >= 60 * mark:
                snapshots[mark] = (state.step, {k: v.clone() for k, v in model.state_dict().items()})

    cfg = TrainConfig.real(minutes=marks[-1], save_every=20, seed=args.seed)
    print(f"{len(corpus.train)} training pairs, {len(corpus.test)} test pairs; {torch.get_num_threads()} threads; "
          f"model d_model {model.config.d_model}, {model.config.n_layers}+{model.config.n_layers} layers")
    history = fit(model, corpus.train, corpus.valid, src_vocab, tgt_vocab, cfg, save=keep)
    snapshots.setdefault(marks[-1], (history["step"][-1], model.state_dict()))
    print(f"| training minutes | steps | BLEU ({tgt_vocab.comparison}) | exact match |")
    print("| --- | --- | --- | --- |")
    for mark in marks:
        step, weights = snapshots[mark]
        model.load_state_dict(weights)
        greedy = tx.evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab)
        print(f"| {mark:g} | {step} | {greedy['bleu']:.1f} | {greedy['exact_match']:.1%} |", flush=True)
    if args.beam > 1:
        began = time.perf_counter()
        beam = tx.evaluate.evaluate(model, corpus.test, src_vocab, tgt_vocab, beam_size=args.beam, length_penalty=0.6)
        print(f"| {marks[-1]:g}, beam {args.beam} | {step} | {beam['bleu']:.1f} | {beam['exact_match']:.1%} |"
              f"  ({time.perf_counter() - began:.0f} s to decode {beam['n']} sentences)")


def vocabulary_figures(corpus: tx.data.ParallelCorpus, src_vocab, tgt_vocab) -> dict:
    """Unknown rates on the test split: a word vocabulary of all training words against the BPE vocabularies."""
    figures = {"split": "test", "word_vocab": "tx.data.Vocab.build of every training sentence (lowercased words)"}
    for side, column, bpe in (("french", 0, src_vocab), ("english", 1, tgt_vocab)):
        train = [pair[column] for pair in corpus.train]
        test = [pair[column] for pair in corpus.test]
        words = tx.data.Vocab.build(train)
        n_words = sum(len(tx.data.tokenize(s)) for s in test)
        n_pieces = sum(len(bpe.encode(s, add_bos=False, add_eos=False)) for s in test)
        unknown_sentences = sum(tx.data.UNK_ID in words.encode(s) for s in test)
        figures[side] = {
            "word_vocab_size": len(words), "words": n_words,
            "word_unknown_rate": unknown_rate(words, test), "sentences_with_unknown_word": unknown_sentences / len(test),
            "bpe_vocab_size": len(bpe), "pieces": n_pieces,
            "bpe_unknown_rate": unknown_rate(bpe, test), "pieces_per_word": n_pieces / n_words,
        }
    return figures


def beam_figures(ck: tx.checkpoint.Checkpoint, pairs, beam: int, length_penalty: float = 0.6) -> dict:
    """Greedy and beam search on ``pairs``: cased BLEU, exact match, and how many outputs beam search changes."""
    sources = [fr for fr, _ in pairs]
    references = [ck.tgt_vocab.normalise(en) for _, en in pairs]
    greedy = tx.evaluate.translate(ck.model, sources, ck.src_vocab, ck.tgt_vocab)
    beamed = tx.evaluate.translate(ck.model, sources, ck.src_vocab, ck.tgt_vocab, beam_size=beam,
                                   length_penalty=length_penalty)
    return {
        "beam_size": beam, "length_penalty": length_penalty, "n": len(pairs),
        "greedy": {"bleu": tx.evaluate.bleu(greedy, references), "exact_match": tx.evaluate.exact_match(greedy, references)},
        "beam": {"bleu": tx.evaluate.bleu(beamed, references), "exact_match": tx.evaluate.exact_match(beamed, references)},
        "changed": sum(g != b for g, b in zip(greedy, beamed)) / len(pairs),
    }


def without_accents(text: str) -> str:
    """``text`` with its accents and cedillas dropped: é -> e, ç -> c."""
    return unicodedata.normalize("NFC", "".join(
        c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn"))


TYPED = {  # how a reader may type a test sentence
    "as written": lambda s: s,
    "in capitals": str.upper,
    "without accents": without_accents,
    "without the final mark": lambda s: re.sub(r"\s*[.!?\u2026]+$", "", s),
}


def robustness_figures(ck: tx.checkpoint.Checkpoint, pairs) -> dict:
    """Greedy BLEU (cased and lowercased) on ``pairs`` typed in each way of TYPED, read as
    typed and through tidy_typed, with how many sources each way changes, and how many
    tidy_typed changes as written."""
    references = [ck.tgt_vocab.normalise(en) for _, en in pairs]
    lowered = [r.lower() for r in references]
    # sources that tidying alone changes (a curly apostrophe, a narrow space before "!"...)
    figures = {"n": len(pairs), "typed": {}, "tidy_changes": sum(tidy_typed(fr) != fr for fr, _ in pairs)}
    for name, typed in TYPED.items():
        sources = [typed(fr) for fr, _ in pairs]
        row = {"changed": sum(s != fr for s, (fr, _) in zip(sources, pairs)) / len(pairs)}
        for how, inputs in (("as typed", sources), ("tidied", [tidy_typed(s) for s in sources])):
            out = tx.evaluate.translate(ck.model, inputs, ck.src_vocab, ck.tgt_vocab)
            row[how] = {"bleu": tx.evaluate.bleu(out, references),
                        "bleu_lowercased": tx.evaluate.bleu([o.lower() for o in out], lowered)}
        figures["typed"][name] = row
    return figures


def deduplicated_figures(ck: tx.checkpoint.Checkpoint, corpus: tx.data.ParallelCorpus, n_examples: int = 6) -> dict:
    """Greedy cased BLEU and exact match on the test pairs tx.near_duplicates.drop_near_duplicates keeps, on
    those it removes and on all of them (one greedy translation of the split, as info["test"]),
    and a few removed French sentences beside a training sentence of the same normalised form."""
    names = tx.near_duplicates.proper_names(fr for fr, _ in corpus.train + corpus.test)
    twins = tx.near_duplicates.near_twins(corpus.train, corpus.test, names)  # the removed French -> its twin
    sources = [fr for fr, _ in corpus.test]
    references = [ck.tgt_vocab.normalise(en) for _, en in corpus.test]
    greedy = tx.evaluate.translate(ck.model, sources, ck.src_vocab, ck.tgt_vocab)

    def scores(which) -> tuple[float, float]:
        hyps = [g for g, fr in zip(greedy, sources) if which(fr)]
        refs = [r for r, fr in zip(references, sources) if which(fr)]
        return tx.evaluate.bleu(hyps, refs), tx.evaluate.exact_match(hyps, refs)

    words = lambda s: re.sub(r"\W+", " ", s.lower()).strip()  # noqa: E731
    # examples that need a placeholder, one per normalised form, those with a name or a number first
    examples: dict[str, list[str]] = {}
    for fr, twin in twins.items():
        if words(fr) != words(twin):
            examples.setdefault(twin, [fr, twin])
    examples = sorted(examples.values(), key=lambda ex: not re.search(r"NAME|NUM", tx.near_duplicates.normalised_form(ex[0], names)))
    removed = sum(fr in twins for fr in sources)
    bleu, exact = scores(lambda fr: fr not in twins)
    bleu_all, exact_all = scores(lambda fr: True)
    bleu_removed, exact_removed = scores(lambda fr: fr in twins)
    return {"n": len(corpus.test), "removed": removed, "kept": len(sources) - removed, "decoding": "greedy",
            "bleu": bleu, "exact_match": exact, "bleu_all": bleu_all, "exact_match_all": exact_all,
            "bleu_removed": bleu_removed, "exact_match_removed": exact_removed,
            # removed sentences whose training twin has the same words (case, marks or spaces differ)
            "same_words": sum(words(fr) == words(twins[fr]) for fr in sources if fr in twins),
            "examples": examples[:n_examples]}


def tensor_sha256(path: Path) -> str:
    """SHA-256 of a safetensors file's tensor bytes (everything after its header)."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    return hashlib.sha256(raw[8 + n:]).hexdigest()


def measure(path: Path, tsv: Path, beam: int) -> None:
    """Measure a checkpoint on its held-out split and write the figures into its metadata, tensors untouched."""
    ck = tx.checkpoint.load(path)
    info = dict(ck.info)
    digest = hashlib.sha256(tsv.read_bytes()).hexdigest()
    if info.get("tsv_sha256") != digest:
        raise SystemExit(f"{path} was not trained on {tsv} (SHA-256 differs): its held-out split cannot be rebuilt from it.")
    corpus = tx.data.split_corpus(tx.data.load_parallel_tsv(tsv), seed=info["seed"])
    info["subwords"] = vocabulary_figures(corpus, ck.src_vocab, ck.tgt_vocab)
    info["test_beam"] = beam_figures(ck, corpus.test, beam)
    info["robustness"] = robustness_figures(ck, corpus.test)
    info["deduplicated"] = deduplicated_figures(ck, corpus)
    info["copying"] = copying_figures(ck, corpus.train)
    before = tensor_sha256(path)
    tx.checkpoint.save(path, ck.model, ck.src_vocab, ck.tgt_vocab, info)
    assert tensor_sha256(path) == before, "rewriting the metadata changed the tensors"
    print(json.dumps({k: info[k] for k in ("subwords", "test_beam", "robustness", "deduplicated", "copying")}, indent=1))


def copying_figures(ck: tx.checkpoint.Checkpoint, train: list[tuple[str, str]]) -> dict:
    """How many training pairs share a name or a number with their translation, and how many copies
    ``python -m tx.train --copy-pairs N --copy-numbers M`` added (rebuilt as the command built them)."""
    info = ck.info
    copies, numbers = info.get("copy_pairs", 0), info.get("copy_numbers", info.get("copy_pairs", 0))
    fits = tx.copying.fits_model(ck.src_vocab, ck.tgt_vocab, ck.model.config.max_len)  # as the command
    shared = [tx.copying.shared_words(pair) for pair in train]
    added = len(tx.copying.with_copies(train, copies, info["seed"], fits, numbers)) - len(train)
    return {"train_pairs": len(train), "sharing": sum(bool(w) for w in shared),
            "sharing_a_number": sum(any(x.isdigit() for x in w) for w in shared),
            "sharing_tom": sum("Tom" in w for w in shared),
            "copy_pairs": copies, "copy_numbers": numbers, "added": added}


# Chapter 12's sentences with a name or a number, and what the English must contain (the chapter checks it
# holds the same list).
NAMES = [
    ("Je m'appelle Jean.", "Jean"), ("Pierre a perdu son portefeuille.", "Pierre"), ("Nous habitons à Lyon.", "Lyon"),
    ("Tom est à Paris.", "Paris"), ("Il a 25 ans.", "25"), ("Il y a 14 élèves dans la classe.", "14"),
    ("J'ai 37 chats.", "37"), ("Nous sommes en 2024.", "2024"),
]


def copied(ck: tx.checkpoint.Checkpoint, sentences: list[tuple[str, str]]) -> tuple[list[str], int]:
    """Greedy English of ``sentences`` (French, the word its English must hold), and how many hold it
    as a whole word: the measure of chapter 12's names table."""
    english = tx.evaluate.translate(ck.model, [fr for fr, _ in sentences], ck.src_vocab, ck.tgt_vocab)
    return english, sum(key in re.findall(r"\w+", en) for (_, key), en in zip(sentences, english))


def record_vocabularies(path: Path, two: Path, shared: Path) -> None:
    """Store, in ``path``'s metadata (tensors untouched), what two runs of the same minutes reached: one with a
    BPE vocabulary a language, one with ``python -m tx.train --shared-vocab`` (the paper's design: one vocabulary,
    byte fallback, tied embeddings). Both must come from ``path``'s corpus, split and seed, trained side by side.
    """
    ck = tx.checkpoint.load(path)
    info = dict(ck.info)
    runs = {}
    for name, run in (("two", two), ("shared", shared)):
        other = tx.checkpoint.load(run)
        if (other.info.get("tsv_sha256"), other.info.get("seed")) != (info["tsv_sha256"], info["seed"]):
            raise SystemExit(f"{run} was not trained on {path}'s corpus and seed: its test split is another.")
        runs[name] = {"vocab": other.info["vocab"], "pieces": len(other.src_vocab) + (0 if name == "shared" else
                                                                                       len(other.tgt_vocab)),
                      "parameters": sum(p.numel() for p in other.model.parameters()),
                      "steps": other.info["step"], "train_seconds": other.info["train_seconds"],
                      "bleu": other.info["test"]["bleu"], "exact_match": other.info["test"]["exact_match"]}
        runs[name]["names_copied"] = copied(other, NAMES)[1]
        if (name == "shared") != other.model.config.share_embeddings:
            raise SystemExit(f"{run} is {'not ' if name == 'shared' else ''}a --shared-vocab run; give TWO, then SHARED.")
    info["vocabularies_compared"] = {"how": "side by side on one machine, one thread each, the same --minutes",
                                     "names": NAMES, **runs}
    before = tensor_sha256(path)
    tx.checkpoint.save(path, ck.model, ck.src_vocab, ck.tgt_vocab, info)
    assert tensor_sha256(path) == before, "rewriting the metadata changed the tensors"
    print(json.dumps(info["vocabularies_compared"], indent=1))


if __name__ == "__main__":
    main()
