"""numpy versions of torch's random ops, which the host program runs (the op registry's
category `RANDOM`, `dialects/torch_ops.py`; docs/conventions.md, "Random ops").

Each draws from the distribution of the torch op of the same name, from numpy's
`Generator` (PCG64) rather than torch's stream: the law is torch's, the bits are not. The
cases whose answer is fixed are exact: `bernoulli` of 0 is 0 and of 1 is 1 (`u < p` with
`u` in [0, 1)), `rand` lies in [0, 1) in every dtype, `multinomial` never picks a category
of probability 0 while one of positive probability is left, `randint(k, k + 1)` is k,
`uniform(a, a)` is a, `normal(m, 0)` is m. The arguments torch refuses, it refuses here
(a `ValueError` with torch's reason). Results are arrays, never numpy scalars (a 0-d draw too).

The generator is this module's own, seeded from the operating system's entropy when the
module is first imported; `seed(n)` starts it again from `n` (reproducible draws in one
process). numpy's generators hold a lock, so concurrent host programs draw safely.
"""

from __future__ import annotations

import numpy as np

_GENERATOR = np.random.default_rng()
_NATIVE_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def seed(value: int | None = None) -> None:
    """Start the host programs' generator again from `value` (None: fresh entropy)."""
    global _GENERATOR
    _GENERATOR = np.random.default_rng(value)


def _shape(size) -> tuple[int, ...]:
    return tuple(int(s) for s in size)


def _check(ok, op: str, reason: str) -> None:
    if not np.all(ok):
        raise ValueError(f"{op}: {reason} (torch.{op} raises too)")


def rand(size, dtype=np.float32) -> np.ndarray:
    """`torch.rand`: uniform on [0, 1), in `dtype` (never 1 after rounding to a narrow float)."""
    dtype = np.dtype(dtype)
    if dtype in _NATIVE_FLOATS:
        return np.asarray(_GENERATOR.random(_shape(size), dtype=dtype))
    u = _GENERATOR.random(_shape(size), dtype=np.float32).astype(dtype)
    below_one = np.nextafter(np.ones((), dtype), np.zeros((), dtype))
    return np.asarray(np.minimum(u, below_one))


def randn(size, dtype=np.float32) -> np.ndarray:
    """`torch.randn`: standard normal."""
    dtype = np.dtype(dtype)
    native = dtype if dtype in _NATIVE_FLOATS else np.dtype(np.float32)
    return np.asarray(_GENERATOR.standard_normal(_shape(size), dtype=native), dtype=dtype)


def randint(low: int, high: int, size, dtype=np.int64) -> np.ndarray:
    """`torch.randint(low, high, size)`: integers uniform on [low, high)."""
    _check(low < high, "randint", f"'from' must be less than 'to', got from={low} >= to={high}")
    return np.asarray(_GENERATOR.integers(low, high, _shape(size), dtype=np.int64), dtype=dtype)


def bernoulli(p, shape=None, dtype=None) -> np.ndarray:
    """`torch.bernoulli(p)` (`shape`: p broadcast to it, as `x.bernoulli(p)`): 1 with
    probability p, else 0, in `dtype` (p's own by default)."""
    p = np.asarray(p)
    _check((p >= 0) & (p <= 1), "bernoulli", "probabilities must lie in [0, 1]")
    dtype = p.dtype if dtype is None else np.dtype(dtype)
    if shape is not None:
        p = np.broadcast_to(p, tuple(shape))
    return np.asarray(_GENERATOR.random(p.shape) < p, dtype=dtype)


def uniform(x, low: float = 0.0, high: float = 1.0) -> np.ndarray:
    """`x.uniform_(low, high)` as a new tensor of x's shape and dtype."""
    _check(low <= high, "uniform", f"'from' must be at most 'to', got from={low} > to={high}")
    dtype = np.asarray(x).dtype
    return np.asarray(rand(np.shape(x), dtype) * (high - low) + low, dtype=dtype)


def normal(x, mean: float = 0.0, std: float = 1.0) -> np.ndarray:
    """`x.normal_(mean, std)` as a new tensor of x's shape and dtype."""
    _check(std >= 0, "normal", f"std must be >= 0, got {std}")
    dtype = np.asarray(x).dtype
    return np.asarray(randn(np.shape(x), dtype) * std + mean, dtype=dtype)


def exponential(x, lambd: float = 1.0) -> np.ndarray:
    """`x.exponential_(lambd)` as a new tensor of x's shape and dtype."""
    _check(lambd > 0, "exponential", f"lambda must be > 0, got {lambd}")
    dtype = np.asarray(x).dtype
    native = dtype if dtype in _NATIVE_FLOATS else np.dtype(np.float32)
    return np.asarray(_GENERATOR.standard_exponential(np.shape(x), dtype=native) / lambd, dtype=dtype)


def multinomial(probs, num_samples: int, replacement: bool = False) -> np.ndarray:
    """`torch.multinomial(probs, num_samples, replacement)`: int64 indices per row of the
    (unnormalized) weights. Without replacement, each draw is from the weights of the
    categories not yet drawn (the law of torch's own sampling); once no category of positive
    weight is left, torch picks the rest in the order of its `topk`'s ties, which it does not
    specify: here they are drawn uniformly from the remaining categories."""
    weights = np.asarray(probs, dtype=np.float64)
    _check(weights.ndim in (1, 2), "multinomial", "prob_dist must be 1 or 2 dim")
    _check(np.isfinite(weights) & (weights >= 0), "multinomial", "probability tensor contains inf, nan or an element < 0")
    rows = weights.reshape(-1, weights.shape[-1]).copy()
    _check(rows.sum(axis=1) > 0, "multinomial", "invalid multinomial distribution (sum of probabilities <= 0)")
    _check(num_samples > 0, "multinomial", "cannot sample n_sample <= 0 samples")
    _check(replacement or num_samples <= rows.shape[1], "multinomial",
           "cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    picks = np.empty((rows.shape[0], num_samples), dtype=np.int64)
    taken = np.zeros(rows.shape, dtype=bool)
    for k in range(num_samples):
        weights_left = rows if replacement else np.where(taken, 0.0, rows)
        if not replacement:  # (past the positive weights: uniform over the categories left)
            exhausted = weights_left.sum(axis=1) <= 0
            weights_left[exhausted] = ~taken[exhausted]
        picks[:, k] = _categorical(weights_left)
        taken[np.arange(rows.shape[0]), picks[:, k]] = True
    return picks.reshape(*weights.shape[:-1], num_samples)


def _categorical(weights: np.ndarray) -> np.ndarray:
    """One index per row, with probability proportional to the row's weights. A category
    of weight 0 is never picked: the index is the number of cumulative sums at or below a
    uniform point of the total, capped at the last positive weight (the point can round up
    to the total)."""
    cumulative = np.cumsum(weights, axis=1)
    point = _GENERATOR.random(len(weights)) * cumulative[:, -1]
    picked = (cumulative <= point[:, None]).sum(axis=1)
    last_positive = weights.shape[1] - 1 - np.argmax(weights[:, ::-1] > 0, axis=1)
    return np.minimum(picked, last_positive)
