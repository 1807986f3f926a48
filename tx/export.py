"""Export a checkpoint to ONNX, so that a web page (onnxruntime-web) or onnxruntime can run it.

::

    python -m tx.export CHECKPOINT OUTDIR [--force] [--quantize int8]

Axes: B batch, S source length, T target length, D d_model, V target vocabulary size,
L layers, H heads.

OUTDIR receives four files, none with a path of the machine that wrote them inside:

* ``encoder.onnx``: ``src`` [B, S] int64 -> ``memory`` [B, S, D] and ``enc_self_attn``
  [L, B, H, S, S], every encoder layer's attention weights.
* ``decoder.onnx``: ``memory`` [B, S, D], ``src`` [B, S], ``tgt`` [B, T] int64 (the whole prefix,
  starting with <bos>) -> ``logits`` [B, T, V], ``dec_self_attn`` [L, B, H, T, T] and
  ``cross_attn`` [L, B, H, T, S]. Greedy decoding calls it once per generated token.
* ``vocab.json`` (word vocabularies: ``src_itos`` and ``tgt_itos``, id -> word) or
  ``src_tokenizer.json`` and ``tgt_tokenizer.json`` (subword vocabularies: the Hugging Face
  ``tokenizers`` JSON of each, as is).
* ``manifest.json``: the model's config, the special ids, which vocabulary file to read, how
  text is compared (``lowercased`` or ``cased``) and how long a page lets a translation run:
  ``max_new_tokens`` (the model's positions after <bos>) and ``length_margin``, tokens beyond
  the source's length (:func:`tx.decoding.output_limit`).

Batch and lengths are dynamic axes. The graphs are ``model.encode`` and ``model.decode`` themselves,
traced (their argument checks, which read token values into Python, do not run while the
exporter traces), without the key/value cache: every step re-reads the prefix, which for
sentences of a few dozen tokens costs little and keeps the graph to one input shape per step.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import os
import warnings
from pathlib import Path
from typing import Sequence

import torch
from torch import Tensor, nn

from .checks import check_finite_weights
from .decoding import LENGTH_MARGIN, output_limit
from .language_model import LanguageModel
from .model import Transformer
from .vision import VisionTransformer

__all__ = ["export", "ExportedModel", "FILES", "main", "export_language_model", "export_vision"]

FILES = ("encoder.onnx", "decoder.onnx", "manifest.json")  # plus vocab.json, or src_ and tgt_tokenizer.json
OPSET = 17


class _Encoder(nn.Module):
    """src [B, S] -> memory [B, S, D], enc_self_attn [L, B, H, S, S]."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, src: Tensor) -> tuple[Tensor, Tensor]:
        m = self.model
        memory = m.encode(src)  # [B, S, D]
        weights = torch.stack([layer.self_attn.attention_weights for layer in m.encoder.layers])  # [L, B, H, S, S]
        return memory, weights


class _Decoder(nn.Module):
    """memory [B, S, D], src [B, S], tgt [B, T] -> logits [B, T, V], dec_self_attn, cross_attn."""

    def __init__(self, model: Transformer):
        super().__init__()
        self.model = model

    def forward(self, memory: Tensor, src: Tensor, tgt: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        m = self.model
        logits = m.decode(memory, src, tgt)  # [B, T, V]
        layers = m.decoder.layers
        self_w = torch.stack([layer.self_attn.attention_weights for layer in layers])  # [L, B, H, T, T]
        cross_w = torch.stack([layer.cross_attn.attention_weights for layer in layers])  # [L, B, H, T, S]
        return logits, self_w, cross_w


def _onnx_bytes(module: nn.Module, args: tuple[Tensor, ...], inputs: list[str], outputs: list[str],
                dynamic: dict[str, dict[int, str]]) -> bytes:
    """One graph as ONNX bytes (TorchScript exporter, weights inside), with every doc string removed."""
    import onnx

    buffer = io.BytesIO()
    with warnings.catch_warnings():  # the tracer warns about the shape checks it cannot trace; they hold here
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, buffer, input_names=inputs, output_names=outputs,
                          dynamic_axes=dynamic, opset_version=OPSET, dynamo=False, do_constant_folding=True)
    proto = onnx.load_from_string(buffer.getvalue())
    proto.doc_string, proto.producer_name = "", "tx.export"
    for node in proto.graph.node:  # doc strings may carry source locations of this machine
        node.doc_string = ""
    proto.graph.doc_string = ""
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


