"""brisk from Python: int4 (AWQ) linear layers on brisk's kernels.

    import brisk
    layer = brisk.Linear(4096, 11008, bias=False, quant_method="awq", w_bit=4, group_size=128)
    layer.qweight, layer.qzeros, layer.scales = qweight, qzeros, scales  # AutoAWQ's tensors
    layer.post_init()                                                   # repacks them for brisk
    y = layer(x)                                                        # x @ dequant(W)

Tensors are numpy arrays or any DLPack tensor, on the host or a CUDA GPU, used in place. The
result is of x's kind, dtype and device: a numpy array for numpy input, a torch tensor (allocated
by torch, so no copy) for a torch tensor, and for other array-API tensors one from x's own
namespace. Host tensors run brisk's CPU reference; CUDA tensors run its CUDA kernels (when brisk
was built with CUDA) on PyTorch's current stream for torch tensors, else on the legacy default
stream (DLPack's default). torch is never imported here: a torch tensor means it already is.
"""

import sys

import numpy as np

from brisk import _brisk

__all__ = ["Linear", "has_cuda"]

# Whether this build of brisk runs CUDA tensors.
has_cuda = _brisk.has_cuda

_WEIGHTS = ("qweight", "qzeros", "scales", "bias")


def _torch_of(x):
    """The torch module when x is a torch tensor, else None (torch is not imported for it)."""
    torch = sys.modules.get("torch")
    return torch if torch is not None and isinstance(x, torch.Tensor) else None


def _stream_of(x):
    """The CUDA stream to run on for x's device: PyTorch's current stream for torch CUDA tensors,
    else 0 (the legacy default stream; unused for host tensors)."""
    torch = _torch_of(x)
    if torch is not None and x.is_cuda:
        return torch.cuda.current_stream(x.device).cuda_stream
    return 0


def _empty_output(x, out_features):
    """An uninitialized result of x's kind, dtype and device, [..., out_features] for x [..., K]."""
    torch = _torch_of(x)
    if torch is not None:
        empty = lambda shape: torch.empty(shape, dtype=x.dtype, device=x.device)
    elif isinstance(x, np.ndarray):
        empty = lambda shape: np.empty(shape, dtype=x.dtype)
    elif hasattr(x, "__dlpack__") and hasattr(x, "__array_namespace__"):
        empty = lambda shape: x.__array_namespace__().empty(shape, dtype=x.dtype, device=x.device)
    else:
        raise TypeError(f"brisk.Linear: x is a {type(x).__module__}.{type(x).__qualname__}; it takes "
                        "numpy arrays, torch tensors and array-API tensors with __dlpack__")
    shape = tuple(x.shape)
    if not shape:
        raise ValueError("brisk.Linear: x is a scalar but needs a last dimension of in_features")
    return empty(shape[:-1] + (out_features,))


def _check_layer(in_features, out_features, quant_method, w_bit, group_size):
    """The layer's parameters, all checked here; returns the group size (-1: in_features)."""
    for name, value in (("in_features", in_features), ("out_features", out_features),
                        ("w_bit", w_bit), ("group_size", group_size)):
        if not isinstance(value, int) or isinstance(value, bool):
            raise TypeError(f"brisk.Linear: {name} is {value!r} but must be an int")
    if quant_method != "awq":
        raise ValueError(f"brisk.Linear: quant_method is {quant_method!r} but only 'awq' is supported")
    if w_bit != 4:
        raise ValueError(f"brisk.Linear: w_bit is {w_bit} but only 4-bit weights are supported")
    if in_features <= 0 or in_features % 8:
        raise ValueError(f"brisk.Linear: in_features is {in_features} but must be a positive multiple of 8")
    if out_features <= 0 or out_features % 8:
        raise ValueError(f"brisk.Linear: out_features is {out_features} but must be a positive multiple of 8 "
                         "(AutoAWQ packs 8 output features per int32)")
    group = in_features if group_size == -1 else group_size
    if group <= 0 or in_features % group:
        raise ValueError(f"brisk.Linear: group_size is {group_size} but must divide in_features "
                         f"({in_features}), or be -1 (one group per row)")
    return group


class Linear:
    """An int4 AWQ linear layer: y = x @ dequant(W) (+ bias), W [in_features, out_features].

    qweight, qzeros, scales (and bias when bias=True) take AutoAWQ's "gemm" tensors:
      qweight int32 [in_features, out_features / 8]
      qzeros  int32 [in_features / group_size, out_features / 8]
      scales  float16 (or bfloat16, float32) [in_features / group_size, out_features]
      bias    float [out_features]
    They start as numpy zeros of those shapes. post_init() checks them and repacks them into
    brisk's layout on the device qweight is on (call it again after changing any of them);
    calling the layer multiplies x [..., in_features] into [..., out_features] of x's dtype.
    """

    def __init__(self, in_features, out_features, bias=False, quant_method="awq", w_bit=4, group_size=128):
        group = _check_layer(in_features, out_features, quant_method, w_bit, group_size)
        object.__setattr__(self, "_packed", None)
        object.__setattr__(self, "_has_bias", bool(bias))
        self.in_features = in_features
        self.out_features = out_features
        self.w_bit = w_bit
        self.group_size = group
        num_groups = in_features // group
        self.qweight = np.zeros((in_features, out_features // 8), dtype=np.int32)
        self.qzeros = np.zeros((num_groups, out_features // 8), dtype=np.int32)
        self.scales = np.zeros((num_groups, out_features), dtype=np.float16)
        self.bias = np.zeros(out_features, dtype=np.float16) if bias else None

    def __setattr__(self, name, value):
        if name in ("in_features", "out_features", "w_bit", "group_size") and hasattr(self, name):
            raise AttributeError(f"brisk.Linear: {name} is fixed at construction")
        if name == "bias" and value is not None and not self._has_bias:
            raise ValueError("brisk.Linear: this layer was built with bias=False; build it with bias=True")
        if name in _WEIGHTS:
            object.__setattr__(self, "_packed", None)  # the repacked weights are stale now
        object.__setattr__(self, name, value)

    def post_init(self):
        """Repacks qweight, qzeros, scales (and bias) into brisk's layout; returns self."""
        self._packed = None
        packed = _brisk.PackedLinear(self.qweight, self.qzeros, self.scales, self.bias, self.in_features,
                                     self.out_features, self.group_size, _stream_of(self.qweight))
        object.__setattr__(self, "_packed", packed)
        return self

    @property
    def device(self):
        """Where the repacked weights are ('cpu' or 'cuda:N'), None before post_init()."""
        return None if self._packed is None else self._packed.device

    def dequantize(self):
        """dequant(W) as a float32 numpy array [out_features, in_features] (W transposed)."""
        return self._checked_packed().dequantize()

    def forward(self, x, out=None):
        """x @ dequant(W) (+ bias) for x [..., in_features]; written into `out` when given (of
        x's kind, dtype and device, shape [..., out_features]), else into a new tensor."""
        packed = self._checked_packed()
        if out is None:
            out = _empty_output(x, self.out_features)
        packed.forward(x, out, _stream_of(x))
        return out

    __call__ = forward

    def _checked_packed(self):
        if self._packed is None:
            raise RuntimeError("brisk.Linear: call post_init() after setting qweight, qzeros and scales "
                               "(and again after changing them)")
        return self._packed

    def __repr__(self):
        return (f"brisk.Linear(in_features={self.in_features}, out_features={self.out_features}, "
                f"bias={self._has_bias}, quant_method='awq', w_bit={self.w_bit}, "
                f"group_size={self.group_size}, device={self.device!r})")
