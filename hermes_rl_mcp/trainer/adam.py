"""Adam over a dict of NumPy arrays, with a global gradient-norm clip, decoupled weight decay and,
for named parameters, one step-size normaliser shared by all of a parameter's entries."""

from __future__ import annotations

import numpy as np

Params = dict[str, np.ndarray]


class Adam:
    def __init__(
        self,
        params: Params,
        *,
        learning_rate: float,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
        max_grad_norm: float | None = None,
        weight_decay: dict[str, float] | None = None,
        shared_scale: frozenset[str] = frozenset(),
    ) -> None:
        """``weight_decay`` names the parameters that decay and each one's rate: decoupled, as in
        AdamW, each step multiplies the parameter by ``1 - learning_rate * rate``.
        ``shared_scale`` names parameters whose entries share one normaliser, the largest of their
        second moments: the entry with the strongest gradient moves by the learning rate and the
        others in proportion to their gradients, not each by the learning rate however faint."""
        self.learning_rate = learning_rate
        self.weight_decay = {k: r for k, r in (weight_decay or {}).items() if r > 0}
        self.shared_scale = shared_scale
        self.beta1, self.beta2 = betas
        self.eps = eps
        self.max_grad_norm = max_grad_norm
        self.steps = 0
        self.m: Params = {k: np.zeros_like(v) for k, v in params.items()}
        self.v: Params = {k: np.zeros_like(v) for k, v in params.items()}

    def step(self, params: Params, grads: Params, step_scales: Params | None = None) -> float:
        """Update ``params`` in place; returns the gradient norm before clipping. ``step_scales``
        may give some parameters a share of the step, element by element."""
        norm = float(np.sqrt(sum(float(np.sum(np.square(g, dtype=np.float64))) for g in grads.values())))
        scale = 1.0
        if self.max_grad_norm is not None and norm > self.max_grad_norm:
            scale = self.max_grad_norm / (norm + 1e-12)
        self.steps += 1
        c1 = 1.0 - self.beta1**self.steps
        c2 = 1.0 - self.beta2**self.steps
        for key, grad in grads.items():
            g = grad * scale
            m, v = self.m[key], self.v[key]
            m *= self.beta1
            m += (1.0 - self.beta1) * g
            v *= self.beta2
            v += (1.0 - self.beta2) * np.square(g)
            second = v.max(initial=0.0) if key in self.shared_scale else v
            update = (self.learning_rate / c1) * m / (np.sqrt(second / c2) + self.eps)
            if step_scales is not None and key in step_scales:
                update *= step_scales[key]
            params[key] -= update
        for key, rate in self.weight_decay.items():
            params[key] *= max(0.0, 1.0 - self.learning_rate * rate)
        return norm

    def state(self) -> dict[str, np.ndarray]:
        """Moments and step count as flat arrays, for checkpoints."""
        out = {f"adam_m/{k}": a for k, a in self.m.items()}
        out.update({f"adam_v/{k}": a for k, a in self.v.items()})
        out["adam_steps"] = np.asarray(self.steps)
        return out

    def load_state(self, state: dict[str, np.ndarray]) -> None:
        for key in self.m:
            self.m[key][...] = state[f"adam_m/{key}"]
            self.v[key][...] = state[f"adam_v/{key}"]
        self.steps = int(state["adam_steps"])