def _graphs(model: Transformer) -> tuple[bytes, bytes]:
    """The encoder and decoder graphs of ``model`` as ONNX bytes, traced on a padded example."""
    cfg = model.config
    for m in model.attention_layers().values():
        m.record = True  # the explicit softmax path, which keeps its weights for the outputs
    try:
        src = torch.tensor([[5, 6, 7, cfg.pad_id]]).clamp(max=cfg.src_vocab_size - 1)  # [1, 4], with padding
        tgt = torch.tensor([[1, 5, 6]]).clamp(max=cfg.tgt_vocab_size - 1)  # [1, 3]
        with torch.no_grad():
            memory = _Encoder(model)(src)[0]
            encoder = _onnx_bytes(_Encoder(model), (src,), ["src"], ["memory", "enc_self_attn"],
                                  {"src": {0: "B", 1: "S"}, "memory": {0: "B", 1: "S"},
                                   "enc_self_attn": {1: "B", 3: "S", 4: "S"}})
            decoder = _onnx_bytes(_Decoder(model), (memory, src, tgt), ["memory", "src", "tgt"],
                                  ["logits", "dec_self_attn", "cross_attn"],
                                  {"memory": {0: "B", 1: "S"}, "src": {0: "B", 1: "S"}, "tgt": {0: "B", 1: "T"},
                                   "logits": {0: "B", 1: "T"}, "dec_self_attn": {1: "B", 3: "T", 4: "T"},
                                   "cross_attn": {1: "B", 3: "T", 4: "S"}})
    finally:
        for m in model.attention_layers().values():
            m.record, m.attention_weights = False, None
    return encoder, decoder


def _vocab_files(src_vocab, tgt_vocab) -> tuple[dict[str, str], str]:
    """{file name: JSON text} for the two vocabularies, and their kind ("word" or "bpe")."""
    src, tgt = src_vocab.to_dict(), tgt_vocab.to_dict()
    if src.get("kind") == tgt.get("kind") == "bpe":  # each language its own tokenizer, in the library's own JSON
        return {"src_tokenizer.json": json.dumps(src["tokenizer"], ensure_ascii=False),
                "tgt_tokenizer.json": json.dumps(tgt["tokenizer"], ensure_ascii=False)}, "bpe"
    if "itos" in src and "itos" in tgt:
        return {"vocab.json": json.dumps({"src_itos": src["itos"], "tgt_itos": tgt["itos"]}, ensure_ascii=False)}, "word"
    raise ValueError("tx.export needs two word vocabularies or two subword vocabularies, as python -m tx.train writes them.")


