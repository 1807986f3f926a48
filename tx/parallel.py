"""Mixed precision and data parallelism: the pieces of PyTorch's engine that tx.train.fit runs with.

Axes: B global batch (sentence pairs a step, over all processes), Bp one process's rows,
S source length, T target length, W world size (processes), r rank (this process, 0..W-1).

Nothing here replaces PyTorch's engine: ``torch.autocast`` and ``torch.amp.GradScaler`` do
the mixed precision, ``torch.distributed`` and ``DistributedDataParallel`` the parallelism.
This module only says how ``tx.train.fit`` uses them: which dtype, which backend, which
rows of a global batch a process trains on, and how its loss is weighted so that W
processes compute exactly the gradient one process would on the whole batch.

Chapter A1 meets these as ``tx.scale``, which re-exports every name here and adds the runs
of ``fit`` in several processes; this module sits below ``tx.train`` so that training can
use it without importing the module that imports training.
"""

from __future__ import annotations

import os
import socket
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Iterable, Iterator, Sequence

import torch
import torch.distributed as dist
from torch import Tensor, nn

from .data import Batch

__all__ = [
    "PRECISIONS", "check_precision", "autocast", "grad_scaler", "World", "world", "backend",
    "init_from_env", "finish", "wrap", "shard", "usable_batches", "agree", "broadcast_object",
    "free_port", "spawn",
]

PRECISIONS: dict[str, torch.dtype | None] = {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}


def check_precision(precision: str, device: torch.device | str) -> None:
    """A clear error unless ``precision`` is one of PRECISIONS and runs on ``device`` (fp16 needs CUDA)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {', '.join(PRECISIONS)}, got {precision!r}.")
    if precision == "fp16" and torch.device(device).type != "cuda":
        raise ValueError("precision 'fp16' needs a CUDA GPU (its gradient scaler guards fp16's narrow range); "
                         f"this run is on {torch.device(device).type}: use 'bf16' or 'fp32' there.")


def autocast(precision: str, device: torch.device | str) -> ContextManager[Any]:
    """The block runs its matrix multiplies in ``precision`` (weights stay fp32); fp32 changes nothing."""
    dtype = PRECISIONS[precision]
    return torch.autocast(torch.device(device).type, dtype=dtype, enabled=dtype is not None)


def grad_scaler(precision: str, device: torch.device | str) -> torch.amp.GradScaler:
    """A GradScaler that scales fp16 losses (so small gradients do not flush to zero); a no-op otherwise."""
    return torch.amp.GradScaler(torch.device(device).type, enabled=precision == "fp16")


@dataclass(frozen=True)
class World:
    """This process's place among the processes of a run: rank r of size W (0 of 1 without torchrun)."""

    rank: int = 0  #: this process's index, 0 to size - 1
    size: int = 1  #: how many processes share the run


def world() -> World:
    """The current process group's rank and size, or World(0, 1) when there is none."""
    if dist.is_available() and dist.is_initialized():
        return World(dist.get_rank(), dist.get_world_size())
    return World()


def backend(device: torch.device | str) -> str:
    """nccl between GPUs, gloo between CPUs."""
    return "nccl" if torch.device(device).type == "cuda" else "gloo"


def init_from_env() -> World:
    """Join the process group torchrun describes (RANK, WORLD_SIZE, MASTER_ADDR, ...); World(0, 1) without it."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1 or world().size > 1:
        return world()
    if torch.cuda.is_available():  # one GPU per process: LOCAL_RANK picks it on this machine
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend("cuda" if torch.cuda.is_available() else "cpu"))
    return world()


def finish() -> None:
    """Leave the process group, if this process is in one."""
    if dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


def wrap(model: nn.Module) -> nn.Module:
    """``model`` inside DistributedDataParallel when there are several processes, else ``model`` itself."""
    if world().size == 1:
        return model
    dev = next(model.parameters()).device
    return nn.parallel.DistributedDataParallel(model, device_ids=[dev.index] if dev.type == "cuda" else None)


def shard(batch: Batch, rank: int, world_size: int) -> Batch:
    """Process ``rank``'s rows [Bp] of a global batch [B]: W contiguous slices, sizes differing by one at most."""
    if not 0 <= rank < world_size:
        raise ValueError(f"rank must be in 0..{world_size - 1}, got {rank}.")
    if batch.src.size(0) < world_size:
        raise ValueError(f"a batch of {batch.src.size(0)} rows cannot give each of {world_size} processes a row.")
    src = torch.tensor_split(batch.src, world_size)[rank]  # [Bp, S]
    tgt = torch.tensor_split(batch.tgt, world_size)[rank]  # [Bp, T]
    return Batch(src, tgt)


def usable_batches(batches: Iterable[Batch], world_size: int) -> Iterator[Batch]:
    """The batches with a row for every process: an epoch's last, short batch is skipped if it has fewer than W rows."""
    return (b for b in batches if b.src.size(0) >= world_size)


def agree(loss: Tensor, stop: bool) -> tuple[float, bool]:
    """The global batch's mean loss, and whether any process wants to stop, the same in every process.

    ``loss`` is this process's share of the mean (see ``tx.train.batch_loss``): the shares
    sum to W times the mean. One all-reduce carries both, so no process goes on alone.
    """
    if world().size == 1:
        return loss.item(), stop
    both = torch.stack([loss.detach().float(), torch.tensor(float(stop), device=loss.device)])
    dist.all_reduce(both)  # sum over processes
    return both[0].item() / world().size, both[1].item() > 0


def broadcast_object(obj: Any) -> Any:
    """Rank 0's ``obj`` in every process (e.g. vocabularies learned once); ``obj`` itself without a group."""
    if world().size == 1:
        return obj
    box = [obj if world().rank == 0 else None]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def free_port() -> int:
    """A TCP port nothing listens on now, for a process group's rendezvous on this machine."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world_size: int, port: int, queue: Any, fn: Callable[..., Any], args: Sequence[Any]) -> None:
    """One spawned process: join a gloo group on this machine, run ``fn(*args)``, send (rank, result or error)."""
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(world_size))
    torch.set_num_threads(1)  # W processes share the cores
    try:
        dist.init_process_group("gloo", rank=rank, world_size=world_size)
        queue.put((rank, True, fn(*args)))
    except BaseException:  # noqa: BLE001 - the parent reports it
        queue.put((rank, False, traceback.format_exc()))
    finally:
        finish()


def spawn(fn: Callable[..., Any], world_size: int, *args: Any, timeout: float = 120.0) -> list[Any]:
    """Run ``fn(*args)`` in ``world_size`` new CPU processes joined by gloo; their results, by rank.

    ``fn`` must be importable (defined in a module, not a notebook) and its result picklable.
    An error in any process, or ``timeout`` seconds without all results, stops them all and raises.
    """
    import queue as queues

    ctx = torch.multiprocessing.get_context("spawn")
    results = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, world_size, port, results, fn, args), daemon=True)
             for r in range(world_size)]
    for p in procs:
        p.start()
    out: dict[int, Any] = {}
    deadline = time.monotonic() + timeout
    try:
        while len(out) < world_size:
            try:
                rank, ok, value = results.get(timeout=1.0)
            except queues.Empty:
                dead = [r for r, p in enumerate(procs) if r not in out and p.exitcode not in (None, 0)]
                if dead:
                    raise RuntimeError(f"process {dead[0]} of {world_size} exited with code {procs[dead[0]].exitcode} "
                                       "before sending a result (is the caller's script guarded by "
                                       "`if __name__ == \"__main__\":`?)") from None
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{world_size - len(out)} of {world_size} processes sent nothing in "
                                       f"{timeout:g} s; they were stopped.") from None
                continue
            if not ok:
                raise RuntimeError(f"process {rank} of {world_size} failed:\n{value}")
            out[rank] = value
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
                p.join()
    return [out[r] for r in range(world_size)]