def _int8(graph: bytes, min_size: int = 16384) -> bytes:
    """The graph with its weight matrices stored as int8, one scale per row, about 4x smaller.

    A ``DequantizeLinear`` node turns each back into float32 when the session starts, so every
    runtime computes the same float arithmetic on the same rounded weights (onnxruntime's own
    dynamic quantisation also rounds activations, and its kernels differ between the browser and
    Python). Matrices under ``min_size`` numbers (biases, the positional table) stay float32.
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    proto = onnx.load_from_string(graph)
    kept, dequantize = [], []
    for init in proto.graph.initializer:
        w = numpy_helper.to_array(init)
        if w.dtype != np.float32 or w.ndim != 2 or w.size < min_size:
            kept.append(init)
            continue
        scale = np.maximum(np.abs(w).max(axis=1), 1e-12).astype(np.float32) / 127  # [rows]
        q = np.clip(np.rint(w / scale[:, None]), -127, 127).astype(np.int8)  # [rows, cols]
        name = init.name
        kept += [numpy_helper.from_array(q, f"{name}_int8"), numpy_helper.from_array(scale, f"{name}_scale"),
                 numpy_helper.from_array(np.zeros_like(scale, dtype=np.int8), f"{name}_zero")]
        dequantize.append(helper.make_node("DequantizeLinear", [f"{name}_int8", f"{name}_scale", f"{name}_zero"],
                                           [name], axis=0))
    del proto.graph.initializer[:]
    proto.graph.initializer.extend(kept)
    nodes = dequantize + list(proto.graph.node)  # the weights exist before any node reads them
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    onnx.checker.check_model(proto)
    return proto.SerializeToString()


QUANTIZE = (None, "int8")


def export(checkpoint: str | os.PathLike, outdir: str | os.PathLike, force: bool = False,
           quantize: str | None = None) -> list[Path]:
    """Write the checkpoint's encoder and decoder as ONNX, its vocabularies and a manifest; returns the paths.

    ``quantize="int8"`` stores the weight matrices as 8-bit integers, for a page's download
    budget: the graphs then compute close to tx, not within float tolerance.
    """
    from . import checkpoint as ckpt

    if quantize not in QUANTIZE:
        raise ValueError(f"quantize must be one of {QUANTIZE}, got {quantize!r}.")
    ck = ckpt.load(checkpoint)  # clear errors for a missing, damaged or foreign file
    if ck.src_vocab is None or ck.tgt_vocab is None:
        raise ValueError(f"{checkpoint} holds a model without its vocabularies; a page could not read or write "
                         "words with it. Export a checkpoint written by python -m tx.train.")
    outdir = Path(outdir)
    if outdir.exists() and not outdir.is_dir():
        raise NotADirectoryError(f"{outdir} is a file; give a folder for the exported model.")
    vocab_files, kind = _vocab_files(ck.src_vocab, ck.tgt_vocab)
    names = [*FILES, *vocab_files]
    clash = [n for n in names if (outdir / n).exists()]
    if clash and not force:
        raise FileExistsError(f"{outdir} already holds {', '.join(clash)}; choose an empty folder, or pass "
                              "--force (force=True) to overwrite them.")

    model = ck.model.cpu().eval()
    cfg = model.config
    encoder, decoder = _graphs(model)
    if quantize == "int8":
        encoder, decoder = _int8(encoder), _int8(decoder)
    manifest = {
        "format": "tx-onnx", "version": 1, "name": Path(checkpoint).stem, "config": cfg.to_dict(),
        "vocab_kind": kind, "vocab_files": sorted(vocab_files), "comparison": ck.tgt_vocab.comparison,
        "pad_id": ck.tgt_vocab.pad_id, "bos_id": ck.tgt_vocab.bos_id, "eos_id": ck.tgt_vocab.eos_id,
        "unk_id": ck.tgt_vocab.unk_id, "max_new_tokens": cfg.max_len - 1, "length_margin": LENGTH_MARGIN,
        "quantize": quantize,
        "files": {"encoder": "encoder.onnx", "decoder": "decoder.onnx"},
    }
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in (("encoder.onnx", encoder), ("decoder.onnx", decoder), *vocab_files.items(),
                          ("manifest.json", json.dumps(manifest, indent=1))):
        path = outdir / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        written.append(path)
    return written


class ExportedModel:
    """An exported folder run by onnxruntime: ``encode``, ``decode`` and greedy ``translate``, as tx does."""

    def __init__(self, outdir: str | os.PathLike):
        import onnxruntime as ort

        from .data import Vocab
        from .subwords import SubwordVocab

        outdir = Path(outdir)
        if not (outdir / "manifest.json").is_file():
            raise FileNotFoundError(f"{outdir} has no manifest.json; write the folder with python -m tx.export CHECKPOINT {outdir}.")
        self.manifest = json.loads((outdir / "manifest.json").read_text())
        if self.manifest["vocab_kind"] == "bpe":
            self.src_vocab, self.tgt_vocab = (SubwordVocab((outdir / f"{side}_tokenizer.json").read_text())
                                              for side in ("src", "tgt"))
        else:
            d = json.loads((outdir / "vocab.json").read_text())
            self.src_vocab, self.tgt_vocab = Vocab(d["src_itos"]), Vocab(d["tgt_itos"])
        options = ort.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1
        options.log_severity_level = 3  # errors only
        self.encoder = ort.InferenceSession(str(outdir / "encoder.onnx"), options, providers=["CPUExecutionProvider"])
        self.decoder = ort.InferenceSession(str(outdir / "decoder.onnx"), options, providers=["CPUExecutionProvider"])

    def encode(self, src):
        """src [B, S] int64 (numpy) -> memory [B, S, D], enc_self_attn [L, B, H, S, S]."""
        return self.encoder.run(None, {"src": src})

    def decode(self, memory, src, tgt):
        """logits [B, T, V], dec_self_attn [L, B, H, T, T], cross_attn [L, B, H, T, S]."""
        return self.decoder.run(None, {"memory": memory, "src": src, "tgt": tgt})

    def greedy(self, src, max_new_tokens: int | None = None):
        """Greedy decoding of src [B, S] -> tokens [B, L] (<bos> first, finished rows padded), as tx.greedy_decode."""
        import numpy as np

        m = self.manifest
        steps = m["max_new_tokens"] if max_new_tokens is None else max_new_tokens
        memory, _ = self.encode(src)
        ys = np.full((src.shape[0], 1), m["bos_id"], dtype=np.int64)  # [B, 1]
        done = np.zeros(src.shape[0], dtype=bool)
        for _ in range(steps):
            logits = self.decode(memory, src, ys)[0][:, -1]  # [B, V]
            token = np.where(done, m["pad_id"], logits.argmax(-1))  # [B]
            ys = np.concatenate([ys, token[:, None]], axis=1)  # [B, L+1]
            done |= token == m["eos_id"]
            if done.all():
                break
        return ys

    def translate(self, sentences: Sequence[str], length_margin: int | None = None) -> list[str]:
        """Greedy translations of ``sentences``, one string each, as tx.evaluate.translate gives them
        (with ``length_margin``, as it gives them with that margin: a page uses the manifest's)."""
        import numpy as np

        from .data import pad

        if isinstance(sentences, str):
            raise TypeError(f"sentences must be a list of strings, got the string {sentences!r:.60}: pass [{sentences!r:.60}].")
        out = []
        for s in sentences:  # one at a time: a page translates one sentence too
            ids = self.src_vocab.encode(s, add_bos=False)
            if len(ids) > self.manifest["config"]["max_len"]:
                raise ValueError(f"{s!r:.60} is {len(ids)} tokens long, <eos> included, but the model reads at most "
                                 f"{self.manifest['config']['max_len']}; split it into shorter sentences.")
            src = pad([ids], self.src_vocab.pad_id).numpy().astype(np.int64)
            steps = output_limit(len(ids), self.manifest["max_new_tokens"], length_margin)
            out.append(self.tgt_vocab.decode(self.greedy(src, steps)[0].tolist()))
        return out


class _LanguageModel(nn.Module):
    """tokens [B, T] -> logits [B, T, V], self_attn [L, B, H, T, T]: LanguageModel.forward without a cache."""

    def __init__(self, model: LanguageModel):
        super().__init__()
        self.model = model

    def forward(self, tokens: Tensor) -> tuple[Tensor, Tensor]:
        m = self.model
        logits = m(tokens)  # [B, T, V]
        weights = torch.stack([layer.self_attn.attention_weights for layer in m.layers.layers])  # [L, B, H, T, T]
        return logits, weights


class _Vision(nn.Module):
    """images [B, C, Hi, Wi] -> logits [B, Y], cls_attn [L, B, H, N]: [CLS]'s attention over the patches."""

    def __init__(self, model: VisionTransformer):
        super().__init__()
        self.model = model

    def forward(self, images: Tensor) -> tuple[Tensor, Tensor]:
        logits = self.model(images)  # [B, Y]
        rows = [layer.self_attn.attention_weights[:, :, 0, 1:] for layer in self.model.encoder.layers]  # [B, H, N] each
        return logits, torch.stack(rows)  # [L, B, H, N]


def _recorded(module: nn.Module, attention: list[nn.Module], args: tuple[Tensor, ...], inputs: list[str],
              outputs: list[str], dynamic: dict[str, dict[int, str]]) -> bytes:
    """``_onnx_bytes`` of ``module`` with the attention modules keeping their weights while it is traced."""
    for m in attention:
        m.record = True
    try:
        with torch.no_grad():
            return _onnx_bytes(module, args, inputs, outputs, dynamic)
    finally:
        for m in attention:
            m.record, m.attention_weights = False, None


def _write(outdir: Path, files: dict[str, bytes | str]) -> list[Path]:
    """Write {name: content} into outdir (created, files overwritten); returns the paths."""
    outdir.mkdir(parents=True, exist_ok=True)
    written = []
    for name, content in files.items():
        path = outdir / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        written.append(path)
    return written


def export_language_model(model: LanguageModel, vocab, outdir: str | os.PathLike, name: str = "lm") -> list[Path]:
    """Write an in-memory LanguageModel as ``model.onnx`` (tokens [B, T] -> logits, self_attn), ``vocab.json`` and a manifest.

    The graph runs the whole sequence at every step (no cache); ``vocab`` is the word
    vocabulary (tx.data.Vocab) it was trained with. Existing files of the same names are replaced.
    """
    if not isinstance(model, LanguageModel):
        raise TypeError(f"model must be a tx.LanguageModel, got {type(model).__name__}.")
    if len(getattr(vocab, "itos", ())) != model.config.vocab_size:
        raise ValueError(f"vocab must be the model's word vocabulary (tx.data.Vocab of {model.config.vocab_size} "
                         f"tokens), got {type(vocab).__name__} of {len(vocab) if hasattr(vocab, '__len__') else '?'}.")
    check_finite_weights(model, "the model")  # a page would show its nonsense without a word
    was_training = model.training
    model.cpu().eval()
    try:
        tokens = torch.tensor([[1, 5, 6]]).clamp(max=model.config.vocab_size - 1)  # [1, 3]
        graph = _recorded(_LanguageModel(model), [layer.self_attn for layer in model.layers.layers], (tokens,),
                          ["tokens"], ["logits", "self_attn"],
                          {"tokens": {0: "B", 1: "T"}, "logits": {0: "B", 1: "T"}, "self_attn": {1: "B", 3: "T", 4: "T"}})
    finally:
        model.train(was_training)
    manifest = {"format": "tx-onnx", "version": 1, "kind": "generate", "name": name, "config": model.config.to_dict(),
                "vocab_kind": "word", "pad_id": vocab.pad_id, "bos_id": vocab.bos_id, "eos_id": vocab.eos_id,
                "unk_id": vocab.unk_id, "files": {"model": "model.onnx"}}
    return _write(Path(outdir), {"model.onnx": graph, "vocab.json": json.dumps({"itos": vocab.itos}, ensure_ascii=False),
                                 "manifest.json": json.dumps(manifest, indent=1)})


def export_vision(model: VisionTransformer, outdir: str | os.PathLike, name: str = "vit") -> list[Path]:
    """Write an in-memory VisionTransformer as ``model.onnx`` (images [B, C, Hi, Wi] -> logits [B, Y], cls_attn [L, B, H, N]) and a manifest."""
    if not isinstance(model, VisionTransformer):
        raise TypeError(f"model must be a tx.vision.VisionTransformer, got {type(model).__name__}.")
    check_finite_weights(model, "the model")
    c = model.config
    was_training = model.training
    model.cpu().eval()
    try:
        images = torch.zeros(1, c.channels, c.image_size, c.image_size)  # [1, C, Hi, Wi]
        graph = _recorded(_Vision(model), [layer.self_attn for layer in model.encoder.layers], (images,),
                          ["images"], ["logits", "cls_attn"],
                          {"images": {0: "B"}, "logits": {0: "B"}, "cls_attn": {1: "B"}})
    finally:
        model.train(was_training)
    manifest = {"format": "tx-onnx", "version": 1, "kind": "classify", "name": name, "config": dataclasses.asdict(c),
                "files": {"model": "model.onnx"}}
    return _write(Path(outdir), {"model.onnx": graph, "manifest.json": json.dumps(manifest, indent=1)})


def main(argv: Sequence[str] | None = None) -> list[Path]:
    """The command line: export CHECKPOINT into OUTDIR; prints the files written."""
    parser = argparse.ArgumentParser(prog="python -m tx.export", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=Path, help="a .safetensors checkpoint written by python -m tx.train")
    parser.add_argument("outdir", type=Path, help="the folder to write encoder.onnx, decoder.onnx, ... into")
    parser.add_argument("--force", action="store_true", help="overwrite files of an earlier export in OUTDIR")
    parser.add_argument("--quantize", choices=["int8"], help="store weight matrices as int8 (about 4x smaller files)")
    args = parser.parse_args(argv)
    try:
        written = export(args.checkpoint, args.outdir, args.force, args.quantize)
    except (ValueError, TypeError, OSError) as e:
        parser.error(str(e))
    for path in written:
        print(f"{path} ({path.stat().st_size / 1e6:.2f} MB)")
    return written


if __name__ == "__main__":
    main()
